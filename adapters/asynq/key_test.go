package reboundasynq

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// TestWithKey keys jitter by a business ID in the payload: two tasks with
// different task IDs but one business ID get the same decision, the one the
// core gives for that key; a panicking key function falls back to the task
// ID and is reported.
func TestWithKey(t *testing.T) {
	jit := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(time.Second, time.Minute))))
	rule := mustRule(t, jit, 2)

	t.Run("business key", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			obs := &reboundtest.Recorder{}
			r := mustNew(t, rule, WithObserver(obs), WithKey(func(task *asynq.Task, _ string) backoff.Source {
				return backoff.Key(string(task.Payload()))
			}))
			rc := newRecorder(func(string, int) error { return errBoom })
			s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
			a := s.enqueue(t, []byte("order-7"), nil)
			b := s.enqueue(t, []byte("order-7"), nil)
			s.waitState(t, a, asynq.TaskStateArchived, time.Hour)
			s.waitState(t, b, asynq.TaskStateArchived, time.Hour)

			want := rule.Decide(1, errBoom, backoff.Key("order-7"))
			if want.Delay == rule.Decide(1, errBoom, backoff.Key(a)).Delay {
				t.Fatalf("test is blind: key %q and task ID %q give one delay", "order-7", a)
			}
			as, res := results(obs)
			seen := 0
			for i, at := range as {
				if at.Number != 1 {
					continue
				}
				seen++
				if res[i].Decision != want {
					t.Errorf("task %s attempt 1 decided %+v, want %+v (keyed by the payload)", at.JobID, res[i].Decision, want)
				}
			}
			if seen != 2 {
				t.Fatalf("observer saw %d first attempts, want 2", seen)
			}
		})
	})

	t.Run("panicking key", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			obs := &reboundtest.Recorder{}
			reported := &errs{}
			r := mustNew(t, rule, WithObserver(obs), WithErrorHandler(reported.add),
				WithKey(func(*asynq.Task, string) backoff.Source { panic("key boom") }))
			rc := newRecorder(func(string, int) error { return errBoom })
			s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
			id := s.enqueue(t, []byte("p"), nil)
			s.waitState(t, id, asynq.TaskStateArchived, time.Hour)

			as, res := results(obs)
			if len(as) != 2 || as[0].Number != 1 {
				t.Fatalf("observer saw %+v, want attempts 1 and 2", as)
			}
			if want := rule.Decide(1, errBoom, backoff.Key(id)); res[0].Decision != want {
				t.Errorf("attempt 1 decided %+v, want the task-ID default %+v", res[0].Decision, want)
			}
			var pe *observe.PanicError
			if list := reported.list(); len(list) == 0 || !errors.As(list[0], &pe) || pe.Op != "key" {
				t.Errorf("error handler got %v, want a *observe.PanicError with Op \"key\"", list)
			}
		})
	})
}
