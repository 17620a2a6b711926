package reboundasynq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// TestLookAlikeTasks runs thirty tasks that look alike to RetryDelay (type
// "x", no payload, the same headers apart from what NewTask puts there),
// all running at once, whose runs end on asynq's own path: the handler
// outlives the task's timeout, or an operator cancels it. RetryDelay must
// decide each task's own run: each task's reported retry is the one asynq
// applies to that task (its next run starts at the reported time, within
// asynq's polling), keyed by its own ID, none is told "interrupted", and
// with a cap of one every task reaches the give-up hook once.
//
// Tasks built without NewTask carry no token: asynq hands back nothing
// that tells them apart, and only what does not depend on the task ID is
// checked of them: each run is claimed once, none is told "interrupted",
// and with a cap of one each task is given up once.
func TestLookAlikeTasks(t *testing.T) {
	const tasks = 30
	for _, tc := range []struct {
		name   string
		cancel bool // an Inspector.CancelProcessing, not a timeout
		cap    int
		plain  bool // asynq.NewTask, without headers
	}{
		{"timeout", false, 2, false},
		{"cancel", true, 2, false},
		{"timeout/cap-1", false, 1, false},
		{"cancel/cap-1", true, 1, false},
		{"timeout/cap-1/no-headers", false, 1, true},
		{"cancel/cap-1/no-headers", true, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &reboundtest.Recorder{}
				jit := backoff.Must(backoff.Jitter(backoff.Must(backoff.Fixed(20 * time.Second))))
				rule := mustRule(t, jit, tc.cap)
				var reported errs
				r := mustNew(t, rule, WithObserver(rec), WithGiveUp(rec.GiveUp), WithErrorHandler(reported.add))
				var mu sync.Mutex
				starts := map[string][]time.Time{}
				running := make(chan string, tasks)
				h := func(ctx context.Context, _ *asynq.Task) error {
					id, _ := asynq.GetTaskID(ctx)
					mu.Lock()
					starts[id] = append(starts[id], time.Now())
					first := len(starts[id]) == 1
					mu.Unlock()
					if !first {
						return nil
					}
					if tc.cancel {
						running <- id
						<-ctx.Done()
						return ctx.Err()
					}
					time.Sleep(1500 * time.Millisecond) // past the 1s timeout
					return ctx.Err()
				}
				s := start(t, miniRedis(t), "q", r, h, serverOpts{concurrency: tasks, types: []string{"x"}})
				var ids []string
				for range tasks {
					task := r.NewTask("x", nil, asynq.Timeout(time.Second), asynq.Retention(time.Hour))
					if tc.plain {
						task = asynq.NewTask("x", nil, r.MaxRetryFor("x"), asynq.Timeout(time.Second), asynq.Retention(time.Hour))
					}
					info, err := s.client.Enqueue(task, asynq.Queue(s.queue))
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, info.ID)
				}
				if tc.cancel {
					for range tasks {
						<-running
					}
					time.Sleep(100 * time.Millisecond)
					for _, id := range ids {
						if err := s.insp.CancelProcessing(id); err != nil {
							t.Fatal(err)
						}
					}
				}
				want := asynq.TaskStateCompleted
				if tc.cap == 1 {
					want = asynq.TaskStateArchived
				}
				for _, id := range ids {
					s.waitState(t, id, want, 5*time.Minute)
				}
				for _, id := range ids {
					waitFor(t, 10*time.Second, "task "+id+"'s attempts to end", func() bool { return ended(rec, id, tc.cap) })
				}
				time.Sleep(5 * time.Second) // a stray report would be made by now

				wrong, interrupted := 0, 0
				for _, id := range ids {
					evs := rec.Job(id)
					mu.Lock()
					st := starts[id]
					mu.Unlock()
					if len(evs) != tc.cap || len(st) != tc.cap {
						t.Errorf("task %s: observer heard %d attempts, handler ran %d times, want %d:\n%s", id, len(evs), len(st), tc.cap, rec.Story(id))
						continue
					}
					first := evs[0].Result
					if first.Counting == observe.Interrupted {
						interrupted++
					}
					wantErr := context.DeadlineExceeded
					if tc.cancel {
						wantErr = context.Canceled
					}
					if !first.Counts() || !errors.Is(first.Err, wantErr) {
						t.Errorf("task %s: attempt 1 reported %s (err %v), want a counted failure with %v", id, first.Outcome(), first.Err, wantErr)
					}
					if tc.cap == 1 {
						if first.Decision.Outcome != backoff.OutcomeExhausted {
							t.Errorf("task %s: attempt 1 reported %s, want exhausted", id, first.Outcome())
						}
						continue
					}
					if wantDec := rule.Decide(1, wantErr, backoff.Key(id)); first.Decision != wantDec {
						t.Errorf("task %s: attempt 1 decided %+v, want its own keyed %+v", id, first.Decision, wantDec)
					}
					// asynq polls every 100ms: the next run starts within a
					// few polls of the time reported, never before it.
					if gap := st[1].Sub(first.FireAt); gap < 0 || gap > time.Second {
						wrong++
						t.Errorf("task %s: attempt 2 started %v after the fire time reported for it (%v), want within [0, 1s]", id, gap, first.FireAt)
					}
				}
				if interrupted > 0 || wrong > 0 {
					t.Errorf("%d of %d tasks told interrupted, %d of %d retried at another task's time", interrupted, tasks, wrong, tasks)
				}
				gave := map[string]int{}
				for _, g := range rec.GiveUps() {
					gave[g.Attempt.JobID]++
				}
				wantGiveUps := 0 // attempt 2 succeeds
				if tc.cap == 1 {
					wantGiveUps = 1
				}
				reached := 0
				for _, id := range ids {
					if gave[id] != wantGiveUps {
						t.Errorf("task %s reached the give-up hook %d times, want %d", id, gave[id], wantGiveUps)
					}
					if gave[id] > 0 {
						reached++
					}
				}
				if reached != wantGiveUps*tasks {
					t.Errorf("%d of %d tasks reached the give-up hook, want %d", reached, tasks, wantGiveUps*tasks)
				}
				if got := reported.list(); len(got) > 0 {
					t.Errorf("rebound reported %d internal errors, first: %v", len(got), got[0])
				}
				if n := r.flight.len(); n != 0 {
					t.Errorf("the Retrier still holds %d runs", n)
				}
				if problems := rec.Problems(); len(problems) > 0 {
					t.Errorf("recorder problems: %s", fmt.Sprint(problems))
				}
			})
		})
	}
}

// TestDeliveryTokens: NewTask gives each task its own token, and every
// retry gets a fresh one, so one Task value enqueued twice has look-alike
// tokens on its first delivery only.
func TestDeliveryTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := mustNew(t, mustRule(t, fixed(t, time.Second), 3))
		var mu sync.Mutex
		tokens := map[string][]string{}
		h := func(ctx context.Context, task *asynq.Task) error {
			id, _ := asynq.GetTaskID(ctx)
			mu.Lock()
			defer mu.Unlock()
			tokens[id] = append(tokens[id], task.Headers()[HeaderTask])
			if len(tokens[id]) == 1 {
				return errBoom
			}
			return nil
		}
		s := start(t, miniRedis(t), "q", r, h, serverOpts{types: []string{"x"}})
		if a, b := r.NewTask("x", nil).Headers()[HeaderTask], r.NewTask("x", nil).Headers()[HeaderTask]; a == "" || a == b {
			t.Fatalf("NewTask tokens %q and %q, want two distinct ones", a, b)
		}
		task := r.NewTask("x", nil, asynq.Retention(time.Hour))
		var ids []string
		for range 2 {
			info, err := s.client.Enqueue(task, asynq.Queue(s.queue))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, info.ID)
		}
		for _, id := range ids {
			s.waitState(t, id, asynq.TaskStateCompleted, time.Minute)
		}
		mu.Lock()
		defer mu.Unlock()
		a, b := tokens[ids[0]], tokens[ids[1]]
		if len(a) != 2 || len(b) != 2 {
			t.Fatalf("tokens seen %v and %v, want two deliveries each", a, b)
		}
		if a[0] != b[0] {
			t.Errorf("one Task value enqueued twice: first tokens %q and %q, want the same", a[0], b[0])
		}
		if a[1] == a[0] || b[1] == b[0] || a[1] == b[1] || a[1] == "" {
			t.Errorf("retry tokens %q and %q (first %q), want a fresh one per retry", a[1], b[1], a[0])
		}
	})
}

// isPanics is an error whose Is method panics, as a middleware outside
// rebound's might return.
type isPanics struct{}

func (isPanics) Error() string { return "is panics" }
func (isPanics) Is(error) bool { panic("no Is for you") }
func (isPanics) Unwrap() error { return nil }

// TestRetryDelayHostileOuterError: asynq calls RetryDelay on its own
// goroutine, where a panic kills the process. Finding the run of an error
// that did not come through the middleware asks the error whether it is
// the context's: a panic there is recovered.
func TestRetryDelayHostileOuterError(t *testing.T) {
	r := mustNew(t, mustRule(t, fixed(t, time.Second), 3))
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("RetryDelay panicked: %v", p)
		}
	}()
	if d := r.RetryDelay(0, isPanics{}, r.NewTask("x", nil)); d < 0 {
		t.Errorf("RetryDelay = %v, want a delay never negative", d)
	}
}
