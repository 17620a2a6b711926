package bench

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
)

// riverLatenessPolls are River's fetch settings of the lateness runs: its
// defaults, and a 50ms poll with a cooldown no longer than it.
var riverLatenessPolls = []riverPoll{
	{name: "default"},
	{name: "poll-50ms", poll: 50 * time.Millisecond, cooldown: 50 * time.Millisecond},
}

// latenessArgs is the job of the River lateness runs: I is its index.
type latenessArgs struct {
	I int `json:"i"`
}

func (latenessArgs) Kind() string { return "bench_lateness" }

// benchLatenessRiver runs one lateness measurement of River through the
// rebound adapter on the real PostgreSQL, in a schema of its own.
func benchLatenessRiver(b *testing.B, p riverPoll, load latenessLoad) {
	ctx := context.Background()
	pool, schema := riverPostgres(b)
	_, rule := mustRule(b, latenessPolicy, 2)
	rec := newLatenessRecorder(load.jobs)
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(_ context.Context, job *river.Job[latenessArgs]) error {
		if job.Attempt == 1 {
			rec.failed(job.Args.I)
			return errDependencyDown
		}
		rec.retried(job.Args.I)
		return nil
	}))
	client := startRiver(b, pool, schema, rule, workers, latenessConcurrency, p)
	rec.produce(b, load, func(from, to int) error {
		params := make([]river.InsertManyParams, 0, to-from)
		for i := from; i < to; i++ {
			params = append(params, river.InsertManyParams{Args: latenessArgs{I: i}})
		}
		_, err := client.InsertMany(ctx, params)
		return err
	})
	rec.wait(b, 3*time.Minute)
	rec.report(b)
}
