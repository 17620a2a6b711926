package bench

import (
	"context"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
)

// enqueueJobs is how many jobs each enqueue round adds.
var enqueueJobs = scaled(100_000)

// enqueueParallel is how many producers add jobs one at a time at once:
// goroutines on the Go engines, concurrent add loops on BullMQ.
const enqueueParallel = 32

// enqueueChunk is the size of each bulk call (BullMQ's addBulk).
const enqueueChunk = 1000

// enqueueRounds is how many rounds each row runs; it reports their medians.
var enqueueRounds = rounds(3)

// enqueuePayload is every enqueued job's payload, the larger of the memory
// benchmark's two.
var enqueuePayload = memoryPayloads[1].data

// An enqueueRound is one round's figures.
type enqueueRound struct {
	jobsPerSec     float64
	redisUsPerJob  float64 // Redis server CPU (user+sys) per job, microseconds
	clientUsPerJob float64 // the producer process's CPU per job, microseconds
}

// enqueuers are the rows of BenchmarkEnqueue, each one round on a fresh
// private redis-server. Bulk APIs are rows of their own: native-bulk sends
// Queue.EnqueueMany calls of enqueueChunk jobs, bullmq-addbulk addBulk calls
// of as many.
var enqueuers = []struct {
	name  string
	round func(*testing.B) enqueueRound
}{
	{"native", benchEnqueueNative},
	{"native-bulk", benchEnqueueNativeBulk},
	{"asynq", benchEnqueueAsynq},
	{"bullmq-add", benchEnqueueBullMQ("add")},
	{"bullmq-addbulk", benchEnqueueBullMQ("addbulk")},
}

// BenchmarkEnqueue measures how fast each engine adds enqueueJobs jobs that
// may retry (the job options a retrying job carries: asynq MaxRetry(1),
// BullMQ attempts 2 with a fixed backoff; the native queue's cap is the
// worker's rule) to an empty queue on a private redis-server, with no
// worker running: jobs/s over the whole batch, the Redis server's CPU per
// job (INFO cpu, before and after) and the producer process's CPU per job,
// medians of enqueueRounds rounds. Single-job calls come from
// enqueueParallel producers at once: native Queue.Enqueue and asynq
// Client.Enqueue from goroutines sharing one client, BullMQ Queue.add from
// concurrent loops on one connection (bullmq-add); native-bulk sends
// Queue.EnqueueMany calls and bullmq-addbulk Queue.addBulk calls of
// enqueueChunk jobs, one after another.
func BenchmarkEnqueue(b *testing.B) {
	for _, e := range enqueuers {
		b.Run(e.name, func(b *testing.B) {
			for b.Loop() {
				var jobs, redisUs, clientUs []float64
				for range enqueueRounds {
					r := e.round(b)
					jobs = append(jobs, r.jobsPerSec)
					redisUs = append(redisUs, r.redisUsPerJob)
					clientUs = append(clientUs, r.clientUsPerJob)
				}
				b.ReportMetric(median(jobs), "jobs/s")
				b.ReportMetric(median(redisUs), "redis-us/job")
				b.ReportMetric(median(clientUs), "client-us/job")
				b.ReportMetric(float64(enqueueJobs), "jobs")
				b.ReportMetric(float64(enqueueRounds), "rounds")
			}
		})
	}
}

// timeEnqueue times add, which must add every job, and reads the CPU
// both sides spent on it.
func timeEnqueue(b *testing.B, rdb *redis.Client, add func() error) enqueueRound {
	b.Helper()
	clock := startThroughputClock(b, rdb)
	if err := add(); err != nil {
		b.Fatal(err)
	}
	r := clock.stop(b, enqueueJobs)
	return enqueueRound{jobsPerSec: r.jobsPerSec, redisUsPerJob: r.redisUsPerJob, clientUsPerJob: r.workerUsPerJob}
}

func benchEnqueueNative(b *testing.B) enqueueRound {
	return nativeEnqueueRound(b, func(ctx context.Context, q *native.Queue) error {
		return parallel(enqueueJobs, enqueueParallel, func(int) error {
			_, err := q.Enqueue(ctx, enqueuePayload)
			return err
		})
	})
}

// benchEnqueueNativeBulk is benchEnqueueNative with the jobs sent in
// EnqueueMany calls of enqueueChunk, one after another, each call's jobs
// built in the timed loop.
func benchEnqueueNativeBulk(b *testing.B) enqueueRound {
	return nativeEnqueueRound(b, func(ctx context.Context, q *native.Queue) error {
		jobs := make([]native.EnqueueParams, enqueueChunk)
		for start := 0; start < enqueueJobs; start += enqueueChunk {
			chunk := jobs[:min(enqueueChunk, enqueueJobs-start)]
			for i := range chunk {
				chunk[i] = native.EnqueueParams{Payload: enqueuePayload}
			}
			res, err := q.EnqueueMany(ctx, chunk)
			if err != nil {
				return err
			}
			for _, r := range res {
				if r.Err != nil {
					return r.Err
				}
			}
		}
		return nil
	})
}

// nativeEnqueueRound is one round of a native row: add, timed, enqueues
// enqueueJobs jobs to a fresh queue on a private redis-server, and every
// one of them must be waiting after it.
func nativeEnqueueRound(b *testing.B, add func(ctx context.Context, q *native.Queue) error) enqueueRound {
	ctx := context.Background()
	rdb := privateRedis(b)
	q, err := native.NewQueue(rdb, "enqueue")
	if err != nil {
		b.Fatal(err)
	}
	r := timeEnqueue(b, rdb, func() error { return add(ctx, q) })
	c, err := q.Counts(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if c.Waiting != int64(enqueueJobs) {
		b.Fatalf("%d jobs waiting after enqueueing %d", c.Waiting, enqueueJobs)
	}
	return r
}

func benchEnqueueAsynq(b *testing.B) enqueueRound {
	ctx := context.Background()
	rdb := privateRedis(b)
	const queue = "enqueue"
	client := asynq.NewClientFromRedisClient(rdb)
	r := timeEnqueue(b, rdb, func() error {
		return parallel(enqueueJobs, enqueueParallel, func(int) error {
			_, err := client.EnqueueContext(ctx, asynq.NewTask("enqueue", enqueuePayload), asynq.Queue(queue), asynq.MaxRetry(1))
			return err
		})
	})
	qi, err := asynq.NewInspectorFromRedisClient(rdb).GetQueueInfo(queue)
	if err != nil {
		b.Fatal(err)
	}
	if qi.Pending != enqueueJobs {
		b.Fatalf("%d tasks pending after enqueueing %d", qi.Pending, enqueueJobs)
	}
	return r
}
