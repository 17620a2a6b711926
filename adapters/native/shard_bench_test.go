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
