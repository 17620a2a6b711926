package reboundasynq

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/memstore"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

func TestBreakerOptions(t *testing.T) {
	rule := mustRule(t, fixed(t, time.Second), 3)
	store := memstore.New(breaker.Rules{}, memstore.Options{})
	for _, c := range []struct {
		opts []Option
		want string
	}{
		{[]Option{WithBreaker(store), WithDependency("pay:charge", "payments")}, ""},
		{[]Option{WithBreaker(nil)}, ""},
		{[]Option{WithDependency("pay:charge", "payments")}, `reboundasynq: WithDependency("pay:charge", "payments") without WithBreaker, want a breaker.Store to keep the breaker`},
		{[]Option{WithBreaker(store), WithDependency("", "payments")}, `reboundasynq: WithDependency: kind is empty, want the job kind bound to "payments"`},
	} {
		_, err := New(rule, c.opts...)
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("New(%d options) = %v, want %q", len(c.opts), err, c.want)
		}
	}
}

// breakerRun runs one bound task while its dependency's breaker is open
// for 10s, on a server whose IsFailure is isFailure, and returns the
// recorder, the task's runs and what the error handler was told.
func breakerRun(t *testing.T, isFailure func(*Retrier) func(error) bool) (*reboundtest.Recorder, []runRec, []error, *asynq.TaskInfo) {
	store := memstore.New(breaker.Rules{Default: breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(10s))"))}, memstore.Options{})
	if _, err := store.Record(context.Background(), "payments", breaker.Ticket{}, breaker.Failure); err != nil {
		t.Fatal(err)
	}
	obs := &reboundtest.Recorder{}
	var mu sync.Mutex
	var reports []error
	r := mustNew(t, mustRule(t, fixed(t, time.Second), 3), WithObserver(obs), WithBreaker(store), WithDependency(kind, "payments"),
		WithErrorHandler(func(err error) { mu.Lock(); reports = append(reports, err); mu.Unlock() }))
	rc := newRecorder(func(string, int) error { return nil })
	s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{isFailure: isFailure(r)})
	info, err := s.client.Enqueue(r.NewTask(kind, nil), asynq.Queue("q"), asynq.Retention(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	done := s.waitState(t, info.ID, asynq.TaskStateCompleted, time.Minute)
	mu.Lock()
	defer mu.Unlock()
	return obs, rc.get(info.ID), append([]error(nil), reports...), done
}

// A task bound to a dependency whose breaker is open does not run; asynq
// retries it uncounted (Retrier.IsFailure) once the cool-down is over, and
// its one run is attempt 1.
func TestBreakerDefersUncounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		began := time.Now()
		obs, runs, reports, info := breakerRun(t, func(r *Retrier) func(error) bool { return r.IsFailure })
		if len(runs) != 1 || runs[0].attempt != 1 {
			t.Fatalf("handler runs %+v, want one, attempt 1", runs)
		}
		if at := runs[0].start.Sub(began); at < 10*time.Second || at > 21*time.Second {
			t.Errorf("ran %v after the trip, want after the 10s cool-down and within one more of spread (and a second of rounding)", at)
		}
		if info.Retried != 0 {
			t.Errorf("asynq counted %d retries, want 0: a deferral spends no attempt", info.Retried)
		}
		evs := obs.Events()
		if len(evs) < 2 || evs[0].Result.Counting != observe.Deferred || evs[0].Attempt.Number != 1 {
			t.Fatalf("observer heard %s, want deferred runs at attempt 1, then the success", obs.Story(info.ID))
		}
		var de *observe.DeferredError
		if !errors.As(evs[0].Result.Err, &de) || de.Dependency != "payments" || evs[0].Result.FireAt.After(runs[0].start) {
			t.Errorf("first run told %+v, want a DeferredError for payments firing no later than the run", evs[0].Result)
		}
		if last := evs[len(evs)-1]; last.Result.Err != nil || last.Attempt.Number != 1 {
			t.Errorf("last run told attempt %d %s, want attempt 1 success", last.Attempt.Number, last.Result.Outcome())
		}
		if len(reports) != 0 {
			t.Errorf("error handler told %v, want nothing", reports)
		}
	})
}

// Without Retrier.IsFailure on the server, asynq counts a deferred run as
// a failed attempt: the error handler is told how to fix it.
func TestBreakerWithoutIsFailureIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, runs, reports, info := breakerRun(t, func(*Retrier) func(error) bool { return nil })
		if info.Retried == 0 || len(runs) != 1 {
			t.Fatalf("asynq counted %d retries over %d runs; this test wants asynq to count the deferrals", info.Retried, len(runs))
		}
		if len(reports) == 0 || !strings.Contains(reports[0].Error(), "set asynq.Config.IsFailure to Retrier.IsFailure") {
			t.Errorf("error handler told %v, want the IsFailure hint", reports)
		}
	})
}

// On a task's last allowed run (its retry count at MaxRetry) asynq
// archives any failure, so a deferral would lose it: the run is not held
// back, it runs.
func TestBreakerRunsALastAllowedRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memstore.New(breaker.Rules{Default: breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1h))"))}, memstore.Options{})
		if _, err := store.Record(context.Background(), "payments", breaker.Ticket{}, breaker.Failure); err != nil {
			t.Fatal(err)
		}
		obs := &reboundtest.Recorder{}
		r := mustNew(t, mustRule(t, fixed(t, time.Second), 3), WithObserver(obs), WithBreaker(store), WithDependency(kind, "payments"))
		rc := newRecorder(func(string, int) error { return nil })
		s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{isFailure: r.IsFailure})
		id := s.enqueue(t, nil, map[string]string{"h": "1"}, asynq.MaxRetry(0), asynq.Retention(time.Hour))
		s.waitState(t, id, asynq.TaskStateCompleted, time.Minute)
		if runs := rc.get(id); len(runs) != 1 {
			t.Fatalf("handler ran %d times, want once", len(runs))
		}
		if got := obs.Story(id); got != "1 success" {
			t.Errorf("observer heard:\n%s\nwant the one run, not deferred", got)
		}
	})
}
