package native

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/internal/testenv"
)

// shardBenchEnv, set to 1, runs TestShardThroughputCluster: a measurement
// (minutes of CPU), not a check, so CI leaves it out.
const shardBenchEnv = "REBOUND_SHARD_BENCH"

// TestShardThroughputCluster measures a queue of 1 shard and one of 3 on a
// three-master Cluster under the same load, rounds taking turns: jobs
// enqueued up front, each failing once and succeeding on its retry 50ms
// later (as bench/'s throughput benchmark runs them), one worker of 100
// handlers. It logs jobs/s end to end and each master's Redis CPU (INFO
// cpu, user + sys, before and after) per job and per second.
func TestShardThroughputCluster(t *testing.T) {
	if os.Getenv(shardBenchEnv) != "1" {
		t.Skipf("a measurement: set %s=1 to run it", shardBenchEnv)
	}
	jobs := 20000
	if v, err := strconv.Atoi(os.Getenv("REBOUND_SHARD_BENCH_JOBS")); err == nil && v > 0 {
		jobs = v
	}
	cc := testenv.Cluster(t)
	for round := range 2 {
		for _, n := range []int{1, 3} {
			r := shardRound(t, cc, fmt.Sprintf("bench-r%d-n%d", round, n), n, jobs)
			t.Logf("round %d, %d shard(s): %s", round, n, r)
		}
	}
}

// shardRound runs one round on a fresh queue of n shards and describes it.
func shardRound(t *testing.T, cc *redis.ClusterClient, name string, n, jobs int) string {
	ctx := context.Background()
	q, err := NewShardedQueue(ctx, cc, name, n, WithPrefix("rbb"))
	if err != nil {
		t.Fatal(err)
	}
	params := make([]EnqueueParams, jobs)
	for i := range params {
		params[i].Payload = []byte("x")
	}
	if _, err := q.EnqueueMany(ctx, params); err != nil {
		t.Fatal(err)
	}
	var ok atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	w, err := NewWorker(q, fixedRule(t, 50*time.Millisecond, 2), func(_ context.Context, j *Job) error {
		if j.Attempt == 1 {
			return errors.New("dependency down")
		}
		if ok.Add(1) == int64(jobs) {
			once.Do(func() { close(done) })
		}
		return nil
	}, WithConcurrency(100), WithErrorHandler(func(err error) { t.Logf("worker: %v", err) }))
	if err != nil {
		t.Fatal(err)
	}
	cpu0 := masterCPU(t, cc)
	start := time.Now()
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("%d of %d jobs done after 5 minutes", ok.Load(), jobs)
	}
	took := time.Since(start)
	cpu1 := masterCPU(t, cc)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = w.Shutdown(sctx)
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f jobs/s (%d jobs in %s)", float64(jobs)/took.Seconds(), jobs, took.Round(time.Millisecond))
	var addrs []string
	for a := range cpu1 {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		used := cpu1[a] - cpu0[a]
		fmt.Fprintf(&b, "; %s: %.1f us/job, %.0f ms CPU/s", a, used*1e6/float64(jobs), used*1e3/took.Seconds())
	}
	return b.String()
}

// masterCPU reads each master's used_cpu_user + used_cpu_sys, in seconds.
func masterCPU(t *testing.T, cc *redis.ClusterClient) map[string]float64 {
	var mu sync.Mutex
	out := map[string]float64{}
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "cpu").Result()
		if err != nil {
			return err
		}
		sum := 0.0
		for _, line := range strings.Split(info, "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			if k == "used_cpu_user" || k == "used_cpu_sys" {
				f, _ := strconv.ParseFloat(v, 64)
				sum += f
			}
		}
		mu.Lock()
		out[c.Options().Addr] = sum
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestShardIdleCluster measures what an idle worker costs each master: a
// worker on an empty queue of 1 shard, then of 3, for 5s each after a
// second to settle; it logs each master's commands per second (INFO
// stats) and Redis CPU per second.
func TestShardIdleCluster(t *testing.T) {
	if os.Getenv(shardBenchEnv) != "1" {
		t.Skipf("a measurement: set %s=1 to run it", shardBenchEnv)
	}
	cc := testenv.Cluster(t)
	ctx := context.Background()
	for _, n := range []int{1, 3} {
		q, err := NewShardedQueue(ctx, cc, fmt.Sprintf("idle-n%d", n), n, WithPrefix("rbi"))
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewWorker(q, fixedRule(t, time.Second, 2), func(context.Context, *Job) error { return nil }, WithConcurrency(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		cmd0, cpu0 := masterStat(t, cc, "total_commands_processed"), masterCPU(t, cc)
		const span = 5 * time.Second
		time.Sleep(span)
		cmd1, cpu1 := masterStat(t, cc, "total_commands_processed"), masterCPU(t, cc)
		_ = w.Shutdown(ctx)
		var b strings.Builder
		for _, a := range sortedKeys(cpu1) {
			fmt.Fprintf(&b, "; %s: %.1f commands/s, %.2f ms CPU/s", a, (cmd1[a]-cmd0[a])/span.Seconds(), (cpu1[a]-cpu0[a])*1e3/span.Seconds())
		}
		t.Logf("idle worker, %d shard(s) (the masters' own INFO calls included)%s", n, b.String())
	}
}

// TestShardOrderCluster measures how far start times stray across shards
// for jobs due at the same time: each round enqueues 100 jobs per shard of
// a queue of 3 in one EnqueueMany with a 300ms delay (the shards' calls go
// at once, so their fire times are within the calls' spread), a worker of
// 100 handlers runs them, and the round's figure is the spread (largest
// less smallest) of the shards' first start times, and of their median
// start times.
func TestShardOrderCluster(t *testing.T) {
	if os.Getenv(shardBenchEnv) != "1" {
		t.Skipf("a measurement: set %s=1 to run it", shardBenchEnv)
	}
	cc := testenv.Cluster(t)
	ctx := context.Background()
	q, err := NewShardedQueue(ctx, cc, "order", 3, WithPrefix("rbo"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	starts := map[int][]time.Time{}
	var left atomic.Int64
	done := make(chan struct{}, 1)
	startWorker(t, q, fixedRule(t, time.Second, 2), func(_ context.Context, j *Job) error {
		mu.Lock()
		starts[shardIndex(j.ID, 3)] = append(starts[shardIndex(j.ID, 3)], time.Now())
		mu.Unlock()
		if left.Add(-1) == 0 {
			done <- struct{}{}
		}
		return nil
	}, WithConcurrency(100))
	var firsts, medians []time.Duration
	next := 0
	for round := range 10 {
		mu.Lock()
		starts = map[int][]time.Time{}
		mu.Unlock()
		var params []EnqueueParams
		for s := range 3 {
			for range 100 {
				var id string
				id, next = idOnShard(fmt.Sprint("o", round, "-", s, "-"), next, s, 3)
				params = append(params, EnqueueParams{Options: []EnqueueOption{WithID(id), WithDelay(300 * time.Millisecond)}})
			}
		}
		left.Store(int64(len(params)))
		if _, err := q.EnqueueMany(ctx, params); err != nil {
			t.Fatal(err)
		}
		<-done
		mu.Lock()
		var first, med []time.Time
		for s := range 3 {
			ts := starts[s]
			sort.Slice(ts, func(a, b int) bool { return ts[a].Before(ts[b]) })
			first, med = append(first, ts[0]), append(med, ts[len(ts)/2])
		}
		mu.Unlock()
		firsts, medians = append(firsts, spread(first)), append(medians, spread(med))
	}
	sort.Slice(firsts, func(a, b int) bool { return firsts[a] < firsts[b] })
	sort.Slice(medians, func(a, b int) bool { return medians[a] < medians[b] })
	t.Logf("10 rounds: spread of the shards' first starts median %s, max %s; of their median starts median %s, max %s",
		firsts[5], firsts[9], medians[5], medians[9])
}

// spread is the largest less the smallest of ts.
func spread(ts []time.Time) time.Duration {
	lo, hi := ts[0], ts[0]
	for _, t := range ts {
		if t.Before(lo) {
			lo = t
		}
		if t.After(hi) {
			hi = t
		}
	}
	return hi.Sub(lo)
}

func sortedKeys(m map[string]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// masterStat reads one INFO stats field of each master.
func masterStat(t *testing.T, cc *redis.ClusterClient, field string) map[string]float64 {
	var mu sync.Mutex
	out := map[string]float64{}
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "stats").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			if k == field {
				f, _ := strconv.ParseFloat(v, 64)
				mu.Lock()
				out[c.Options().Addr] = f
				mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
