package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/adapters/native"
)

// throughputJobs is how many jobs each throughput run pushes through.
const throughputJobs = 20_000

// throughputConcurrency is every throughput run's number of handlers.
const throughputConcurrency = 20

// BenchmarkThroughput measures jobs per second end to end where every job
// fails once and succeeds on its retry (2 runs per job), with 20 handlers
// and a zero retry delay, so the figure is the engine's own path: enqueue is
// outside the timed part, the clock runs from the worker's start to the last
// job's success. The native path and asynq each get a fresh private
// redis-server (see privateRedis), so that neither inherits the other's keys
// and nothing else on a shared server counts; River (for reference) runs on
// the real PostgreSQL, tuned as benchThroughputRiver says. asynq promotes
// retries every DelayedTaskCheckInterval; it is set to 100ms (default 5s) so
// the interval does not dominate.
func BenchmarkThroughput(b *testing.B) {
	b.Run("native", func(b *testing.B) {
		for b.Loop() {
			benchThroughputNative(b)
		}
	})
	b.Run("asynq", func(b *testing.B) {
		for b.Loop() {
			benchThroughputAsynq(b)
		}
	})
	b.Run("river", func(b *testing.B) {
		for b.Loop() {
			benchThroughputRiver(b)
		}
	})
}

func benchThroughputNative(b *testing.B) {
	b.StopTimer()
	ctx := context.Background()
	rdb := privateRedis(b)
	q, err := native.NewQueue(rdb, "throughput")
	if err != nil {
		b.Fatal(err)
	}
	if err := parallel(throughputJobs, 32, func(int) error {
		_, err := q.Enqueue(ctx, []byte("x"))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	var ok atomic.Int64
	done := make(chan struct{})
	_, rule := mustRule(b, "fixed(0s)", 2)
	w, err := native.NewWorker(q, rule, func(_ context.Context, j *native.Job) error {
		if j.Attempt == 1 {
			return errDependencyDown
		}
		if ok.Add(1) == throughputJobs {
			close(done)
		}
		return nil
	}, native.WithConcurrency(throughputConcurrency), native.WithErrorHandler(func(err error) { b.Logf("worker: %v", err) }))
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	start := time.Now()
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	waitDone(b, done, &ok)
	elapsed := time.Since(start)
	b.StopTimer()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = w.Shutdown(sctx)
	b.ReportMetric(throughputJobs/elapsed.Seconds(), "jobs/s")
	b.StartTimer()
}

func benchThroughputAsynq(b *testing.B) {
	b.StopTimer()
	ctx := context.Background()
	rdb := privateRedis(b)
	const queue = "throughput"
	client := asynq.NewClientFromRedisClient(rdb)
	if err := parallel(throughputJobs, 32, func(int) error {
		_, err := client.EnqueueContext(ctx, asynq.NewTask("throughput", []byte("x")), asynq.Queue(queue), asynq.MaxRetry(1))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	var ok atomic.Int64
	done := make(chan struct{})
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:              throughputConcurrency,
		Queues:                   map[string]int{queue: 1},
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return 0 },
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		LogLevel:                 asynq.ErrorLevel,
	})
	b.StartTimer()
	start := time.Now()
	if err := srv.Start(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		if n, _ := asynq.GetRetryCount(ctx); n == 0 {
			return errDependencyDown
		}
		if ok.Add(1) == throughputJobs {
			close(done)
		}
		return nil
	})); err != nil {
		b.Fatal(err)
	}
	waitDone(b, done, &ok)
	elapsed := time.Since(start)
	b.StopTimer()
	srv.Shutdown()
	b.ReportMetric(throughputJobs/elapsed.Seconds(), "jobs/s")
	b.StartTimer()
}

func waitDone(b *testing.B, done <-chan struct{}, ok *atomic.Int64) {
	b.Helper()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		b.Fatalf("only %d of %d jobs succeeded", ok.Load(), throughputJobs)
	}
}
