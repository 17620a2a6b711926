package native

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// crashOnGiveUp records like its Recorder and, once an attempt it is told
// of gave its job up, runs crash: the worker then dies after the give-up
// was stored and before its hook was called.
type crashOnGiveUp struct {
	*reboundtest.Recorder
	crash func()
}

func (c crashOnGiveUp) AttemptEnded(ctx context.Context, a observe.Attempt, r observe.Result) {
	c.Recorder.AttemptEnded(ctx, a, r)
	if r.GaveUp() {
		c.crash()
	}
}

// The give-up hook is called at least once across crashes, as its doc
// promises: a worker that dies between storing a job's give-up and calling
// its hook leaves the call owed in Redis, and another worker makes it once
// the dead worker's lease on the call has run out, with what the dead one
// would have told; a call made is cleared, and made only once.
func TestGiveUpHookSurvivesACrash(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "giveup-crash")
		boom := errors.New("boom")
		h := func(context.Context, *Job) error { return boom }
		dead, alive := &reboundtest.Recorder{}, &reboundtest.Recorder{}
		var w1 *Worker
		crashed := make(chan struct{})
		crash := sync.OnceFunc(func() { w1.abandon(); close(crashed) })
		w1 = startWorker(t, q, fixedRule(t, time.Millisecond, 1), h, WithLease(300*time.Millisecond),
			WithObserver(crashOnGiveUp{&reboundtest.Recorder{}, crash}), WithGiveUp(dead.GiveUp))
		if _, err := q.Enqueue(ctx, nil, WithID("doomed"), WithName("mail"), WithMetadata(map[string]string{"trace": "t1"})); err != nil {
			t.Fatal(err)
		}
		select {
		case <-crashed:
		case <-time.After(10 * time.Second):
			t.Fatal("the job was never given up")
		}
		waitState(t, q, "doomed", StateFailed, 5*time.Second)
		startWorker(t, q, fixedRule(t, time.Millisecond, 1), h, WithReclaimInterval(20*time.Millisecond), WithGiveUp(alive.GiveUp))
		deadline := time.Now().Add(10 * time.Second)
		for len(alive.GiveUps()) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		g := alive.GiveUps()
		if len(g) != 1 {
			t.Fatalf("the living worker's hook was told of %d give-ups after the other died before its hook, want 1", len(g))
		}
		a := g[0].Attempt
		if a.JobID != "doomed" || a.Kind != "mail" || a.Number != 1 || a.MaxAttempts != 1 || a.Queue != q.name ||
			a.Carrier.Get("trace") != "t1" || g[0].Err == nil || g[0].Err.Error() != "boom" || g[0].Outcome != backoff.OutcomeExhausted {
			t.Errorf("the owed call told %+v (err %v), want job doomed (mail, trace t1), attempt 1 of 1, exhausted, boom", g[0], g[0].Err)
		}
		if n := len(dead.GiveUps()); n != 0 {
			t.Errorf("the worker that died called its hook %d times", n)
		}
		// A job the living worker gives up itself: its hook once, and
		// nothing left owed.
		if _, err := q.Enqueue(ctx, nil, WithID("second")); err != nil {
			t.Fatal(err)
		}
		waitState(t, q, "second", StateFailed, 5*time.Second)
		time.Sleep(700 * time.Millisecond) // past both leases on the calls
		if got := alive.GiveUps(); len(got) != 2 || got[1].Attempt.JobID != "second" {
			t.Errorf("give-ups told %+v, want doomed once, then second once", got)
		}
		for _, key := range []string{q.keys.giveup, q.keys.giveupCalls} {
			if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
				t.Errorf("key %s exists (%v) once every call was made, want it gone", key, err)
			}
		}
	})
}

// A running job an operator cancels owes its give-up call from the cancel
// on, as one its worker gave up does: when the worker running it is dead
// (it never learns of the cancel), another worker with a hook makes the
// call once the dead worker's lease on the job ran out, telling attempt 1,
// permanent, ErrCancelled. A worker alive when its job is cancelled makes
// the call itself and leaves nothing owed, hook or not.
func TestGiveUpHookOfACancelSurvivesACrash(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "giveup-cancel-crash")
		started := make(chan string, 4)
		h := func(ctx context.Context, j *Job) error {
			started <- j.ID
			<-ctx.Done()
			return ctx.Err()
		}
		dead, alive := &reboundtest.Recorder{}, &reboundtest.Recorder{}
		w1 := startWorker(t, q, fixedRule(t, time.Millisecond, 3), h, WithLease(300*time.Millisecond), WithGiveUp(dead.GiveUp))
		if _, err := q.Enqueue(ctx, nil, WithID("doomed"), WithName("mail")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the job never started")
		}
		w1.abandon() // dies with the job running
		if st, err := q.Cancel(ctx, "doomed"); err != nil || st != StateActive {
			t.Fatalf("Cancel = %v, %v, want active, nil", st, err)
		}
		startWorker(t, q, fixedRule(t, time.Millisecond, 3), h, WithReclaimInterval(20*time.Millisecond), WithGiveUp(alive.GiveUp))
		deadline := time.Now().Add(10 * time.Second)
		for len(alive.GiveUps()) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		g := alive.GiveUps()
		if len(g) != 1 {
			t.Fatalf("the living worker's hook was told of %d give-ups after the worker running the cancelled job died, want 1", len(g))
		}
		a := g[0].Attempt
		if a.JobID != "doomed" || a.Kind != "mail" || a.Number != 1 || !errors.Is(g[0].Err, ErrCancelled) || g[0].Outcome != backoff.OutcomePermanent {
			t.Errorf("the owed call told %+v (err %v), want job doomed (mail), attempt 1, permanent, ErrCancelled", g[0], g[0].Err)
		}
		if n := len(dead.GiveUps()); n != 0 {
			t.Errorf("the worker that died called its hook %d times", n)
		}
		// A job cancelled on the living worker: its hook once, nothing owed.
		if _, err := q.Enqueue(ctx, nil, WithID("second")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the second job never started")
		}
		if _, err := q.Cancel(ctx, "second"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond) // past the lease on the call
		if got := alive.GiveUps(); len(got) != 2 || got[1].Attempt.JobID != "second" {
			t.Errorf("give-ups told %+v, want doomed once, then second once", got)
		}
		for _, key := range []string{q.keys.giveup, q.keys.giveupCalls} {
			if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
				t.Errorf("key %s exists (%v) once every call was made, want it gone", key, err)
			}
		}
	})
}
