package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
)

// enqueueJobs is how many jobs each enqueue round adds.
var enqueueJobs = scaled(100_000)

// enqueueProducers are the producer counts of BenchmarkEnqueue's groups:
// how many add jobs one at a time at once (goroutines on the Go engines,
// concurrent add loops on BullMQ). The bulk rows run in the first group.
var enqueueProducers = []int{32, 1}

// enqueueChunk is the size of each bulk call (BullMQ's addBulk).
const enqueueChunk = 1000

// enqueueRounds is how many rounds each group runs; it reports their medians.
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

// enqueuers are the rows of each BenchmarkEnqueue group, each one round on
// a fresh private redis-server, given how many producers add single jobs.
// Bulk APIs are rows of their own, in the first group only (bulk: true):
// native-bulk sends Queue.EnqueueMany calls of enqueueChunk jobs,
// bullmq-addbulk addBulk calls of as many.
var enqueuers = []struct {
	name  string
	round func(b *testing.B, producers int) enqueueRound
	skip  func(b *testing.B) string
	bulk  bool
}{
	{"native", benchEnqueueNative, nil, false},
	{"native-bulk", benchEnqueueNativeBulk, nil, true},
	{"asynq", benchEnqueueAsynq, nil, false},
	{"bullmq-add", benchEnqueueBullMQ("add"), bullmqMissing, false},
	{"bullmq-addbulk", benchEnqueueBullMQ("addbulk"), bullmqMissing, true},
}

// BenchmarkEnqueue measures how fast each engine adds enqueueJobs jobs that
// may retry (the job options a retrying job carries: asynq MaxRetry(1),
// BullMQ attempts 2 with a fixed backoff; the native queue's cap is the
// worker's rule) to an empty queue on a private redis-server, with no
// worker running: jobs/s over the whole batch, the Redis server's CPU per
// job (INFO cpu, before and after) and the producer process's CPU per job,
// medians of enqueueRounds rounds. Groups are named p<producers>: single-job
// calls come from that many producers at once, native Queue.Enqueue and
// asynq Client.Enqueue from goroutines sharing one client, BullMQ Queue.add
// from concurrent loops on one connection (bullmq-add); in the first group
// native-bulk sends Queue.EnqueueMany calls and bullmq-addbulk
// Queue.addBulk calls of enqueueChunk jobs, one after another.
//
// As in BenchmarkThroughput, the engines take turns within each round, so
// that a burst of load from elsewhere hits all of them, and the native row
// also reports the medians of the per-round ratios to asynq (x-asynq for
// jobs/s, redis-x-asynq for Redis CPU per job). REBOUND_BENCH_ENGINES
// limits the rounds to the engines it names.
func BenchmarkEnqueue(b *testing.B) {
	only := engineFilter()
	for gi, producers := range enqueueProducers {
		b.Run(fmt.Sprintf("p%d", producers), func(b *testing.B) {
			skipped := map[string]string{}
			for _, e := range enqueuers {
				switch {
				case e.bulk && gi > 0:
					skipped[e.name] = "-" // not a row of this group
				case only != nil && !only[e.name]:
					skipped[e.name] = fmt.Sprintf("not in %s", enginesEnv)
				case e.skip != nil:
					if why := e.skip(b); why != "" {
						skipped[e.name] = why
					}
				}
			}
			results := map[string][]enqueueRound{}
			for range enqueueRounds {
				for _, e := range enqueuers {
					if skipped[e.name] == "" {
						results[e.name] = append(results[e.name], e.round(b, producers))
					}
				}
			}
			for _, e := range enqueuers {
				if skipped[e.name] == "-" {
					continue
				}
				b.Run(e.name, func(b *testing.B) {
					if why := skipped[e.name]; why != "" {
						b.Skipf("%s not measured: %s", e.name, why)
					}
					for b.Loop() {
					}
					reportEnqueue(b, results[e.name])
					if e.name == "native" && len(results["asynq"]) == len(results["native"]) {
						reportEnqueueRatios(b, results["native"], results["asynq"])
					}
				})
			}
		})
	}
}

// reportEnqueue reports the medians of one engine's rounds.
func reportEnqueue(b *testing.B, rounds []enqueueRound) {
	var jobs, redisUs, clientUs []float64
	for _, r := range rounds {
		jobs = append(jobs, r.jobsPerSec)
		redisUs = append(redisUs, r.redisUsPerJob)
		clientUs = append(clientUs, r.clientUsPerJob)
	}
	b.ReportMetric(median(jobs), "jobs/s")
	b.ReportMetric(median(redisUs), "redis-us/job")
	b.ReportMetric(median(clientUs), "client-us/job")
	b.ReportMetric(float64(enqueueJobs), "jobs")
	b.ReportMetric(float64(len(rounds)), "rounds")
}

// reportEnqueueRatios reports the medians of the per-round ratios of
// native's figures to asynq's (rounds in the order they ran).
func reportEnqueueRatios(b *testing.B, native, asynq []enqueueRound) {
	var speed, cpu []float64
	for i := range native {
		speed = append(speed, native[i].jobsPerSec/asynq[i].jobsPerSec)
		cpu = append(cpu, native[i].redisUsPerJob/asynq[i].redisUsPerJob)
		b.Logf("round %d: native %.0f jobs/s %.2f redis-us/job, asynq %.0f jobs/s %.2f redis-us/job: %.2fx, redis %.2fx",
			i+1, native[i].jobsPerSec, native[i].redisUsPerJob, asynq[i].jobsPerSec, asynq[i].redisUsPerJob, speed[i], cpu[i])
	}
	b.ReportMetric(median(speed), "x-asynq")
	b.ReportMetric(median(cpu), "redis-x-asynq")
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

func benchEnqueueNative(b *testing.B, producers int) enqueueRound {
	return nativeEnqueueRound(b, func(ctx context.Context, q *native.Queue) error {
		return parallel(enqueueJobs, producers, func(int) error {
			_, err := q.Enqueue(ctx, enqueuePayload)
			return err
		})
	})
}

// benchEnqueueNativeBulk is benchEnqueueNative with the jobs sent in
// EnqueueMany calls of enqueueChunk, one after another, each call's jobs
// built in the timed loop.
func benchEnqueueNativeBulk(b *testing.B, _ int) enqueueRound {
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

func benchEnqueueAsynq(b *testing.B, producers int) enqueueRound {
	ctx := context.Background()
	rdb := privateRedis(b)
	const queue = "enqueue"
	client := asynq.NewClientFromRedisClient(rdb)
	r := timeEnqueue(b, rdb, func() error {
		return parallel(enqueueJobs, producers, func(int) error {
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
