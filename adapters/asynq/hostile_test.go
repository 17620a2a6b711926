package reboundasynq

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/reboundtest"
)

// TestHugeDelays: a delay near the time.Duration limit, as the policy's
// output or as a retry-after hint, parks the task for that long. It never
// overflows into a retry at once.
func TestHugeDelays(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  time.Duration
		hint    time.Duration
		precise bool
	}{
		{"policy", math.MaxInt64, 0, false},
		{"policy/precise", math.MaxInt64, 0, true},
		{"hint", time.Second, math.MaxInt64, false},
		{"hint/precise", time.Second, math.MaxInt64, true},
		{"near-limit", math.MaxInt64 - 999*time.Millisecond, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &reboundtest.Recorder{}
				opts := []Option{WithObserver(rec)}
				if tc.precise {
					opts = append(opts, WithPrecise())
				}
				r := mustNew(t, mustRule(t, fixed(t, tc.policy), 3), opts...)
				var runs atomic.Int64
				h := func(context.Context, *asynq.Task) error {
					runs.Add(1)
					if tc.hint > 0 {
						return backoff.RetryAfter(errBoom, tc.hint)
					}
					return errBoom
				}
				s := start(t, miniRedis(t), "q", r, h, serverOpts{})
				id := s.enqueue(t, nil, map[string]string{"h": "1"}, asynq.MaxRetry(10))
				info := s.waitState(t, id, asynq.TaskStateRetry, time.Minute)
				time.Sleep(10 * time.Second)
				if n := runs.Load(); n != 1 {
					t.Errorf("handler ran %d times, want 1: the retry must wait ~292 years, not run at once", n)
				}
				if year := info.NextProcessAt.Year(); year < 2200 {
					t.Errorf("asynq stored the retry for %v, want about 292 years after now", info.NextProcessAt)
				}
				if e, ok := rec.Last(id); !ok || e.Result.FireAt.Before(info.NextProcessAt.Add(-time.Second)) || e.Result.Decision.Delay < tc.policy/2 {
					t.Errorf("observer heard %+v, want the huge delay and a fire time about asynq's %v", e.Result, info.NextProcessAt)
				}
			})
		})
	}
}

// TestMaxAttemptsAboveStorable: asynq stores MaxRetry and the retry count
// as int32. A rule whose cap is larger than asynq can hold must not wrap
// around into a task archived after its first failure.
func TestMaxAttemptsAboveStorable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &reboundtest.Recorder{}
		r := mustNew(t, mustRule(t, fixed(t, time.Second), math.MaxInt), WithObserver(rec))
		var runs atomic.Int64
		h := func(context.Context, *asynq.Task) error {
			if runs.Add(1) < 3 {
				return errBoom
			}
			return nil
		}
		s := start(t, miniRedis(t), "q", r, h, serverOpts{})
		id := s.enqueue(t, nil, nil, r.MaxRetry(), asynq.Retention(time.Hour))
		info := s.waitState(t, id, asynq.TaskStateCompleted, time.Minute)
		if info.MaxRetry != math.MaxInt32 {
			t.Errorf("task enqueued with MaxRetry %d, want %d (the most asynq stores)", info.MaxRetry, math.MaxInt32)
		}
		for _, e := range rec.Job(id) {
			if e.Attempt.MaxAttempts != math.MaxInt32+1 {
				t.Errorf("attempt %d reported MaxAttempts %d, want %d", e.Attempt.Number, e.Attempt.MaxAttempts, math.MaxInt32+1)
			}
		}
	})
}

// panickyText is an error whose Error method panics.
type panickyText struct{}

func (panickyText) Error() string { panic("no text for you") }

// ptrErr is an error whose Error method dereferences its receiver, so a
// typed nil *ptrErr panics when asked for its text.
type ptrErr struct{ msg string }

func (e *ptrErr) Error() string { return e.msg }

// TestHostileErrors: handler errors whose Error method panics, typed nils
// and 1 MB messages are each one failed attempt; the worker lives on, and
// asynq stores a readable message of at most MaxErrorBytes.
func TestHostileErrors(t *testing.T) {
	var typedNil *ptrErr
	huge := strings.Repeat("é", 1<<19) // 1 MiB of two-byte runes
	for _, tc := range []struct {
		name string
		err  error
		want string // substring of the stored message
	}{
		{"panicking-error-method", panickyText{}, "reboundasynq.panickyText"},
		{"typed-nil", typedNil, "(*reboundasynq.ptrErr)(nil)"},
		{"wrapped-typed-nil", errors.Join(errors.New("ctx"), typedNil), "*errors.joinError (its Error method panicked"},
		{"one-megabyte", errors.New(huge), "bytes truncated]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &reboundtest.Recorder{}
				r := mustNew(t, mustRule(t, fixed(t, time.Second), 2), WithObserver(rec), WithErrorHandler(func(error) {}))
				var mu sync.Mutex
				runs := 0
				h := func(context.Context, *asynq.Task) error {
					mu.Lock()
					defer mu.Unlock()
					runs++
					return tc.err
				}
				s := start(t, miniRedis(t), "q", r, h, serverOpts{})
				id := s.enqueue(t, nil, nil, asynq.MaxRetry(10))
				info := s.waitState(t, id, asynq.TaskStateArchived, time.Minute)
				if runs != 2 {
					t.Errorf("handler ran %d times, want 2 (each hostile error is one failed attempt)", runs)
				}
				if len(info.LastErr) > MaxErrorBytes || !utf8.ValidString(info.LastErr) || !strings.Contains(info.LastErr, tc.want) {
					t.Errorf("asynq stored last_err %.80q... (%d bytes), want valid UTF-8 of at most %d bytes containing %q",
						info.LastErr, len(info.LastErr), MaxErrorBytes, tc.want)
				}
				if got := rec.Story(id); got != "1 retry 1s\n2 exhausted" {
					t.Errorf("story:\n%s", got)
				}
				// The worker still serves other tasks.
				mu.Lock()
				tc.err = nil
				mu.Unlock()
				ok := s.enqueue(t, nil, nil, asynq.Retention(time.Hour))
				s.waitState(t, ok, asynq.TaskStateCompleted, time.Minute)
			})
		})
	}
}
