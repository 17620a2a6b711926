package reboundasynq

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// panicky is a foreign policy that panics on every call.
type panicky struct{}

func (panicky) Delay(int, backoff.Source) time.Duration { panic("policy boom") }
func (panicky) Max() time.Duration                      { panic("policy boom") }
func (panicky) String() string                          { return "panicky" }

// TestPanickingPolicy: the worker survives a policy that panics, in the
// middleware and in RetryDelay; the retry falls back to the fallback delay,
// the cap still holds, and the panic is reported.
func TestPanickingPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reported errs
		r := mustNew(t, mustRule(t, panicky{}, 3), WithErrorHandler(reported.add), WithFallbackDelay(2*time.Second))
		rc := newRecorder(func(string, int) error { return errBoom })
		s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
		id := s.enqueue(t, nil, nil, asynq.MaxRetry(10))
		s.waitState(t, id, asynq.TaskStateArchived, time.Minute)
		runs := rc.get(id)
		if len(runs) != 3 {
			t.Fatalf("handler ran %d times, want 3", len(runs))
		}
		for i := 1; i < len(runs); i++ {
			if gap := runs[i].start.Sub(runs[i-1].end); gap < 2*time.Second {
				t.Errorf("retry %d ran %v after the failure, before the 2s fallback", i, gap)
			}
		}
		var pe *observe.PanicError
		if got := reported.list(); len(got) < 2 || !errors.As(got[0], &pe) || pe.Op != "policy" || len(pe.Stack) == 0 {
			t.Fatalf("reported %v, want a policy *observe.PanicError per failed attempt", got)
		}
	})
	// RetryDelay on its own (no middleware in front) survives too.
	var reported errs
	r := mustNew(t, mustRule(t, panicky{}, 3), WithErrorHandler(reported.add), WithFallbackDelay(2*time.Second))
	d := r.RetryDelay(0, errBoom, asynq.NewTask(kind, nil))
	if d < 2*time.Second || d > 3*time.Second {
		t.Errorf("RetryDelay with a panicking policy = %v, want the 2s fallback rounded up to a whole second", d)
	}
	if len(reported.list()) != 1 {
		t.Errorf("reported %v, want one panic", reported.list())
	}
}

// TestHandlerPanic: a panicking handler is a failed attempt under the rule,
// visible as *observe.PanicError to the ErrorHandler.
func TestHandlerPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &reboundtest.Recorder{}
		r := mustNew(t, mustRule(t, fixed(t, time.Second), 2), WithGiveUp(rec.GiveUp))
		seen := make(chan error, 4)
		rc := newRecorder(func(_ string, a int) error {
			if a == 1 {
				panic("handler boom")
			}
			return nil
		})
		s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{
			errorHandler: func(_ context.Context, _ *asynq.Task, err error) { seen <- err },
		})
		id := s.enqueue(t, nil, nil, asynq.Retention(time.Hour))
		s.waitState(t, id, asynq.TaskStateCompleted, time.Minute)
		err := <-seen
		var pe *observe.PanicError
		if !errors.As(err, &pe) || pe.Op != "handler" || pe.Value != "handler boom" {
			t.Fatalf("ErrorHandler saw %v, want a handler *observe.PanicError", err)
		}
		if g := rec.GiveUps(); len(g) != 0 {
			t.Errorf("give-up hook told %+v for a task that succeeded", g)
		}
		// The panicking run never reached the recorder; the second did.
		if runs := rc.get(id); len(runs) != 1 || runs[0].attempt != 2 {
			t.Fatalf("recorded runs %+v, want only attempt 2", runs)
		}
	})
}

// TestObserverPanics: an observer that panics never stops the task or the
// worker; the panic is reported.
func TestObserverPanics(t *testing.T) {
	for _, where := range []string{"started", "ended"} {
		t.Run(where, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var reported errs
				r := mustNew(t, mustRule(t, fixed(t, time.Second), 3), WithObserver(panicking{&reboundtest.Recorder{}, where}), WithErrorHandler(reported.add))
				rc := newRecorder(func(_ string, a int) error {
					if a < 3 {
						return errBoom
					}
					return nil
				})
				s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
				id := s.enqueue(t, nil, nil, asynq.Retention(time.Hour))
				s.waitState(t, id, asynq.TaskStateCompleted, time.Minute)
				var pe *observe.PanicError
				got := reported.list()
				if len(got) != 3 || !errors.As(got[0], &pe) || pe.Op != "observer" {
					t.Fatalf("reported %v, want 3 observer panics", got)
				}
			})
		})
	}
}

// TestDeadlineExceededCap: when the last attempt outlives its timeout,
// asynq retries the task on its own (the middleware's SkipRetry never
// reaches it); the delivery after the last attempt is archived without
// running the handler and without being reported as another attempt.
func TestDeadlineExceededCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &reboundtest.Recorder{}
		r := mustNew(t, mustRule(t, fixed(t, time.Second), 2), WithObserver(obs), WithGiveUp(obs.GiveUp))
		rc := newRecorder(func(string, int) error { return nil })
		h := func(ctx context.Context, task *asynq.Task) error {
			_ = rc.handle(ctx, task)
			<-ctx.Done()
			time.Sleep(10 * time.Millisecond) // let asynq's ctx.Done branch win
			return ctx.Err()
		}
		s := start(t, miniRedis(t), "q", r, h, serverOpts{})
		id := s.enqueue(t, nil, nil, asynq.MaxRetry(10), asynq.Timeout(3*time.Second))
		info := s.waitState(t, id, asynq.TaskStateArchived, 2*time.Minute)
		if n := len(rc.get(id)); n != 2 {
			t.Fatalf("handler ran %d times, want 2 (MaxAttempts)", n)
		}
		if want := (&ExhaustedError{TaskID: id, Attempt: 3, MaxAttempts: 2}).Error(); info.LastErr != want {
			t.Errorf("LastErr %q, want %q", info.LastErr, want)
		}
		time.Sleep(5 * time.Second)
		if got := obs.Story(id); got != "1 retry 1s\n2 exhausted" {
			t.Errorf("story:\n%s\nwant attempt 2 exhausted once, no third attempt", got)
		}
		if g := obs.GiveUps(); len(g) != 1 || g[0].Attempt.Number != 2 {
			t.Errorf("give-up hook told %+v, want once, after attempt 2", g)
		}
	})
}

// TestWithoutMiddleware: RetryDelay alone gives the rule's delay for
// attempt n+1, landing on a whole second, never shorter.
func TestWithoutMiddleware(t *testing.T) {
	exp := backoff.Must(backoff.Exponential(300*time.Millisecond, time.Minute))
	r := mustNew(t, mustRule(t, exp, 5))
	for n := range 8 {
		now := time.Now()
		d := r.RetryDelay(n, errBoom, asynq.NewTask(kind, nil))
		want := backoff.Delay(exp, n+1, backoff.Source{})
		// asynq stores time.Now().Add(d).Unix(): that second must not be
		// before the delay has passed.
		stored := time.Unix(time.Now().Add(d).Unix(), 0)
		if d < want || d > want+time.Second+50*time.Millisecond {
			t.Errorf("n=%d: delay %v, want %v rounded up to a whole second", n, d, want)
		}
		if stored.Before(now.Add(want)) {
			t.Errorf("n=%d: stored second %v is before now+delay %v", n, stored, now.Add(want))
		}
	}
	// The same through a server with no middleware: numbering still holds.
	synctest.Test(t, func(t *testing.T) {
		rc := newRecorder(func(string, int) error { return errBoom })
		s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{noMiddleware: true})
		id := s.enqueue(t, nil, nil, asynq.MaxRetry(4))
		s.waitState(t, id, asynq.TaskStateArchived, 2*time.Minute)
		runs := rc.get(id)
		if len(runs) != 5 {
			t.Fatalf("ran %d times, want 5", len(runs))
		}
		for i := 1; i < len(runs); i++ {
			if gap, want := runs[i].start.Sub(runs[i-1].end), backoff.Delay(exp, i, backoff.Source{}); gap < want {
				t.Errorf("retry %d after %v, before the %v delay", i, gap, want)
			}
		}
	})
}

// TestIsFailure: errors the server does not count as failures are retried
// without using up the cap, and the observer hears them as snoozes, not as
// failed attempts.
func TestIsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errBusy := errors.New("busy")
		notBusy := func(err error) bool { return !errors.Is(err, errBusy) }
		obs := &reboundtest.Recorder{}
		r := mustNew(t, mustRule(t, fixed(t, time.Second), 2), WithIsFailure(notBusy), WithObserver(obs))
		var calls int
		rc := newRecorder(func(string, int) error {
			calls++
			if calls <= 3 {
				return errBusy
			}
			return errBoom
		})
		s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{isFailure: notBusy})
		id := s.enqueue(t, nil, nil, asynq.MaxRetry(10))
		s.waitState(t, id, asynq.TaskStateArchived, time.Minute)
		runs := rc.get(id)
		// 3 busy runs (attempt 1 each time), then attempt 1 and 2 fail.
		want := []int{1, 1, 1, 1, 2}
		if len(runs) != len(want) {
			t.Fatalf("ran %d times, want %d", len(runs), len(want))
		}
		for i, w := range want {
			if runs[i].attempt != w {
				t.Errorf("run %d attempt %d, want %d", i, runs[i].attempt, w)
			}
		}
		attempts, results := results(obs)
		wantOutcomes := []string{"snoozed", "snoozed", "snoozed", "retry", "exhausted"}
		if len(results) != len(wantOutcomes) {
			t.Fatalf("observer heard %d runs, want %d", len(results), len(wantOutcomes))
		}
		for i, res := range results {
			if got := res.Outcome(); got != wantOutcomes[i] || attempts[i].Number != want[i] {
				t.Errorf("run %d: observer heard attempt %d %s, want attempt %d %s", i+1, attempts[i].Number, got, want[i], wantOutcomes[i])
			}
			if i >= 3 {
				continue
			}
			// A snooze keeps the error for information and says when asynq
			// runs the task again: no earlier than the next run started.
			if res.Counting != observe.Snoozed || !errors.Is(res.Err, errBusy) || !res.Decision.Retry() || res.FireAt.IsZero() {
				t.Errorf("run %d: result %+v, want a snooze with the busy error and a fire time", i+1, res)
			}
			if runs[i+1].start.Before(res.FireAt) {
				t.Errorf("run %d started at %v, before the snooze's fire time %v", i+2, runs[i+1].start, res.FireAt)
			}
		}
	})
}

// TestIsFailureOnLastRun: on the task's last allowed run asynq archives it
// whatever IsFailure says, and the observer hears it exhausted, not snoozed.
func TestIsFailureOnLastRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errBusy := errors.New("busy")
		notBusy := func(err error) bool { return !errors.Is(err, errBusy) }
		obs := &reboundtest.Recorder{}
		r := mustNew(t, mustRule(t, fixed(t, time.Second), 2), WithIsFailure(notBusy), WithObserver(obs))
		rc := newRecorder(func(_ string, attempt int) error {
			if attempt == 1 {
				return errBoom
			}
			return errBusy
		})
		s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{isFailure: notBusy})
		id := s.enqueue(t, nil, nil, asynq.MaxRetry(1))
		s.waitState(t, id, asynq.TaskStateArchived, time.Minute)
		if runs := rc.get(id); len(runs) != 2 {
			t.Fatalf("ran %d times, want 2 (asynq archives the busy last run)", len(runs))
		}
		_, results := results(obs)
		if len(results) != 2 || results[0].Outcome() != "retry" || results[1].Outcome() != "exhausted" || results[1].Counting != observe.Counted {
			t.Fatalf("observer heard %+v, want a retry then exhausted", results)
		}
	})
}

// TestNewErrors: bad input is an error that names the option and says
// what was expected; nil options and nil values mean "none" or the default.
func TestNewErrors(t *testing.T) {
	rule := mustRule(t, fixed(t, time.Second), 2)
	for _, tc := range []struct {
		name string
		rule backoff.Rule
		opts []Option
		want string
	}{
		{"zero rule", backoff.Rule{}, nil, "reboundasynq: the rule is the zero backoff.Rule, want one built with backoff.NewRule"},
		{"negative fallback", rule, []Option{WithFallbackDelay(-time.Second)}, "reboundasynq: WithFallbackDelay: -1s is negative, want > 0"},
		{"zero fallback", rule, []Option{WithFallbackDelay(0)}, "reboundasynq: WithFallbackDelay: 0s is zero, want > 0"},
		{"empty type", rule, []Option{WithKindRule("", rule)}, "reboundasynq: WithKindRule: task type is empty, want an asynq task type"},
		{"zero type rule", rule, []Option{WithKindRule("email:send", backoff.Rule{})}, `reboundasynq: WithKindRule("email:send"): the rule is the zero backoff.Rule, want one built with backoff.NewRule`},
	} {
		if _, err := New(tc.rule, tc.opts...); err == nil || err.Error() != tc.want {
			t.Errorf("%s: New = %v, want %q", tc.name, err, tc.want)
		}
	}
	r, err := New(rule, nil, WithObserver(nil), WithGiveUp(nil), WithErrorHandler(nil), WithKey(nil), WithIsFailure(nil))
	if err != nil {
		t.Fatalf("New with nil options and nil values = %v, want no error", err)
	}
	if r.notify.Observer != nil || r.notify.GiveUp != nil || r.notify.OnError != nil || r.key != nil || r.isFailure != nil || r.fallback != DefaultFallbackDelay {
		t.Errorf("nil values did not leave the defaults: %+v", r)
	}
}
