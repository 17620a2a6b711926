package bench

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
)

// errNativeFirstTry is the failure of every job's first attempt.
var errNativeFirstTry = errors.New("first attempt fails")

// nativeRedis starts a private redis-server on a free loopback port for one
// benchmark and stops it afterwards, so that what other programs do to a
// shared server (key scans, other tests) stays out of the figures.
func nativeRedis(b *testing.B) *redis.Client {
	b.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if testenv.RequireServers() {
			b.Fatalf("redis-server is required (%s=1) but not installed: %v", testenv.RequireServersEnv, err)
		}
		b.Skipf("redis-server is not installed (%v); the native figures need a private server", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning")
	dieWithBench(cmd)
	if err := cmd.Start(); err != nil {
		b.Fatalf("start redis-server: %v", err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, PoolSize: 64})
	b.Cleanup(func() { _ = c.Close() })
	for i := 0; c.Ping(context.Background()).Err() != nil; i++ {
		if i == 100 {
			b.Fatalf("private redis-server on port %s did not answer", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return c
}

// nativeRun runs f(i) for i in [0, n) on workers goroutines and returns the
// first error.
func nativeRun(n, workers int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		mu    sync.Mutex
		first error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// BenchmarkNativeRetryLateness measures how late the native path starts a
// retry against its computed time (end of the failed attempt + delay), on a
// private redis-server. Every job fails its first attempt and succeeds on
// the retry, fixed(100ms) apart. All jobs are enqueued first, with delays
// that spread their first runs from 2s on; the worker (concurrency 32)
// starts at once.
//
//   - idle: 200 jobs, first runs spread over 2s: a few in flight at a time.
//   - inflight-10k: 10,000 jobs, first runs spread over 5s: up to 10k jobs
//     in the queue (delayed, waiting or retrying), 4k attempts/s at peak.
//
// Metrics: late-p50-ms, late-p99-ms, late-max-ms and early (retries that
// started before their time; must be 0).
func BenchmarkNativeRetryLateness(b *testing.B) {
	for _, c := range []struct {
		name   string
		jobs   int
		spread time.Duration
	}{
		{"idle", 200, 2 * time.Second},
		{"inflight-10k", 10_000, 5 * time.Second},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				benchNativeLateness(b, c.jobs, c.spread)
			}
		})
	}
}

func benchNativeLateness(b *testing.B, jobs int, spread time.Duration) {
	ctx := context.Background()
	rdb := nativeRedis(b)
	const delay = 100 * time.Millisecond
	rule, err := backoff.NewRule(backoff.Must(backoff.Fixed(delay)), 2)
	if err != nil {
		b.Fatal(err)
	}
	q, err := native.NewQueue(rdb, "lateness")
	if err != nil {
		b.Fatal(err)
	}
	ended := make([]time.Time, jobs)
	started := make([]time.Time, jobs)
	var left sync.WaitGroup
	left.Add(jobs)
	step := spread / time.Duration(jobs)
	if err := nativeRun(jobs, 8, func(i int) error {
		_, err := q.Enqueue(ctx, nil, native.WithID(strconv.Itoa(i)), native.WithDelay(2*time.Second+time.Duration(i)*step))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	w, err := native.NewWorker(q, rule, func(ctx context.Context, j *native.Job) error {
		i, _ := strconv.Atoi(j.ID)
		if j.Attempt == 1 {
			ended[i] = time.Now()
			return errNativeFirstTry
		}
		started[i] = time.Now()
		left.Done()
		return nil
	}, native.WithConcurrency(32))
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = w.Shutdown(ctx) }()
	left.Wait()
	late := make([]time.Duration, jobs)
	early := 0
	for i := range late {
		late[i] = started[i].Sub(ended[i]) - delay
		if late[i] < 0 {
			early++
		}
	}
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(late[len(late)/2]), "late-p50-ms")
	b.ReportMetric(ms(late[len(late)*99/100]), "late-p99-ms")
	b.ReportMetric(ms(late[len(late)-1]), "late-max-ms")
	b.ReportMetric(float64(early), "early")
}
