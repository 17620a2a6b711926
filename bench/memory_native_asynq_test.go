package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
)

// memoryJobs is how many jobs wait for their retry in each memory run.
var memoryJobs = scaled(20_000)

// memoryPayloads are the payloads compared, the same on both engines: one
// under Redis's default hash-max-listpack-value (64 bytes), under which a
// small hash stays in the compact listpack encoding, and one over it.
var memoryPayloads = []struct {
	name string
	data []byte
}{
	{"payload-42B", []byte(`{"user_id":123456789,"template":"welcome"}`)},
	{"payload-94B", []byte(`{"user_id":123456789,"template":"welcome","locale":"en-GB","attempt_key":"0190f3a2-7c1e-7d4b"}`)},
}

var errDependencyDown = errors.New("dependency down")

// BenchmarkMemory measures the Redis bytes one job costs while it waits for
// its retry: memoryJobs jobs with the same payload fail once with the same
// error and wait an hour, on a private redis-server, and the used_memory
// delta, less client connection buffers, is divided by the job count. Every
// engine uses its default job IDs. BullMQ stores the failed attempt's stack
// trace with the job: bullmq is its default, bullmq-no-stack the jobs'
// stackTraceLimit set to 0. GB/10M extrapolates linearly to ten million
// waiting retries.
func BenchmarkMemory(b *testing.B) {
	for _, p := range memoryPayloads {
		b.Run(p.name+"/native", func(b *testing.B) {
			for b.Loop() {
				benchMemoryNative(b, p.data)
			}
		})
		b.Run(p.name+"/asynq", func(b *testing.B) {
			for b.Loop() {
				benchMemoryAsynq(b, p.data)
			}
		})
		b.Run(p.name+"/bullmq", func(b *testing.B) {
			for b.Loop() {
				benchMemoryBullMQ(b, p.data, -1)
			}
		})
		b.Run(p.name+"/bullmq-no-stack", func(b *testing.B) {
			for b.Loop() {
				benchMemoryBullMQ(b, p.data, 0)
			}
		})
	}
}

// dataMemory is INFO memory's used_memory less the memory of client
// connections (mem_clients_normal: query and reply buffers): the engines
// open different numbers of pooled connections, which is no per-job cost.
func dataMemory(b *testing.B, c *redis.Client) float64 {
	b.Helper()
	m := infoNumbers(b, c, "memory", "used_memory", "mem_clients_normal")
	return m[0] - m[1]
}

func reportMemory(b *testing.B, before, after float64) {
	per := (after - before) / float64(memoryJobs)
	b.ReportMetric(per, "bytes/job")
	b.ReportMetric(per*10e6/1e9, "GB/10M")
	b.ReportMetric(float64(memoryJobs), "jobs")
}

func benchMemoryNative(b *testing.B, payload []byte) {
	ctx := context.Background()
	rdb := privateRedis(b)
	b.Logf("private redis-server %s", redisVersion(rdb))
	q, err := native.NewQueue(rdb, "memory")
	if err != nil {
		b.Fatal(err)
	}
	before := dataMemory(b, rdb)
	if err := parallel(memoryJobs, 32, func(int) error {
		_, err := q.Enqueue(ctx, payload)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	_, rule := mustRule(b, "fixed(1h)", 3)
	w, err := native.NewWorker(q, rule, func(context.Context, *native.Job) error { return errDependencyDown },
		native.WithConcurrency(50), native.WithErrorHandler(func(err error) { b.Logf("worker: %v", err) }))
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	waitFor(b, 2*time.Minute, "native jobs waiting for retry", func() (bool, error) {
		c, err := q.Counts(ctx)
		return c.Delayed == int64(memoryJobs), err
	})
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Shutdown(sctx); err != nil {
		b.Fatal(err)
	}
	reportMemory(b, before, dataMemory(b, rdb))
}

func benchMemoryAsynq(b *testing.B, payload []byte) {
	ctx := context.Background()
	rdb := privateRedis(b)
	const queue = "memory"
	client := asynq.NewClientFromRedisClient(rdb)
	before := dataMemory(b, rdb)
	if err := parallel(memoryJobs, 32, func(int) error {
		_, err := client.EnqueueContext(ctx, asynq.NewTask("memory", payload), asynq.Queue(queue), asynq.MaxRetry(2))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:    50,
		Queues:         map[string]int{queue: 1},
		RetryDelayFunc: func(int, error, *asynq.Task) time.Duration { return time.Hour },
		LogLevel:       asynq.ErrorLevel,
	})
	if err := srv.Start(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return errDependencyDown })); err != nil {
		b.Fatal(err)
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	waitFor(b, 2*time.Minute, "asynq tasks waiting for retry", func() (bool, error) {
		qi, err := insp.GetQueueInfo(queue)
		if err != nil {
			return false, err
		}
		return qi.Retry == memoryJobs, nil
	})
	srv.Shutdown()
	reportMemory(b, before, dataMemory(b, rdb))
}
