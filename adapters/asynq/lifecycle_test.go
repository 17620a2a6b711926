package reboundasynq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// carrierWriter is a Recorder that, like the OpenTelemetry observer, writes
// the attempt's carrier when the attempt starts.
type carrierWriter struct{ *reboundtest.Recorder }

func (o carrierWriter) AttemptStarted(ctx context.Context, a observe.Attempt) context.Context {
	if a.Carrier != nil {
		a.Carrier.Set("test-attempt", strconv.Itoa(a.Number))
	}
	return o.Recorder.AttemptStarted(ctx, a)
}

// waitFor polls cond every 10ms until it holds, failing t after limit.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ended reports whether the recorder holds n ended attempts of the task.
func ended(rec *reboundtest.Recorder, id string, n int) bool {
	evs := rec.Job(id)
	if len(evs) < n {
		return false
	}
	for _, e := range evs {
		if !e.Ended {
			return false
		}
	}
	return true
}

// retryWatch remembers, per retry count, the time asynq stored for the
// task's next run: what asynq really applied. It reads the arguments of
// asynq's retry script as the script is sent (a go-redis hook on the
// server's client), not the task's state by polling, which misses a retry
// the forwarder moved on before the next poll (seen in precise mode, where
// the stored second is often already due).
type retryWatch struct {
	mu      sync.Mutex
	next    map[int]time.Time // Retried -> the retry time asynq stored
	retried int               // counted retries seen so far
}

// retryScriptHook reads asynq's retry script calls (KEYS[4] the queue's
// retry set, ARGV[1] the task ID, ARGV[3] the retry time in Unix seconds,
// ARGV[5] whether the run counts) for one task.
type retryScriptHook struct {
	w        *retryWatch
	id       string
	retryKey string
	off      *atomic.Bool
}

func (h retryScriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h retryScriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h retryScriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil || h.off.Load() {
			return err
		}
		args := cmd.Args()
		if len(args) < 3 {
			return err
		}
		name := strings.ToLower(fmt.Sprint(args[0]))
		if name != "evalsha" && name != "eval" {
			return err
		}
		nkeys, convErr := strconv.Atoi(fmt.Sprint(args[2]))
		if convErr != nil || nkeys < 4 || len(args) < 3+nkeys+5 || fmt.Sprint(args[3+3]) != h.retryKey {
			return err
		}
		argv := args[3+nkeys:]
		if fmt.Sprint(argv[0]) != h.id {
			return err
		}
		at, convErr := strconv.ParseInt(fmt.Sprint(argv[2]), 10, 64)
		if convErr != nil {
			return err
		}
		h.w.mu.Lock()
		if b, ok := argv[4].(bool); ok && b || fmt.Sprint(argv[4]) == "1" {
			h.w.retried++
		}
		h.w.next[h.w.retried] = time.Unix(at, 0)
		h.w.mu.Unlock()
		return err
	}
}

func watchRetries(t testing.TB, s *server, id string) *retryWatch {
	w := &retryWatch{next: map[int]time.Time{}}
	off := new(atomic.Bool)
	s.rdb.AddHook(retryScriptHook{w: w, id: id, retryKey: "asynq:{" + s.queue + "}:retry", off: off})
	t.Cleanup(func() { off.Store(true) })
	return w
}

// matches reports whether fireAt, as an observer was told it, is what
// asynq stored for retry count retried: the same whole second, or in
// precise mode the second asynq stores for an exact time.
func (w *retryWatch) matches(retried int, fireAt time.Time, precise bool) (time.Time, bool) {
	at, ok := w.at(retried)
	if precise {
		return at, ok && fireAt.Truncate(time.Second).Equal(at)
	}
	return at, ok && fireAt.Equal(at)
}

func (w *retryWatch) at(retried int) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.next[retried]
	return at, ok
}

// TestPreciseWaitCancelled cancels a task with Inspector.CancelProcessing
// while precise mode holds its early attempt. The observer writes the
// attempt's carrier when the attempt starts, as the OpenTelemetry observer
// does; asynq meanwhile handles the cancellation and encodes the task's
// header map on its own goroutine. No map asynq owns may be written there
// (-race finds it; without -race the process can die of a concurrent map
// write), and the observer must hear what asynq did: a counted failure,
// retried at the time asynq stored.
func TestPreciseWaitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &reboundtest.Recorder{}
		// The hint (1.5s) beats the policy, so attempt 2 is due 0.62-0.77s
		// into a second: asynq delivers it on that second, and it is held
		// at least a third of a second.
		r := mustNew(t, mustRule(t, fixed(t, 100*time.Millisecond), 5), WithPrecise(), WithObserver(carrierWriter{rec}))
		var mu sync.Mutex
		runs := 0
		var starts []time.Time
		var ctxErrs []error
		h := func(ctx context.Context, _ *asynq.Task) error {
			mu.Lock()
			runs++
			n := runs
			starts, ctxErrs = append(starts, time.Now()), append(ctxErrs, ctx.Err())
			mu.Unlock()
			if n == 1 {
				time.Sleep(123 * time.Millisecond) // end off a whole second
				return backoff.RetryAfter(errBoom, 1500*time.Millisecond)
			}
			return nil
		}
		s := start(t, miniRedis(t), "q", r, h, serverOpts{})
		id := s.enqueue(t, nil, map[string]string{"h": "1"}, asynq.MaxRetry(10), asynq.Retention(time.Hour))
		w := watchRetries(t, s, id)
		// Attempt 2 is delivered on the whole second before its exact time
		// and waits in the middleware: cancel it then.
		waitFor(t, time.Minute, "attempt 2 to be delivered", func() bool {
			info := s.info(t, id)
			return info != nil && info.State == asynq.TaskStateActive && info.Retried == 1
		})
		mu.Lock()
		if runs != 1 {
			t.Fatalf("handler ran %d times before the cancel, want 1 (attempt 2 must still wait)", runs)
		}
		mu.Unlock()
		if err := s.insp.CancelProcessing(id); err != nil {
			t.Fatal(err)
		}
		s.waitState(t, id, asynq.TaskStateCompleted, time.Minute)
		waitFor(t, 10*time.Second, "three ended attempts", func() bool { return ended(rec, id, 3) })

		evs := rec.Job(id)
		if len(evs) != 3 {
			t.Fatalf("observer heard %d attempts, want 3:\n%s", len(evs), rec.Story(id))
		}
		second := evs[1]
		if second.Attempt.Number != 2 || !second.Result.Counts() || !errors.Is(second.Result.Err, context.Canceled) || !second.Result.Decision.Retry() {
			t.Errorf("attempt 2 reported as %d %s (err %v), want a counted failure with context.Canceled, retried", second.Attempt.Number, second.Result.Outcome(), second.Result.Err)
		}
		if at, ok := w.matches(2, second.Result.FireAt, true); !ok {
			t.Errorf("attempt 2 reported FireAt %v, asynq stored %v", second.Result.FireAt, at)
		}
		if evs[2].Attempt.Number != 3 || evs[2].Result.Outcome() != "success" {
			t.Errorf("third run reported as %d %s, want 3 success", evs[2].Attempt.Number, evs[2].Result.Outcome())
		}
		// The hold is not cut short: attempt 2 runs at its time, its context
		// already cancelled, and the next retry is decided from then.
		mu.Lock()
		defer mu.Unlock()
		if runs != 3 || !errors.Is(ctxErrs[1], context.Canceled) {
			t.Fatalf("handler ran %d times (context errors %v), want 3, the second with its context cancelled", runs, ctxErrs)
		}
		if starts[1].Before(evs[0].Result.FireAt) || starts[2].Before(second.Result.FireAt) {
			t.Errorf("runs started at %v, before the fire times %v and %v the observer was told", starts, evs[0].Result.FireAt, second.Result.FireAt)
		}
	})
}

// TestTimeoutTruth runs a handler that outlives the task's timeout. asynq
// counts each such run as a failure with context.DeadlineExceeded and
// retries it under RetryDelay; the observer must be told exactly that:
// never the handler's own late "success", each retry at the time asynq
// stored, the last attempt exhausted once, and no phantom 4th attempt.
func TestTimeoutTruth(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ret     func(ctx context.Context) error // what the late handler returns
		precise bool
	}{
		{"late-success", func(context.Context) error { return nil }, false},
		{"late-ctx-error", func(ctx context.Context) error { return ctx.Err() }, false},
		{"late-ctx-error/precise", func(ctx context.Context) error { return ctx.Err() }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &reboundtest.Recorder{}
				opts := []Option{WithObserver(rec), WithGiveUp(rec.GiveUp)}
				if tc.precise {
					opts = append(opts, WithPrecise())
				}
				jit := backoff.Must(backoff.Jitter(backoff.Must(backoff.Fixed(4 * time.Second))))
				r := mustNew(t, mustRule(t, jit, 3), opts...)
				var runs atomic.Int64
				h := func(ctx context.Context, _ *asynq.Task) error {
					runs.Add(1)
					time.Sleep(1500 * time.Millisecond) // past the 1s timeout
					return tc.ret(ctx)
				}
				s := start(t, miniRedis(t), "q", r, h, serverOpts{})
				id := s.enqueue(t, nil, map[string]string{"h": "1"}, asynq.MaxRetry(10), asynq.Timeout(time.Second), asynq.Retention(time.Hour))
				w := watchRetries(t, s, id)
				s.waitState(t, id, asynq.TaskStateArchived, 2*time.Minute)
				waitFor(t, 10*time.Second, "three ended attempts", func() bool { return ended(rec, id, 3) })
				time.Sleep(5 * time.Second) // a phantom run would be reported by now

				if n := runs.Load(); n != 3 {
					t.Errorf("handler ran %d times, want 3", n)
				}
				evs := rec.Job(id)
				if len(evs) != 3 {
					t.Fatalf("observer heard %d attempts, want 3:\n%s", len(evs), rec.Story(id))
				}
				if g := rec.GiveUps(); len(g) != 1 || g[0].Attempt.Number != 3 || g[0].Outcome != backoff.OutcomeExhausted {
					t.Errorf("give-up hook told %+v, want once, exhausted after attempt 3", g)
				}
				for i, e := range evs {
					n := i + 1
					if e.Attempt.Number != n || !e.Result.Counts() || !errors.Is(e.Result.Err, context.DeadlineExceeded) {
						t.Errorf("attempt %d reported as %d %s (err %v), want a counted failure with context.DeadlineExceeded", n, e.Attempt.Number, e.Result.Outcome(), e.Result.Err)
					}
					if n == 3 {
						if e.Result.Decision.Outcome != backoff.OutcomeExhausted {
							t.Errorf("attempt 3 reported %s, want exhausted", e.Result.Outcome())
						}
						continue
					}
					want := rule3(jit).Decide(n, context.DeadlineExceeded, backoff.Key(id))
					if e.Result.Decision != want {
						t.Errorf("attempt %d decided %+v, want the rule's keyed %+v", n, e.Result.Decision, want)
					}
					if at, ok := w.matches(n, e.Result.FireAt, tc.precise); !ok {
						t.Errorf("attempt %d reported FireAt %v, asynq stored %v", n, e.Result.FireAt, at)
					}
				}
			})
		})
	}
}

func rule3(p backoff.Policy) backoff.Rule { return backoff.Must(backoff.NewRule(p, 3)) }

// TestShutdownInterrupted shuts a server down while a handler runs past the
// shutdown timeout. asynq puts the task back without counting the run; the
// observer must hear the run as interrupted, not as a failure, and the task
// then runs again on a new server as the same attempt.
func TestShutdownInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &reboundtest.Recorder{}
		r := mustNew(t, mustRule(t, fixed(t, time.Second), 1), WithObserver(rec), WithGiveUp(rec.GiveUp))
		running := make(chan struct{}, 1)
		h := blockFirstRun(running)
		c := miniRedis(t)
		s := start(t, c, "q", r, h, serverOpts{shutdown: 500 * time.Millisecond})
		id := s.enqueue(t, nil, map[string]string{"h": "1"}, asynq.MaxRetry(10), asynq.Retention(time.Hour))
		<-running
		s.srv.Shutdown()
		if info := s.info(t, id); info == nil || info.State != asynq.TaskStatePending || info.Retried != 0 {
			t.Fatalf("after shutdown the task is %+v, want pending with Retried 0 (asynq puts it back uncounted)", info)
		}
		start(t, c, "q", r, h, serverOpts{})
		s.waitState(t, id, asynq.TaskStateCompleted, time.Minute)
		waitFor(t, 10*time.Second, "two ended attempts", func() bool { return ended(rec, id, 2) })
		if got, want := rec.Story(id), "1 interrupted\n1 success"; got != want {
			t.Errorf("story:\n%s\nwant:\n%s", got, want)
		}
		if g := rec.GiveUps(); len(g) != 0 {
			t.Errorf("give-up hook told %+v for a task put back and then successful", g)
		}
		if n := r.flight.len(); n != 0 {
			t.Errorf("the Retrier still holds %d runs", n)
		}
	})
}

// TestCancelProcessingTruth cancels a running task with the Inspector.
// asynq counts the run as failed with context.Canceled and retries it under
// RetryDelay: the observer must hear that failure with the very fire time
// asynq stored.
func TestCancelProcessingTruth(t *testing.T) {
	for _, precise := range []bool{false, true} {
		t.Run(map[bool]string{false: "round-up", true: "precise"}[precise], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &reboundtest.Recorder{}
				opts := []Option{WithObserver(rec)}
				if precise {
					opts = append(opts, WithPrecise())
				}
				jit := backoff.Must(backoff.Jitter(backoff.Must(backoff.Fixed(8 * time.Second))))
				r := mustNew(t, mustRule(t, jit, 3), opts...)
				running := make(chan struct{}, 1)
				h := blockFirstRun(running)
				s := start(t, miniRedis(t), "q", r, h, serverOpts{})
				id := s.enqueue(t, nil, map[string]string{"h": "1"}, asynq.MaxRetry(10), asynq.Retention(time.Hour))
				w := watchRetries(t, s, id)
				<-running
				time.Sleep(250 * time.Millisecond)
				if err := s.insp.CancelProcessing(id); err != nil {
					t.Fatal(err)
				}
				s.waitState(t, id, asynq.TaskStateCompleted, time.Minute)
				waitFor(t, 10*time.Second, "two ended attempts", func() bool { return ended(rec, id, 2) })
				evs := rec.Job(id)
				first := evs[0]
				want := rule3(jit).Decide(1, context.Canceled, backoff.Key(id))
				if !first.Result.Counts() || !errors.Is(first.Result.Err, context.Canceled) || first.Result.Decision != want {
					t.Errorf("cancelled attempt reported %s %+v (err %v), want a counted failure with context.Canceled decided %+v", first.Result.Outcome(), first.Result.Decision, first.Result.Err, want)
				}
				if at, ok := w.matches(1, first.Result.FireAt, precise); !ok {
					t.Errorf("cancelled attempt reported FireAt %v, asynq stored %v", first.Result.FireAt, at)
				}
				// The engine's cancel reads as every adapter tells it: an
				// *observe.CancelledError with the text asynq stored.
				var ce *observe.CancelledError
				if info := s.info(t, id); !errors.As(first.Result.Err, &ce) || !errors.Is(first.Result.Err, observe.ErrCancelled) || info == nil || first.Result.Err.Error() != info.LastErr {
					t.Errorf("cancelled attempt reported error %T %v, want an *observe.CancelledError reading the stored last error (%+v)", first.Result.Err, first.Result.Err, info)
				}
				if got := rec.Story(id); got != "1 retry "+want.Delay.String()+"\n2 success" {
					t.Errorf("story:\n%s", got)
				}
			})
		})
	}
}

// TestCancelLastAttempt cancels a task's last attempt with the Inspector.
// A task built by NewTask has a spare retry in asynq, so asynq hands the
// cancelled run to RetryDelay: it is reported exhausted, once, and the
// delivery asynq makes anyway is archived without running. A task enqueued
// with asynq's MaxRetry at the rule's cap is archived by asynq on its own:
// rebound cannot tell that cancel from a server shutdown and, as
// documented, reports the run interrupted.
func TestCancelLastAttempt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []asynq.Option // beside NewTask's
		story string
		gives int
	}{
		{"spare-retry", nil, "1 exhausted", 1},
		{"maxretry-at-cap", []asynq.Option{asynq.MaxRetry(0)}, "1 interrupted", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &reboundtest.Recorder{}
				r := mustNew(t, mustRule(t, fixed(t, time.Second), 1), WithObserver(rec), WithGiveUp(rec.GiveUp))
				running := make(chan struct{}, 2)
				var runs atomic.Int64
				h := func(ctx context.Context, _ *asynq.Task) error {
					runs.Add(1)
					running <- struct{}{}
					<-ctx.Done()
					return ctx.Err()
				}
				s := start(t, miniRedis(t), "q", r, h, serverOpts{})
				info, err := s.client.Enqueue(r.NewTask(kind, nil, tc.opts...), asynq.Queue(s.queue))
				if err != nil {
					t.Fatal(err)
				}
				<-running
				time.Sleep(100 * time.Millisecond)
				if err := s.insp.CancelProcessing(info.ID); err != nil {
					t.Fatal(err)
				}
				done := s.waitState(t, info.ID, asynq.TaskStateArchived, time.Minute)
				time.Sleep(5 * time.Second)
				if n := runs.Load(); n != 1 {
					t.Errorf("handler ran %d times, want 1", n)
				}
				if got := rec.Story(info.ID); got != tc.story {
					t.Errorf("story:\n%s\nwant:\n%s", got, tc.story)
				}
				if g := rec.GiveUps(); len(g) != tc.gives {
					t.Errorf("give-up hook told %+v, want %d calls", g, tc.gives)
				}
				t.Logf("archived with last error %q", done.LastErr)
			})
		})
	}
}

// TestOperatorWaitingTask archives or deletes, with the Inspector, a task
// waiting for its retry. No attempt runs, so nothing more is reported: the
// observer's last word stays the scheduled retry, the give-up hook is not
// called, and the Retrier keeps nothing for the task.
func TestOperatorWaitingTask(t *testing.T) {
	for _, op := range []string{"archive", "delete"} {
		t.Run(op, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &reboundtest.Recorder{}
				r := mustNew(t, mustRule(t, fixed(t, time.Minute), 3), WithObserver(rec), WithGiveUp(rec.GiveUp))
				rc := newRecorder(func(string, int) error { return errBoom })
				s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
				info, err := s.client.Enqueue(r.NewTask(kind, nil), asynq.Queue(s.queue))
				if err != nil {
					t.Fatal(err)
				}
				s.waitState(t, info.ID, asynq.TaskStateRetry, time.Minute)
				if op == "archive" {
					err = s.insp.ArchiveTask(s.queue, info.ID)
				} else {
					err = s.insp.DeleteTask(s.queue, info.ID)
				}
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(65 * time.Second) // past the minute the retry was due
				if n := len(rc.get(info.ID)); n != 1 {
					t.Errorf("handler ran %d times, want 1", n)
				}
				if got := rec.Story(info.ID); got != "1 retry 1m0s" {
					t.Errorf("story:\n%s\nwant the one scheduled retry", got)
				}
				if g := rec.GiveUps(); len(g) != 0 {
					t.Errorf("give-up hook told %+v", g)
				}
				if n := r.flight.len(); n != 0 {
					t.Errorf("the Retrier still holds %d runs", n)
				}
			})
		})
	}
}

// TestOverrunNoOverlap: asynq stops waiting for a handler at its deadline,
// but the next attempt never starts while that handler still runs:
// RetryDelay holds asynq's decision until the handler has returned, and
// the task is archived after the last attempt's handler returned.
func TestOverrunNoOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &reboundtest.Recorder{}
		r := mustNew(t, mustRule(t, fixed(t, 100*time.Millisecond), 3), WithObserver(rec), WithGiveUp(rec.GiveUp))
		rc := newRecorder(func(string, int) error {
			time.Sleep(3 * time.Second) // 2s past the 1s timeout, ignoring the context
			return nil
		})
		s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
		info, err := s.client.Enqueue(r.NewTask(kind, nil, asynq.Timeout(time.Second), asynq.Retention(time.Hour)), asynq.Queue(s.queue))
		if err != nil {
			t.Fatal(err)
		}
		s.waitState(t, info.ID, asynq.TaskStateArchived, time.Minute)
		archived := time.Now()
		runs := rc.get(info.ID)
		if len(runs) != 3 {
			t.Fatalf("handler ran %d times, want 3", len(runs))
		}
		for i := 1; i < len(runs); i++ {
			if runs[i].start.Before(runs[i-1].end) {
				t.Errorf("attempt %d started %v before attempt %d's handler returned", i+1, runs[i-1].end.Sub(runs[i].start), i)
			}
		}
		if archived.Before(runs[2].end) {
			t.Errorf("task archived while its last handler still ran")
		}
		if got := rec.Story(info.ID); got != "1 retry 100ms\n2 retry 100ms\n3 exhausted" {
			t.Errorf("story:\n%s", got)
		}
	})
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
