package native

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

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

// Shutdown lets running handlers finish within its deadline; past it, the
// jobs of handlers still running go back to the queue without using up an
// attempt, whether the handler honours its cancelled context or ignores it,
// and observers are told the attempt was interrupted.
func TestGracefulShutdown(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "shutdown")
		rec := &reboundtest.Recorder{}
		started := make(chan struct{}, 3)
		ignoring := make(chan struct{})
		ignored := make(chan struct{})
		w, err := NewWorker(q, fixedRule(t, time.Hour, 3), func(ctx context.Context, j *Job) error {
			started <- struct{}{}
			switch string(j.Payload) {
			case "stuck":
				<-ctx.Done()
				return context.Cause(ctx)
			case "ignoring":
				<-ignoring
				close(ignored)
				return nil
			}
			time.Sleep(200 * time.Millisecond)
			return nil
		}, WithConcurrency(3), WithObserver(rec))
		if err != nil {
			t.Fatal(err)
		}
		slow, _ := q.Enqueue(ctx, []byte("slow"))
		stuck, _ := q.Enqueue(ctx, []byte("stuck"))
		ign, _ := q.Enqueue(ctx, []byte("ignoring"))
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			<-started
		}
		// After Shutdown begins, new jobs are left for other workers.
		later, _ := q.Enqueue(ctx, []byte("later"))
		sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		err = w.Shutdown(sctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown with stuck handlers = %v, want DeadlineExceeded", err)
		}
		if info, _ := q.Job(ctx, slow); info.State != StateCompleted {
			t.Errorf("slow job is %v, want completed within the deadline", info.State)
		}
		// Cut short: back in the queue, the attempt not counted, by the
		// time Shutdown returns.
		for _, id := range []string{stuck, ign} {
			info, err := q.Job(ctx, id)
			if err != nil || info.State != StateWaiting || info.Attempts != 0 || info.LastError != "" {
				t.Errorf("job %s cut short by shutdown: %+v (%v); want waiting, 0 attempts, no error", id, info, err)
			}
			if got := rec.Story(id); got != "1 interrupted" {
				t.Errorf("job %s: observer story %q, want \"1 interrupted\"", id, got)
			}
			if ev, ok := rec.Last(id); ok && (ev.Result.Counts() || !ev.Result.Decision.Retry() || ev.Result.FireAt.After(time.Now())) {
				t.Errorf("job %s: observer told %+v, want an uncounted run due again now", id, ev.Result)
			}
		}
		// The handler that ignored its context returns later: nothing of
		// it is stored.
		close(ignoring)
		<-ignored
		time.Sleep(50 * time.Millisecond)
		if info, _ := q.Job(ctx, ign); info.State != StateWaiting || info.Attempts != 0 {
			t.Errorf("job whose handler returned after Shutdown: %+v; want still waiting, untouched", info)
		}
		if info, _ := q.Job(ctx, later); info.State != StateWaiting || info.Attempts != 0 {
			t.Errorf("job enqueued during shutdown: %+v; want waiting, untouched", info)
		}
		if p := rec.Problems(); len(p) > 0 {
			t.Errorf("recorder problems: %v", p)
		}
		// A new worker runs the cut-short jobs as their first attempt.
		runs := make(chan int, 4)
		startWorker(t, q, fixedRule(t, time.Hour, 3), func(ctx context.Context, j *Job) error {
			if j.ID == stuck || j.ID == ign {
				runs <- j.Attempt
			}
			return nil
		})
		for range 2 {
			select {
			case n := <-runs:
				if n != 1 {
					t.Errorf("a job cut short ran again as attempt %d, want 1", n)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("a job cut short by shutdown did not run again on a new worker")
			}
		}
	})
}

// TestRedisOutage stops the server under a running worker: the worker
// reports the errors, reconnects with its backoff, and every job still ends
// exactly once.
func TestRedisOutage(t *testing.T) {
	m := miniredis.RunT(t)
	// One dial per try: go-redis otherwise retries a refused dial 5 times,
	// 100ms apart, inside one command, which would hide the outage.
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1, DialTimeout: 100 * time.Millisecond,
		DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	q := newQueue(t, rdb, "rbt", "outage")
	var mu sync.Mutex
	runs := map[string]int{}
	var errs atomic.Int32
	startWorker(t, q, fixedRule(t, 10*time.Millisecond, 10), func(ctx context.Context, j *Job) error {
		mu.Lock()
		runs[j.ID]++
		first := runs[j.ID] == 1
		mu.Unlock()
		if j.ID == "slow" {
			// Ends mid-outage, so storing its outcome must fail and be
			// retried: the outage cannot go unnoticed.
			time.Sleep(150 * time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
		if first {
			return errors.New("first run fails")
		}
		return nil
	}, WithConcurrency(4), WithLease(2*time.Second), WithErrorHandler(func(error) { errs.Add(1) }))
	ctx := context.Background()
	var ids []string
	for i := range 40 {
		var opts []EnqueueOption
		if i == 0 {
			opts = append(opts, WithID("slow"))
		}
		id, err := q.Enqueue(ctx, nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	time.Sleep(30 * time.Millisecond)
	m.Close()
	time.Sleep(300 * time.Millisecond)
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	deadline := time.Now().Add(20 * time.Second)
	for _, id := range ids {
		for {
			info, err := q.Job(ctx, id)
			if err == nil && info.State == StateCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s: %+v (%v), want completed after the outage", id, info, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Logf("all completed %s after the restart", time.Since(restarted))
	if errs.Load() == 0 {
		t.Errorf("the outage was never reported to the error handler")
	}
	c, _ := q.Counts(ctx)
	if c.Completed != int64(len(ids)) || c.Waiting+c.Active+c.Delayed+c.Failed != 0 {
		t.Errorf("counts %+v, want all %d completed", c, len(ids))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if runs[id] < 2 {
			t.Errorf("job %s ran %d times, want at least 2 (fails once)", id, runs[id])
		}
	}
	t.Logf("%d errors reported during the outage", errs.Load())
}

// Shutdown ends an idle worker's block on the wake-up marker instead of
// waiting out its timeout, and the wake-up it sends for that is consumed
// by the worker itself, not left for the next one.
func TestShutdownEndsTheBlock(t *testing.T) {
	eachBackend(t, func(t *testing.T, shared redis.UniversalClient, prefix string) {
		ctx := context.Background()
		// A block far longer than Shutdown may take: the client's read
		// timeout must outlast it.
		rdb := redis.NewClient(&redis.Options{Addr: shared.(*redis.Client).Options().Addr, ReadTimeout: time.Minute})
		t.Cleanup(func() { _ = rdb.Close() })
		q := newQueue(t, rdb, prefix, "block")
		w, err := NewWorker(q, fixedRule(t, time.Second, 3), func(context.Context, *Job) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		w.block = 30 * time.Second
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !w.blocked.Load() {
			if time.Now().After(deadline) {
				t.Fatal("the idle worker never blocked on the marker")
			}
			time.Sleep(time.Millisecond)
		}
		done := make(chan error, 1)
		go func() { done <- w.Shutdown(ctx) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("Shutdown is waiting out the 30s block on the marker")
		}
		if n, err := rdb.ZCard(ctx, q.keys.marker).Result(); err != nil || n != 0 {
			t.Fatalf("marker holds %d members after Shutdown (%v), want 0: the stop wake-up was left behind", n, err)
		}
	})
}
