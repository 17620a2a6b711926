package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/memstore"
)

// How an adapter runs a job bound to a dependency: ask, run or defer, and
// report. Redis and PostgreSQL stores are called the same way.
func Example() {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	store := memstore.New(breaker.Rules{
		Default: breaker.Must(breaker.Parse("breaker(failures=2, cooldown=exponential(30s, 10m), budget=budget(10%, 5/s, 20))")),
	}, memstore.Options{Now: func() time.Time { return now }})
	ctx := context.Background()

	runJob := func(job string, kind breaker.Kind, handler func() error) {
		v, err := store.Allow(ctx, "payments", breaker.Job{Kind: kind, ID: job})
		if err != nil {
			// The store is down: run the job, never stop the fleet.
			v = breaker.Verdict{Decision: breaker.Run}
		}
		if !v.Runs() {
			fmt.Printf("%s: deferred %s (%s), no attempt spent\n", job, v.Wait(now), v.Decision)
			return
		}
		o := breaker.Success
		if err := handler(); err != nil {
			o = breaker.Failure
		}
		tr, _ := store.Record(ctx, "payments", v.Ticket, o)
		fmt.Printf("%s: ran (%s), %s, breaker %s\n", job, v.Decision, o, tr)
	}
	down := func() error { return breaker.Dependency(errors.New("503"), "payments") }
	up := func() error { return nil }

	runJob("job-1", breaker.Fresh, down)
	runJob("job-2", breaker.Fresh, down)
	runJob("job-3", breaker.Fresh, up)
	now = now.Add(30 * time.Second)
	runJob("job-1", breaker.Retry, up)
	runJob("job-2", breaker.Retry, up)
	// job-3 comes back as a first run (asynq's uncounted retry keeps its
	// count at 0); the store remembers deferring it, so it is a retry.
	now = now.Add(100 * time.Millisecond)
	runJob("job-3", breaker.Fresh, up)
	runJob("job-4", breaker.Fresh, up)
	// Output:
	// job-1: ran (run), failure, breaker closed
	// job-2: ran (run), failure, breaker closed -> open
	// job-3: deferred 30s (defer-open), no attempt spent
	// job-1: ran (probe), success, breaker half-open -> closed
	// job-2: deferred 200ms (defer-budget), no attempt spent
	// job-3: deferred 100ms (defer-budget), no attempt spent
	// job-4: ran (run), success, breaker closed
}
