package reboundriver

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
)

// hintArgs jobs fail with a retry-after hint of their worker's.
type hintArgs struct{}

func (hintArgs) Kind() string { return "rebound_hint" }

type hintWorker struct {
	river.WorkerDefaults[hintArgs]
	hint time.Duration
}

func (w *hintWorker) Work(context.Context, *river.Job[hintArgs]) error {
	return backoff.RetryAfter(errScripted, w.hint)
}

// slowErrors is an ErrorHandler that takes a moment, as one reporting to an
// error tracker does, widening the gap between the middleware's decision and
// River's NextRetry call.
type slowErrors struct{}

func (slowErrors) HandleError(context.Context, *rivertype.JobRow, error) *river.ErrorHandlerResult {
	time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
	return nil
}

func (slowErrors) HandlePanic(context.Context, *rivertype.JobRow, any, string) *river.ErrorHandlerResult {
	return nil
}

// sharedDecisions runs n jobs on each of two databases whose job IDs
// collide, under one Retrier, each database's jobs failing with a hint of
// their own, and checks every job was scheduled by its own decision.
func sharedDecisions[TTx any](t *testing.T, n int, drivers [2]riverdriver.Driver[TTx], schemas [2]string) {
	r, _ := New(mustRule(t, backoff.Must(backoff.Fixed(time.Millisecond)), 3), quietErrors)
	hints := [2]time.Duration{time.Hour, 2 * time.Hour}
	var clients [2]*river.Client[TTx]
	for i := range clients {
		workers := river.NewWorkers()
		river.AddWorker(workers, &hintWorker{hint: hints[i]})
		cfg := clientConfig(t, r, schemas[i], workers, 20, testPoll)
		cfg.ErrorHandler = slowErrors{}
		c, err := river.NewClient(drivers[i], cfg)
		if err != nil {
			t.Fatalf("river.NewClient: %v", err)
		}
		params := make([]river.InsertManyParams, n)
		for j := range params {
			params[j] = river.InsertManyParams{Args: hintArgs{}}
		}
		if _, err := c.InsertMany(context.Background(), params); err != nil {
			t.Fatalf("InsertMany: %v", err)
		}
		clients[i] = c
	}
	before := time.Now()
	for _, c := range clients { // both at once, so the same IDs run together
		startStarted(t, c)
	}
	wrong := 0
	for i, c := range clients {
		jobs := waitAllInState(t, c, n, rivertype.JobStateRetryable, time.Minute)
		for _, j := range jobs {
			if d := j.ScheduledAt.Sub(before); d < hints[i] || d > hints[i]+time.Minute {
				wrong++
				if wrong <= 5 {
					t.Errorf("database %d, job %d: scheduled %v ahead, want its own hint %v", i, j.ID, d.Round(time.Second), hints[i])
				}
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d jobs were scheduled by another database's decision", wrong, 2*n)
	}
	if got := r.Pending(); got != 0 {
		t.Errorf("Pending = %d, want 0", got)
	}
}

// startStarted starts a client made with river.NewClient and stops it when
// t ends.
func startStarted[TTx any](t testing.TB, c *river.Client[TTx]) {
	t.Helper()
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("client.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
}

// waitAllInState waits until client has n jobs, all in state, and returns
// them, or fails t.
func waitAllInState[TTx any](t testing.TB, client *river.Client[TTx], n int, state rivertype.JobState, timeout time.Duration) []*rivertype.JobRow {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		res, err := client.JobList(context.Background(), river.NewJobListParams().States(state).First(n+1))
		if err != nil {
			t.Fatalf("JobList: %v", err)
		}
		if len(res.Jobs) >= n {
			return res.Jobs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs %s after %v", len(res.Jobs), n, state, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// One Retrier shared by clients on two databases, whose job IDs both start
// at 1, applies each job's own decision.
func TestSharedRetrierAcrossDatabases(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		pool1, schema1 := postgresDB(t)
		pool2, schema2 := postgresDB(t)
		sharedDecisions(t, 200, [2]riverdriver.Driver[pgxTx]{riverpgxv5.New(pool1), riverpgxv5.New(pool2)}, [2]string{schema1, schema2})
	})
	t.Run("sqlite", func(t *testing.T) {
		// Fewer on SQLite, whose one connection per database makes each
		// job slower, above all under the race detector.
		sharedDecisions(t, 100, [2]riverdriver.Driver[sqlTx]{riversqlite.New(sqliteDB(t)), riversqlite.New(sqliteDB(t))}, [2]string{})
	})
}
