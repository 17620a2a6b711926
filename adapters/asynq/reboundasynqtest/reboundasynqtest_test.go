package reboundasynqtest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/adapters/asynq/reboundasynqtest"
	"github.com/rebound-go/rebound/backoff"
)

// TestStoryOnFakeTime runs a handler that fails twice under a rule with a
// one-minute delay, in a synctest bubble: the retries take no real time,
// each attempt is reported with the fire time asynq then honours (never
// early, on the whole second in round-up mode), and the story is exact.
func TestStoryOnFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Minute)), 3))
		h := asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
			if n, _ := asynq.GetRetryCount(ctx); n < 2 {
				return errors.New("not yet")
			}
			return nil
		})
		s := reboundasynqtest.NewServer(t, nil, h, rule)
		id := s.Enqueue(t, "sync", nil)
		for n := 1; n <= 2; n++ {
			ev := s.Attempt(t, id, n)
			if ev.Result.Outcome() != "retry" || ev.Result.Decision.Delay != time.Minute || ev.Result.FireAt.Nanosecond() != 0 {
				t.Fatalf("attempt %d: %+v, want a retry after 1m on a whole second", n, ev.Result)
			}
			if ev.Result.FireAt.Before(ev.EndedAt.Add(time.Minute)) || ev.Result.FireAt.After(ev.EndedAt.Add(time.Minute+time.Second)) {
				t.Errorf("attempt %d ended %v, told FireAt %v, want the next whole second after a minute", n, ev.EndedAt, ev.Result.FireAt)
			}
			if next := s.Attempt(t, id, n+1); next.StartedAt.Before(ev.Result.FireAt) {
				t.Errorf("attempt %d started %v, before the FireAt %v attempt %d was told", n+1, next.StartedAt, ev.Result.FireAt, n)
			}
		}
		if info := s.WaitState(t, id, asynq.TaskStateCompleted); info.Retried != 2 {
			t.Errorf("task completed with Retried %d, want 2", info.Retried)
		}
		if got := s.Recorder.Story(id); got != "1 retry 1m0s\n2 retry 1m0s\n3 success" {
			t.Errorf("story:\n%s", got)
		}
	})
}

// TestConfigKept: the user's asynq config is used (here, its IsFailure),
// with the Retrier's RetryDelayFunc.
func TestConfigKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errBusy := errors.New("busy")
		var mu sync.Mutex
		var seen []error
		cfg := &asynq.Config{
			IsFailure: func(err error) bool { return !errors.Is(err, errBusy) },
			ErrorHandler: asynq.ErrorHandlerFunc(func(_ context.Context, _ *asynq.Task, err error) {
				mu.Lock()
				seen = append(seen, err)
				mu.Unlock()
			}),
		}
		rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Second)), 2))
		h := asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return errBusy })
		s := reboundasynqtest.NewServer(t, cfg, h, rule)
		id := s.Enqueue(t, "poll", nil)
		if ev := s.Attempt(t, id, 1); ev.Result.Outcome() != "snoozed" {
			t.Errorf("busy run reported %s, want snoozed (the config's IsFailure)", ev.Result.Outcome())
		}
		s.Attempt(t, id, 1)
		time.Sleep(time.Second)
		mu.Lock()
		defer mu.Unlock()
		if info := s.Task(t, id); info.Retried != 0 || len(seen) == 0 {
			t.Errorf("after busy runs: Retried %d, ErrorHandler saw %v; want uncounted failures seen by the config's ErrorHandler", info.Retried, seen)
		}
	})
}
