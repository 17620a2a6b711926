package reboundasynq

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/reboundtest"
)

var errBoom = errors.New("boom")

// TestNumbering checks that asynq's retry count n is rebound's attempt n+1,
// that the observer sees every attempt with its number and cap, and that the
// task is archived after MaxAttempts runs, each retry no earlier than planned.
func TestNumbering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &reboundtest.Recorder{}
		r := mustNew(t, mustRule(t, fixed(t, 1500*time.Millisecond), 4), WithObserver(obs), WithGiveUp(obs.GiveUp))
		rc := newRecorder(func(string, int) error { return errBoom })
		s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
		id := s.enqueue(t, []byte("p"), map[string]string{"h": "1"}, r.MaxRetry())
		s.waitState(t, id, asynq.TaskStateArchived, time.Minute)

		runs := rc.get(id)
		if len(runs) != 4 {
			t.Fatalf("handler ran %d times, want 4", len(runs))
		}
		for i, run := range runs {
			if run.attempt != i+1 {
				t.Errorf("run %d saw attempt %d, want %d", i, run.attempt, i+1)
			}
			if i > 0 {
				if gap := run.start.Sub(runs[i-1].end); gap < 1500*time.Millisecond {
					t.Errorf("attempt %d started %v after attempt %d ended, before the 1.5s delay", i+1, gap, i)
				}
			}
		}
		as, res := results(obs)
		if len(as) != 4 {
			t.Fatalf("observer saw %d ended attempts, want 4", len(as))
		}
		if g := obs.GiveUps(); len(g) != 1 || g[0].Attempt.JobID != id || g[0].Attempt.Number != 4 || g[0].Outcome != backoff.OutcomeExhausted || !errors.Is(g[0].Err, errBoom) {
			t.Errorf("give-up hook told %+v, want task %s given up once, exhausted after attempt 4", g, id)
		}
		for i, a := range as {
			if a.System != "asynq" || a.Queue != "q" || a.JobID != id || a.Kind != kind || a.Number != i+1 || a.MaxAttempts != 4 {
				t.Errorf("attempt %d reported as %+v", i+1, a)
			}
			if a.Carrier == nil || a.Carrier.Get("h") != "1" {
				t.Errorf("attempt %d carrier %v, want the task headers", i+1, a.Carrier)
			}
			want := backoff.OutcomeRetry
			if i == 3 {
				want = backoff.OutcomeExhausted
			}
			if res[i].Decision.Outcome != want || !errors.Is(res[i].Err, errBoom) {
				t.Errorf("attempt %d result %+v, want %v of errBoom", i+1, res[i], want)
			}
			if want == backoff.OutcomeRetry {
				if res[i].FireAt.Before(runs[i].end.Add(1500*time.Millisecond)) || res[i].FireAt.Nanosecond() != 0 {
					t.Errorf("attempt %d FireAt %v: want a whole second at or after end+1.5s (%v)", i+1, res[i].FireAt, runs[i].end.Add(1500*time.Millisecond))
				}
				if got := runs[i+1].start; got.Before(res[i].FireAt) {
					t.Errorf("attempt %d started at %v, before the reported FireAt %v", i+2, got, res[i].FireAt)
				}
			}
		}
	})
}

// TestMaxRetryAboveRule enqueues with asynq's MaxRetry far above the rule's
// cap: the rule wins, the task runs exactly MaxAttempts times.
func TestMaxRetryAboveRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := mustNew(t, mustRule(t, fixed(t, time.Second), 3))
		rc := newRecorder(func(string, int) error { return errBoom })
		s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
		id := s.enqueue(t, nil, nil, asynq.MaxRetry(25))
		info := s.waitState(t, id, asynq.TaskStateArchived, time.Minute)
		if n := len(rc.get(id)); n != 3 {
			t.Fatalf("handler ran %d times, want 3 (rule) despite MaxRetry 25", n)
		}
		if info.LastErr != errBoom.Error() {
			t.Errorf("archived with LastErr %q, want the handler's %q", info.LastErr, errBoom.Error())
		}
	})
}

// TestMaxRetryBelowRule: a task enqueued with a MaxRetry below the rule's
// cap stops at asynq's cap (the middleware cannot raise it after the
// fact): MaxAttempts is min(rule, MaxRetry+1), and the observer and the
// give-up hook are told that smaller cap and an exhausted end.
func TestMaxRetryBelowRule(t *testing.T) {
	for _, k := range []int{0, 1} {
		t.Run(fmt.Sprintf("MaxRetry(%d)", k), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &reboundtest.Recorder{}
				r := mustNew(t, mustRule(t, fixed(t, time.Second), 5), WithObserver(obs), WithGiveUp(obs.GiveUp))
				rc := newRecorder(func(string, int) error { return errBoom })
				s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
				id := s.enqueue(t, nil, nil, asynq.MaxRetry(k))
				s.waitState(t, id, asynq.TaskStateArchived, time.Minute)
				if n := len(rc.get(id)); n != k+1 {
					t.Fatalf("handler ran %d times, want %d (MaxRetry %d)", n, k+1, k)
				}
				as, res := results(obs)
				last := len(as) - 1
				for _, a := range as {
					if a.MaxAttempts != k+1 {
						t.Errorf("attempt %d reported MaxAttempts %d, want %d", a.Number, a.MaxAttempts, k+1)
					}
				}
				if res[last].Decision.Outcome != backoff.OutcomeExhausted {
					t.Errorf("last attempt reported %s, want exhausted", res[last].Outcome())
				}
				if g := obs.GiveUps(); len(g) != 1 || g[0].Attempt.Number != k+1 {
					t.Errorf("give-up hook told %+v, want once after attempt %d", g, k+1)
				}
			})
		})
	}
}

// TestMaxRetryOption: the enqueue option gives asynq one retry more than
// the rule allows, so asynq asks rebound about every failure of the last
// attempt.
func TestMaxRetryOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := mustNew(t, mustRule(t, fixed(t, time.Second), 7))
		s := start(t, miniRedis(t), "q", r, func(ctx context.Context, _ *asynq.Task) error { return nil }, serverOpts{})
		s.insp.PauseQueue(s.queue)
		id := s.enqueue(t, nil, nil, r.MaxRetry())
		if info := s.info(t, id); info == nil || info.MaxRetry != 7 {
			t.Fatalf("task info %+v, want MaxRetry 7 (one spare retry)", info)
		}
	})
}

// TestPermanent: a permanent error archives at once with the handler's
// message; asynq.SkipRetry does too; RevokeTask deletes.
func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		state asynq.TaskState // 0: deleted
	}{
		{"permanent", backoff.Permanent(errBoom), asynq.TaskStateArchived},
		{"wrapped-permanent", fmt.Errorf("ctx: %w", backoff.Permanent(errBoom)), asynq.TaskStateArchived},
		{"skip-retry", fmt.Errorf("%w: %w", errBoom, asynq.SkipRetry), asynq.TaskStateArchived},
		{"revoke", asynq.RevokeTask, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &reboundtest.Recorder{}
				r := mustNew(t, mustRule(t, fixed(t, time.Second), 5), WithObserver(obs), WithGiveUp(obs.GiveUp))
				rc := newRecorder(func(string, int) error { return tc.err })
				s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
				id := s.enqueue(t, nil, nil, asynq.MaxRetry(10))
				if tc.state != 0 {
					info := s.waitState(t, id, tc.state, time.Minute)
					if info.LastErr != tc.err.Error() {
						t.Errorf("LastErr %q, want %q", info.LastErr, tc.err.Error())
					}
				} else {
					for len(rc.get(id)) == 0 {
						time.Sleep(100 * time.Millisecond)
					}
					time.Sleep(time.Second)
					if info := s.info(t, id); info != nil {
						t.Fatalf("revoked task still exists as %v", info.State)
					}
				}
				time.Sleep(5 * time.Second)
				if n := len(rc.get(id)); n != 1 {
					t.Fatalf("handler ran %d times, want 1", n)
				}
				if _, res := results(obs); len(res) != 1 || res[0].Decision.Outcome != backoff.OutcomePermanent {
					t.Errorf("observer got %+v, want one permanent result", res)
				}
				if g := obs.GiveUps(); len(g) != 1 || g[0].Outcome != backoff.OutcomePermanent {
					t.Errorf("give-up hook told %+v, want one permanent give-up", g)
				}
			})
		})
	}
}
