package native

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

type ctxKey struct{}

// carrierObserver is a reboundtest.Recorder that also uses the carrier the
// way a tracing observer does: each attempt reads what the previous one
// left under "prev" and leaves its own number there. It hands the handler
// a context carrying its attempt number, and panics when told of the end
// of attempt panicOn.
type carrierObserver struct {
	*reboundtest.Recorder
	panicOn int

	mu   sync.Mutex
	seen []string // "prev" as each attempt found it
}

func (o *carrierObserver) AttemptStarted(ctx context.Context, a observe.Attempt) context.Context {
	o.mu.Lock()
	o.seen = append(o.seen, a.Carrier.Get("prev"))
	o.mu.Unlock()
	a.Carrier.Set("prev", strconv.Itoa(a.Number))
	return context.WithValue(o.Recorder.AttemptStarted(ctx, a), ctxKey{}, a.Number)
}

func (o *carrierObserver) AttemptEnded(ctx context.Context, a observe.Attempt, r observe.Result) {
	o.Recorder.AttemptEnded(ctx, a, r)
	if ctx.Value(ctxKey{}) != a.Number {
		panic("AttemptEnded did not get AttemptStarted's context")
	}
	if a.Number == o.panicOn {
		panic("observer bug")
	}
}

func TestObserver(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		q := newQueue(t, rdb, prefix, "obs")
		obs := &carrierObserver{Recorder: &reboundtest.Recorder{}, panicOn: 1}
		var reported atomic.Int32
		startWorker(t, q, fixedRule(t, 20*time.Millisecond, 3), func(ctx context.Context, j *Job) error {
			if ctx.Value(ctxKey{}) != j.Attempt {
				t.Errorf("handler context is not the observer's")
			}
			if j.Attempt < 3 {
				return errors.New("again")
			}
			return nil
		}, WithObserver(obs), WithErrorHandler(func(err error) {
			if pe, ok := errors.AsType[*observe.PanicError](err); ok && pe.Op == "observer" {
				reported.Add(1)
			}
		}))
		before := time.Now()
		id, err := q.Enqueue(context.Background(), nil, WithName("send-mail"), WithMetadata(map[string]string{"tenant": "a"}))
		if err != nil {
			t.Fatal(err)
		}
		info := waitState(t, q, id, StateCompleted, 5*time.Second)
		evs := waitEnded(t, obs.Recorder, id, 3)
		if len(evs) != 3 {
			t.Fatalf("observer saw %d attempts, want 3:\n%s", len(evs), obs.Story(id))
		}
		for i, ev := range evs {
			a := ev.Attempt
			want := observe.Attempt{System: "rebound", Queue: "obs", JobID: id, Kind: "send-mail", Number: i + 1, MaxAttempts: 3}
			a.Carrier = nil
			if a != want {
				t.Errorf("attempt %d: %+v, want %+v", i+1, a, want)
			}
		}
		obs.mu.Lock()
		if got := obs.seen; got[0] != "" || got[1] != "1" || got[2] != "2" {
			t.Errorf("carrier seen by attempts: %q, want \"\", \"1\", \"2\" (persisted by the fail script)", got)
		}
		obs.mu.Unlock()
		if got, want := obs.Story(id), "1 retry 20ms\n2 retry 20ms\n3 success"; got != want {
			t.Errorf("story:\n%s\nwant\n%s", got, want)
		}
		for i, ev := range evs[:2] {
			if r := ev.Result; r.FireAt.Before(before) || r.FireAt.After(time.Now()) {
				t.Errorf("end %d: FireAt %v outside the test's run", i+1, r.FireAt)
			}
		}
		if reported.Load() != 1 {
			t.Errorf("the observer's panic was reported %d times to the error handler, want once", reported.Load())
		}
		if p := obs.Problems(); len(p) > 0 {
			t.Errorf("recorder problems: %v", p)
		}
		if info.Metadata["tenant"] != "a" || info.Metadata["prev"] != "3" {
			t.Errorf("stored metadata %v, want tenant=a and prev=3", info.Metadata)
		}
	})
}

func TestPanicCountsAsAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		q := newQueue(t, rdb, prefix, "panic")
		rec := &reboundtest.Recorder{}
		startWorker(t, q, fixedRule(t, 5*time.Millisecond, 2), func(ctx context.Context, j *Job) error {
			panic("kaboom")
		}, WithObserver(rec))
		id, _ := q.Enqueue(context.Background(), nil)
		info := waitState(t, q, id, StateFailed, 5*time.Second)
		if info.Attempts != 2 || info.LastError != "rebound: handler panicked: kaboom" {
			t.Errorf("panicking job: %d attempts, error %q; want 2 and the panic", info.Attempts, info.LastError)
		}
		for _, ev := range waitEnded(t, rec, id, 2) {
			if pe, ok := errors.AsType[*observe.PanicError](ev.Result.Err); !ok || pe.Op != "handler" || pe.Value != "kaboom" || len(pe.Stack) == 0 {
				t.Errorf("attempt %d ended with %#v, want an *observe.PanicError of the handler with its stack", ev.Attempt.Number, ev.Result.Err)
			}
		}
	})
}

// WithGiveUp is told once of every job given up, exhausted or permanent,
// also when a reclaim exhausts it, and never of one that later succeeds.
func TestGiveUp(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "giveup")
		rec := &reboundtest.Recorder{}
		rule := fixedRule(t, 5*time.Millisecond, 3)
		stuck := make(chan struct{})
		startWorker(t, q, rule, func(ctx context.Context, j *Job) error {
			switch j.ID {
			case "poison":
				<-stuck // a worker that hangs, its job reclaimed
				return nil
			case "perm":
				return backoff.Permanent(errors.New("bad input"))
			case "late-success":
				if j.Attempt < 3 {
					return errors.New("not yet")
				}
				return nil
			}
			return errors.New("always")
		}, WithObserver(rec), WithGiveUp(rec.GiveUp))
		t.Cleanup(func() { close(stuck) }) // before the worker's shutdown
		for _, id := range []string{"perm", "late-success", "exhausted"} {
			if _, err := q.Enqueue(ctx, nil, WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		waitState(t, q, "late-success", StateCompleted, 5*time.Second)
		waitState(t, q, "perm", StateFailed, 5*time.Second)
		waitState(t, q, "exhausted", StateFailed, 5*time.Second)
		waitEnded(t, rec, "exhausted", 3)
		waitEnded(t, rec, "perm", 1)

		// A job its workers keep dying on is given up by the reclaim.
		reclaimer := idle(t, q, rule, WithLease(50*time.Millisecond), WithGiveUp(rec.GiveUp))
		if _, err := q.Enqueue(ctx, nil, WithID("poison"), WithMaxAttempts(1)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			info, _ := q.Job(ctx, "poison")
			if info.State == StateActive {
				break // taken by the running worker: make it stale
			}
			if time.Now().After(deadline) {
				t.Fatal("poison job never started")
			}
			time.Sleep(time.Millisecond)
		}
		forceReclaim(t, rdb, q, reclaimer, "poison")
		waitState(t, q, "poison", StateFailed, 5*time.Second)

		got := map[string]backoff.Outcome{}
		for _, g := range rec.GiveUps() {
			if _, dup := got[g.Attempt.JobID]; dup {
				t.Errorf("job %s given up twice", g.Attempt.JobID)
			}
			got[g.Attempt.JobID] = g.Outcome
		}
		want := map[string]backoff.Outcome{"perm": backoff.OutcomePermanent, "exhausted": backoff.OutcomeExhausted, "poison": backoff.OutcomeExhausted}
		if !maps.Equal(got, want) {
			t.Errorf("given up: %v, want %v", got, want)
		}
		for _, g := range rec.GiveUps() {
			if g.Attempt.JobID == "exhausted" && (g.Attempt.Number != 3 || g.Err == nil || g.Err.Error() != "always") {
				t.Errorf("give-up of exhausted: %+v, want attempt 3 and its error", g)
			}
		}
	})
}
