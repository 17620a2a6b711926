package reboundasynq

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

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
