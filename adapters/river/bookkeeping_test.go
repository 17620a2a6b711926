package reboundriver

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// cancelErrors is an ErrorHandler that cancels every failed job.
type cancelErrors struct{}

func (cancelErrors) HandleError(context.Context, *rivertype.JobRow, error) *river.ErrorHandlerResult {
	return &river.ErrorHandlerResult{SetCancelled: true}
}

func (cancelErrors) HandlePanic(context.Context, *rivertype.JobRow, any, string) *river.ErrorHandlerResult {
	return &river.ErrorHandlerResult{SetCancelled: true}
}

// swallow is a middleware that turns every failure into a success.
type swallow struct{ river.MiddlewareDefaults }

func (*swallow) Work(ctx context.Context, _ *rivertype.JobRow, doInner func(context.Context) error) error {
	_ = doInner(ctx)
	return nil
}

// waitPending waits until r holds no entry, or fails t.
func waitPending(t testing.TB, r *Retrier, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for r.Pending() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Pending = %d %v after the jobs ended, want 0", r.Pending(), timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pendingAfterEndedAttempts runs failing jobs whose retry River never asks
// for, because an ErrorHandler cancels them or a middleware outside the
// Retrier swallows their error, and checks the Retrier forgets them.
func pendingAfterEndedAttempts[TTx any](t *testing.T, newDriver func(t testing.TB) (riverdriver.Driver[TTx], string)) {
	const n = 20
	run := func(t *testing.T, configure func(cfg *river.Config, r *Retrier), want rivertype.JobState) (*reboundtest.Recorder, *atomic.Int64) {
		o := &reboundtest.Recorder{}
		gaveUp := new(atomic.Int64)
		r, _ := New(mustRule(t, backoff.Must(backoff.Fixed(time.Hour)), 3), quietErrors, WithObserver(o),
			WithGiveUp(func(context.Context, observe.GiveUp) { gaveUp.Add(1) }))
		workers := river.NewWorkers()
		river.AddWorker(workers, &scriptWorker{})
		driver, schema := newDriver(t)
		cfg := clientConfig(t, r, schema, workers, 10, testPoll)
		configure(cfg, r)
		client := startClient(t, driver, cfg)
		params := make([]river.InsertManyParams, n)
		for i := range params {
			params[i] = river.InsertManyParams{Args: scriptArgs{Mode: "fail"}}
		}
		if _, err := client.InsertMany(context.Background(), params); err != nil {
			t.Fatal(err)
		}
		waitAllInState(t, client, n, want, time.Minute)
		waitPending(t, r, 10*time.Second)
		return o, gaveUp
	}
	t.Run("ErrorHandlerCancels", func(t *testing.T) {
		o, gaveUp := run(t, func(cfg *river.Config, _ *Retrier) { cfg.ErrorHandler = cancelErrors{} }, rivertype.JobStateCancelled)
		// The ErrorHandler's cancel is River's decision, not rebound's: it
		// is told as the engine's, and rebound gives nothing up.
		if gaveUp.Load() != 0 {
			t.Errorf("give-up hook called %d times for %d jobs an ErrorHandler cancelled, want none (rebound did not give them up)", gaveUp.Load(), n)
		}
		if len(ended(o)) != n {
			t.Fatalf("observer heard %d endings, want %d", len(ended(o)), n)
		}
		for _, res := range ended(o) {
			if res.Outcome() != "engine" || !errors.Is(res.Err, errScripted) {
				t.Fatalf("a job its ErrorHandler cancelled was reported %s (%v), want engine with its error", res.Outcome(), res.Err)
			}
		}
	})
	t.Run("MiddlewareSwallows", func(t *testing.T) {
		run(t, func(cfg *river.Config, r *Retrier) { cfg.Middleware = []rivertype.Middleware{&swallow{}, r} }, rivertype.JobStateCompleted)
	})
}

func TestPendingAfterEndedAttempts(t *testing.T) {
	t.Run("postgres", func(t *testing.T) { pendingAfterEndedAttempts(t, postgresDriver) })
	t.Run("sqlite", func(t *testing.T) { pendingAfterEndedAttempts(t, sqliteDriver) })
}

// A decision River never asks for expires on its own, with no further call
// into the Retrier: shortly after the attempt's context ends, or after a
// few minutes when it never does.
func TestIdleEntriesExpire(t *testing.T) {
	rule := mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 5)
	t.Run("ContextNeverEnds", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r, _ := New(rule, quietErrors)
			_ = r.Work(context.Background(), &rivertype.JobRow{ID: 1, Attempt: 1}, func(context.Context) error { return errBoom })
			if r.Pending() != 1 {
				t.Fatalf("Pending = %d after a failed attempt, want 1", r.Pending())
			}
			time.Sleep(10 * time.Minute)
			synctest.Wait()
			if r.Pending() != 0 {
				t.Fatalf("Pending = %d ten idle minutes later, want 0", r.Pending())
			}
		})
	})
	t.Run("ContextEnds", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r, _ := New(rule, quietErrors)
			ctx, cancel := context.WithCancelCause(context.Background())
			_ = r.Work(ctx, &rivertype.JobRow{ID: 1, Attempt: 1}, func(context.Context) error { return errBoom })
			cancel(errors.New("executor finished"))
			time.Sleep(10 * time.Second)
			synctest.Wait()
			if r.Pending() != 0 {
				t.Fatalf("Pending = %d ten seconds after the attempt's context ended, want 0", r.Pending())
			}
		})
	})
}
