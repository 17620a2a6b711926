package nativetest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/adapters/native/nativetest"
	"github.com/rebound-go/rebound/backoff"
)

// Each retry's fire time is the clock plus the rule's delay for that job
// and attempt (jitter keyed by the job's ID), rounded up to the
// millisecond; the job does not run a millisecond before it, and runs once
// the clock reaches it.
func TestScheduleFollowsTheRule(t *testing.T) {
	policy := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(time.Second, time.Minute))))
	rule := backoff.Must(backoff.NewRule(policy, 6))
	w := nativetest.NewWorker(t, rule, func(ctx context.Context, j *native.Job) error {
		if j.Attempt < 5 {
			return errors.New("down")
		}
		return nil
	})
	for _, id := range []string{"a", "b"} {
		w.Enqueue(nil, native.WithID(id))
		for n := 1; ; n++ {
			ev := w.Next(id)
			if ev.Attempt.Number != n {
				t.Fatalf("job %s: attempt %d ended, want %d", id, ev.Attempt.Number, n)
			}
			if n == 5 {
				if ev.Result.Err != nil || ev.Result.Outcome() != "success" {
					t.Fatalf("job %s attempt 5: %+v, want success", id, ev.Result)
				}
				break
			}
			d := backoff.Delay(policy, n, backoff.Key(id))
			want := w.Now().Add(d.Truncate(time.Millisecond))
			if d%time.Millisecond != 0 {
				want = want.Add(time.Millisecond)
			}
			if !ev.Result.FireAt.Equal(want) || ev.Result.Decision.Delay != d {
				t.Fatalf("job %s attempt %d: delay %s, fire at %s; want %s and %s", id, n, ev.Result.Decision.Delay, ev.Result.FireAt, d, want)
			}
			w.AdvanceTo(want.Add(-time.Millisecond))
			if j := w.Job(id); j.State != native.StateDelayed || j.Attempts != n {
				t.Fatalf("job %s 1ms before its fire time: %v after %d attempts, want still delayed after %d", id, j.State, j.Attempts, n)
			}
			w.AdvanceTo(want)
		}
	}
}

// A delayed first run waits for the clock; a job given up is in the
// recorder's give-ups by the time Next returns its last attempt.
func TestDelayAndGiveUp(t *testing.T) {
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Minute)), 2))
	w := nativetest.NewWorker(t, rule, func(ctx context.Context, j *native.Job) error {
		return backoff.Permanent(errors.New("bad address"))
	})
	id := w.Enqueue([]byte("x"), native.WithDelay(time.Hour))
	if j := w.Job(id); j.State != native.StateDelayed || !j.NextFireAt.Equal(nativetest.Epoch().Add(time.Hour)) {
		t.Fatalf("delayed job: %+v, want delayed until an hour after the epoch", j)
	}
	w.Advance(time.Hour)
	ev := w.Next(id)
	if ev.Result.Decision.Outcome != backoff.OutcomePermanent {
		t.Fatalf("attempt 1: %+v, want permanent", ev.Result)
	}
	if g := w.Recorder.GiveUps(); len(g) != 1 || g[0].Attempt.JobID != id || g[0].Outcome != backoff.OutcomePermanent {
		t.Fatalf("give-ups %+v, want the job's one", g)
	}
	if !ev.StartedAt.Equal(nativetest.Epoch().Add(time.Hour)) {
		t.Errorf("attempt started at %s by the recorder's clock, want the worker's clock", ev.StartedAt)
	}
}

// failTB records a test's failures instead of failing it.
type failTB struct {
	testing.TB
	mu     sync.Mutex
	failed []string
}

func (f *failTB) Helper() {}

func (f *failTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = append(f.failed, fmt.Sprintf(format, args...))
}

// Next fails the test, saying why, when the job does not run: here it
// waits for a fire time the clock has not reached.
func TestNextSaysWhyNothingRan(t *testing.T) {
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Minute)), 3))
	ft := &failTB{TB: t}
	w := nativetest.NewWorker(ft, rule, func(ctx context.Context, j *native.Job) error { return errors.New("down") })
	w.Timeout = 200 * time.Millisecond
	id := w.Enqueue(nil)
	if ev := w.Next(id); ev.Result.FireAt.IsZero() {
		t.Fatalf("attempt 1: %+v, want a retry", ev)
	}
	w.Next(id) // the clock never reaches the retry
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if len(ft.failed) != 1 || !strings.Contains(ft.failed[0], "attempt 2 of job "+id+" did not end") ||
		!strings.Contains(ft.failed[0], "delayed, due at 2030-01-01T00:01:00Z") {
		t.Errorf("failures %q, want one saying attempt 2 did not run and the job is due at 00:01", ft.failed)
	}
}

// The kit runs inside a testing/synctest bubble too: the worker's own
// timers then run on the bubble's fake time.
func TestInSynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Second)), 3))
		w := nativetest.NewWorker(t, rule, func(ctx context.Context, j *native.Job) error {
			if j.Attempt == 1 {
				return errors.New("once")
			}
			return nil
		})
		id := w.Enqueue(nil)
		w.AdvanceTo(w.Next(id).Result.FireAt)
		if ev := w.Next(id); ev.Attempt.Number != 2 || ev.Result.Err != nil {
			t.Fatalf("attempt 2: %+v", ev)
		}
	})
}
