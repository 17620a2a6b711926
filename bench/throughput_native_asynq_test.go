package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
)

// throughputJobs is how many jobs each throughput round pushes through.
var throughputJobs = scaled(20_000)

// throughputConcurrency is the number of handlers River's reference row
// runs with, the first of throughputLevels.
const throughputConcurrency = 20

// throughputLevels are the handler counts the native path and asynq are
// compared at: a small pool, and a large one where batching pays more.
var throughputLevels = []int{throughputConcurrency, 100}

// throughputDelays are the retry delays compared: zero, where the figure
// is the engine's own path, and a real one, where the retry waits in the
// engine's delayed set and its promotion and wake-ups count.
var throughputDelays = []time.Duration{0, 50 * time.Millisecond}

// throughputRounds is how many rounds each Redis engine runs per
// benchmark iteration; the figures are their medians (one round swings by
// 10% or more on a shared 2-core machine).
var throughputRounds = rounds(3)

// A throughputRound is one round's figures.
type throughputRound struct {
	jobsPerSec     float64
	redisUsPerJob  float64 // Redis server CPU (user+sys) per job, microseconds
	workerUsPerJob float64 // the worker process's CPU per job, microseconds
}

// throughputEngines are the engines compared on a private redis-server,
// each with one round at a handler count and a retry delay; skip, when
// set, says why the engine cannot run here ("" when it can).
var throughputEngines = []struct {
	name  string
	round func(b *testing.B, concurrency int, delay time.Duration) throughputRound
	skip  func(b *testing.B) string
}{
	{"native", benchThroughputNative, nil},
	{"asynq", benchThroughputAsynq, nil},
	{"bullmq", benchThroughputBullMQ, bullmqMissing},
}

// enginesEnv, set to a comma-separated list of engine names ("native,asynq"),
// limits the throughput and enqueue rounds to those engines (a sub-benchmark filter
// cannot: every engine of a group runs in each round).
const enginesEnv = "REBOUND_BENCH_ENGINES"

// BenchmarkThroughput measures jobs per second end to end where every job
// fails once and succeeds on its retry (2 runs per job), with each of
// throughputDelays as the retry delay: enqueue is outside the timed part,
// the clock runs from the worker's start to the last job's success. The
// native path, asynq and BullMQ each get a fresh private redis-server per
// round (see privateRedis), so that none inherits another's keys and
// nothing else on a shared server counts; they run at each of
// throughputLevels handlers, throughputRounds rounds each, and report the
// medians of jobs/s, of the Redis server's CPU per job (INFO cpu, before
// and after) and of the worker process's CPU per job. Rows are named
// c<handlers>/<engine> at a zero delay and c<handlers>-<delay>/<engine>
// otherwise. River (for reference) runs once on the real PostgreSQL at 20
// handlers and a zero delay, tuned as benchThroughputRiver says. asynq
// promotes retries every DelayedTaskCheckInterval; it is set to 100ms
// (default 5s) so the interval does not dominate.
//
// The engines take turns within each round (native, asynq, BullMQ, then
// the next round), so that a burst of load from elsewhere on a shared
// machine hits all of them rather than the one that happened to run then;
// the native row also reports the median of the per-round ratios to asynq
// (x-asynq for jobs/s, redis-x-asynq for Redis CPU per job), each taken
// between two runs that saw about the same load.
func BenchmarkThroughput(b *testing.B) {
	for _, d := range throughputDelays {
		for _, c := range throughputLevels {
			group := fmt.Sprintf("c%d", c)
			if d > 0 {
				group += "-" + d.String()
			}
			b.Run(group, func(b *testing.B) {
				benchThroughputGroup(b, c, d)
			})
		}
	}
	b.Run(fmt.Sprintf("c%d/river", throughputConcurrency), func(b *testing.B) {
		for b.Loop() {
			benchThroughputRiver(b)
		}
	})
}

// engineFilter returns the engines enginesEnv names, or nil (every
// engine) when it is not set.
func engineFilter() map[string]bool {
	v := os.Getenv(enginesEnv)
	if v == "" {
		return nil
	}
	only := map[string]bool{}
	for _, name := range strings.Split(v, ",") {
		only[strings.TrimSpace(name)] = true
	}
	return only
}

// benchThroughputGroup runs throughputRounds rounds at one handler count
// and retry delay, every engine once per round in turn, then reports each
// engine's medians under a sub-benchmark of its name.
func benchThroughputGroup(b *testing.B, concurrency int, delay time.Duration) {
	only := engineFilter()
	skipped := map[string]string{}
	for _, e := range throughputEngines {
		switch {
		case only != nil && !only[e.name]:
			skipped[e.name] = fmt.Sprintf("not in %s", enginesEnv)
		case e.skip != nil:
			if why := e.skip(b); why != "" {
				skipped[e.name] = why
			}
		}
	}
	results := map[string][]throughputRound{}
	for range throughputRounds {
		for _, e := range throughputEngines {
			if skipped[e.name] == "" {
				results[e.name] = append(results[e.name], e.round(b, concurrency, delay))
			}
		}
	}
	for _, e := range throughputEngines {
		b.Run(e.name, func(b *testing.B) {
			if why := skipped[e.name]; why != "" {
				b.Skipf("%s not measured: %s", e.name, why)
			}
			for b.Loop() {
			}
			reportThroughput(b, results[e.name])
			if e.name == "native" && len(results["asynq"]) == len(results["native"]) {
				reportRatios(b, results["native"], results["asynq"])
			}
		})
	}
}

// reportThroughput reports the medians of one engine's rounds.
func reportThroughput(b *testing.B, rounds []throughputRound) {
	var jobs, redisUs, workerUs []float64
	for _, r := range rounds {
		jobs = append(jobs, r.jobsPerSec)
		redisUs = append(redisUs, r.redisUsPerJob)
		workerUs = append(workerUs, r.workerUsPerJob)
	}
	b.ReportMetric(median(jobs), "jobs/s")
	b.ReportMetric(median(redisUs), "redis-us/job")
	b.ReportMetric(median(workerUs), "worker-us/job")
	b.ReportMetric(float64(len(rounds)), "rounds")
}

// reportRatios reports the medians of the per-round ratios of native's
// figures to asynq's (rounds in the order they ran).
func reportRatios(b *testing.B, native, asynq []throughputRound) {
	var speed, cpu []float64
	for i := range native {
		speed = append(speed, native[i].jobsPerSec/asynq[i].jobsPerSec)
		cpu = append(cpu, native[i].redisUsPerJob/asynq[i].redisUsPerJob)
		b.Logf("round %d: native %.0f jobs/s %.1f redis-us/job, asynq %.0f jobs/s %.1f redis-us/job: %.2fx, redis %.2fx",
			i+1, native[i].jobsPerSec, native[i].redisUsPerJob, asynq[i].jobsPerSec, asynq[i].redisUsPerJob, speed[i], cpu[i])
	}
	b.ReportMetric(median(speed), "x-asynq")
	b.ReportMetric(median(cpu), "redis-x-asynq")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// throughputClock times a round and reads the CPU both sides (the Redis
// server, this process) spent during it; the enqueue rounds use it too.
type throughputClock struct {
	rdb          *redis.Client
	redis0, cpu0 float64
	stats0       commandStats
	start        time.Time
}

func startThroughputClock(b *testing.B, rdb *redis.Client) *throughputClock {
	c := &throughputClock{rdb: rdb, stats0: readCommandStats(b, rdb), redis0: redisCPUSeconds(b, rdb), cpu0: processCPUSeconds()}
	c.start = time.Now()
	return c
}

// stop ends a round of n jobs: its figures per job.
func (c *throughputClock) stop(b *testing.B, n int) throughputRound {
	elapsed := time.Since(c.start)
	r := throughputRound{
		jobsPerSec:     float64(n) / elapsed.Seconds(),
		redisUsPerJob:  (redisCPUSeconds(b, c.rdb) - c.redis0) * 1e6 / float64(n),
		workerUsPerJob: (processCPUSeconds() - c.cpu0) * 1e6 / float64(n),
	}
	logCommandStats(b, c.stats0, readCommandStats(b, c.rdb), n)
	return r
}

// redisCPUSeconds is the server's used_cpu_user + used_cpu_sys.
func redisCPUSeconds(b *testing.B, rdb *redis.Client) float64 {
	cpu := infoNumbers(b, rdb, "cpu", "used_cpu_user", "used_cpu_sys")
	return cpu[0] + cpu[1]
}

// processCPUSeconds is this process's CPU time, 0 where it cannot be read.
func processCPUSeconds() float64 {
	ns, _ := cpuClock(clockProcessCPUTime)
	return float64(ns) / 1e9
}

func benchThroughputNative(b *testing.B, concurrency int, delay time.Duration) throughputRound {
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	rdb := privateRedis(b)
	trace := tracePath(b, rdb)
	delayRoundTrips(b, rdb)
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
	_, rule := mustRule(b, fmt.Sprintf("fixed(%s)", delay), 2)
	w, err := native.NewWorker(q, rule, func(_ context.Context, j *native.Job) error {
		if j.Attempt == 1 {
			return errDependencyDown
		}
		if ok.Add(1) == int64(throughputJobs) {
			close(done)
		}
		return nil
	}, native.WithConcurrency(concurrency), native.WithErrorHandler(func(err error) { b.Logf("worker: %v", err) }), nativePrefetch(b))
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	clock := startThroughputClock(b, rdb)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	waitDone(b, done, &ok)
	r := clock.stop(b, throughputJobs)
	trace.log(b, throughputJobs)
	b.StopTimer()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = w.Shutdown(sctx)
	return r
}

// prefetchEnv, set to a number, is the native worker's WithPrefetch in the
// throughput rounds (unset: its default), to see what reserving ahead is
// worth; the report does not set it.
const prefetchEnv = "REBOUND_BENCH_PREFETCH"

// nativePrefetch returns the worker option prefetchEnv asks for, or nil.
func nativePrefetch(b *testing.B) native.WorkerOption {
	v := os.Getenv(prefetchEnv)
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s=%q: want a number of jobs", prefetchEnv, v)
	}
	return native.WithPrefetch(n)
}

func benchThroughputAsynq(b *testing.B, concurrency int, delay time.Duration) throughputRound {
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	rdb := privateRedis(b)
	delayRoundTrips(b, rdb)
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
		Concurrency:              concurrency,
		Queues:                   map[string]int{queue: 1},
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return delay },
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		LogLevel:                 asynq.ErrorLevel,
	})
	b.StartTimer()
	clock := startThroughputClock(b, rdb)
	if err := srv.Start(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		if n, _ := asynq.GetRetryCount(ctx); n == 0 {
			return errDependencyDown
		}
		if ok.Add(1) == int64(throughputJobs) {
			close(done)
		}
		return nil
	})); err != nil {
		b.Fatal(err)
	}
	waitDone(b, done, &ok)
	r := clock.stop(b, throughputJobs)
	b.StopTimer()
	srv.Shutdown()
	return r
}

func waitDone(b *testing.B, done <-chan struct{}, ok *atomic.Int64) {
	b.Helper()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		b.Fatalf("only %d of %d jobs succeeded", ok.Load(), throughputJobs)
	}
}
