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

func (panicky) Max() time.Duration { panic("policy boom") }

func (panicky) String() string { return "panicky" }

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
