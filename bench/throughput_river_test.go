package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
)

// riverThroughputPoll is River's fetch tuning in the throughput run. River
// fetches at most one batch of free worker slots per FetchCooldown (100ms
// by default), which would cap 20 workers at 200 runs/s whatever the
// database can do; a team tuning River for short jobs lowers it, as the
// asynq run lowers DelayedTaskCheckInterval.
var riverThroughputPoll = riverPoll{name: "cooldown-5ms", poll: 50 * time.Millisecond, cooldown: 5 * time.Millisecond}

// throughputArgs is the job of the River throughput run.
type throughputArgs struct{}

func (throughputArgs) Kind() string { return "bench_throughput" }

// benchThroughputRiver is BenchmarkThroughput's run on River: the same
// jobs, rule and clock as the native and asynq runs, on the real
// PostgreSQL in a schema of its own.
func benchThroughputRiver(b *testing.B) {
	b.StopTimer()
	ctx := context.Background()
	pool, schema := riverPostgres(b)
	var ok atomic.Int64
	done := make(chan struct{})
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(_ context.Context, job *river.Job[throughputArgs]) error {
		if job.Attempt == 1 {
			return errDependencyDown
		}
		if ok.Add(1) == int64(throughputJobs) {
			close(done)
		}
		return nil
	}))
	_, rule := mustRule(b, "fixed(0s)", 2)
	params := make([]river.InsertManyParams, throughputJobs)
	for i := range params {
		params[i] = river.InsertManyParams{Args: throughputArgs{}}
	}
	// Insert with a client that does not work, so that every job waits
	// for the timed client's start.
	inserter, err := river.NewClient(riverDriver(pool), &river.Config{Logger: quietLogger, Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := inserter.InsertMany(ctx, params); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	start := time.Now()
	startRiver(b, pool, schema, rule, workers, throughputConcurrency, riverThroughputPoll)
	waitDone(b, done, &ok)
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(throughputJobs)/elapsed.Seconds(), "jobs/s")
	b.StartTimer()
}
