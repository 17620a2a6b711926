package native

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/internal/stall"
	"github.com/rebound-go/rebound/reboundtest"
)

// WithTimeout gives each attempt a deadline: a handler still running at it
// has failed that attempt (ErrTimeout, decided by the rule like any
// failure), whether it honours its context or ignores it, and a handler
// that ignores it does not hold the worker up: its slot is freed at the
// deadline and whatever it returns later is not stored.
func TestTimeout(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "timeout")
		lag := stall.Watch(t)
		rec := &reboundtest.Recorder{}
		var mu sync.Mutex
		runs := map[string][]time.Time{}
		ignored := make(chan struct{})
		startWorker(t, q, fixedRule(t, 20*time.Millisecond, 3), func(ctx context.Context, j *Job) error {
			mu.Lock()
			runs[j.ID] = append(runs[j.ID], time.Now())
			mu.Unlock()
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("job %s attempt %d: context has no deadline", j.ID, j.Attempt)
			}
			if j.Attempt > 1 || j.ID == "other" {
				return nil
			}
			switch j.ID {
			case "honours":
				<-ctx.Done()
				if !errors.Is(context.Cause(ctx), ErrTimeout) {
					t.Errorf("cause %v, want ErrTimeout", context.Cause(ctx))
				}
				return ctx.Err()
			case "ignores":
				time.Sleep(600 * time.Millisecond)
				j.Metadata.Set("late", "write")
				close(ignored)
			}
			return nil // too late: the attempt failed at its deadline
		}, WithObserver(rec), WithConcurrency(1), WithTimeout(150*time.Millisecond))
		for _, id := range []string{"honours", "ignores", "other"} {
			if _, err := q.Enqueue(ctx, nil, WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"honours", "ignores", "other"} {
			info := waitState(t, q, id, StateCompleted, 10*time.Second)
			want := "1 retry 20ms\n2 success"
			if id == "other" {
				want = "1 success"
			} else if !strings.Contains(info.LastError, "timeout") {
				t.Errorf("job %s: stored error %q, want the timeout", id, info.LastError)
			}
			waitEnded(t, rec, id, strings.Count(want, "\n")+1)
			if got := rec.Story(id); got != want {
				t.Errorf("job %s:\n%s\nwant\n%s", id, got, want)
			}
			if ev := rec.Job(id)[0]; id != "other" && !errors.Is(ev.Result.Err, ErrTimeout) {
				t.Errorf("job %s: attempt 1 ended with %v, want ErrTimeout", id, ev.Result.Err)
			}
		}
		// With one handler slot, the job after the one that ignored its
		// deadline ran before that handler returned.
		mu.Lock()
		otherStart, ignoredStart := runs["other"][0], runs["ignores"][0]
		mu.Unlock()
		if late := lag.Allow(450*time.Millisecond, ignoredStart, otherStart); otherStart.Sub(ignoredStart) > late {
			t.Errorf("the next job started %s after the handler that ignored its 150ms deadline, want the slot freed at the deadline (at most %v: 450ms, plus what this process's own timers lagged meanwhile)", otherStart.Sub(ignoredStart), late)
		}
		<-ignored
		time.Sleep(50 * time.Millisecond)
		if info, _ := q.Job(ctx, "ignores"); info.Metadata["late"] != "" || info.Attempts != 2 {
			t.Errorf("after the late return: %+v; want 2 attempts and nothing of the late handler stored", info)
		}
		if p := rec.Problems(); len(p) > 0 {
			t.Errorf("recorder problems: %v", p)
		}
	})
}

// A handler that returns after its deadline has failed its attempt even
// when the deadline's timer has not fired yet: a process stopped across the
// deadline (SIGSTOP, a loaded machine) resumes with the handler's return
// and the timer both ready, and the return must not win as a success. The
// worker's clock is moved past the deadline while the timer (an hour out)
// has not fired.
func TestTimeoutCheckedOnTheClock(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "lateclock")
		rec := &reboundtest.Recorder{}
		var skew atomic.Int64
		w, err := NewWorker(q, fixedRule(t, time.Millisecond, 1), func(ctx context.Context, j *Job) error {
			skew.Store(int64(2 * time.Hour)) // the process slept through the deadline
			if ctx.Err() != nil {
				t.Errorf("the context ended (%v) before the deadline's timer fired", context.Cause(ctx))
			}
			return nil
		}, WithObserver(rec), WithTimeout(time.Hour), WithErrorHandler(func(err error) { t.Logf("worker: %v", err) }))
		if err != nil {
			t.Fatal(err)
		}
		w.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
		if _, err := q.Enqueue(ctx, nil, WithID("late")); err != nil {
			t.Fatal(err)
		}
		info := waitState(t, q, "late", StateFailed, 10*time.Second)
		if !strings.Contains(info.LastError, "timeout") {
			t.Errorf("stored error %q, want the timeout", info.LastError)
		}
		if evs := waitEnded(t, rec, "late", 1); !errors.Is(evs[0].Result.Err, ErrTimeout) {
			t.Errorf("the observer was told %v, want ErrTimeout", evs[0].Result.Err)
		}
	})
}

func TestTimeoutOption(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	q, _ := NewQueue(rdb, "q")
	h := func(context.Context, *Job) error { return nil }
	if _, err := NewWorker(q, fixedRule(t, time.Second, 3), h, WithTimeout(-time.Second)); err == nil ||
		err.Error() != "native: WithTimeout: -1s is negative, want > 0 (or 0 for none)" {
		t.Errorf("WithTimeout(-1s): %v", err)
	}
	if _, err := NewWorker(q, fixedRule(t, time.Second, 3), h, WithTimeout(0)); err != nil {
		t.Errorf("WithTimeout(0): %v, want none", err)
	}
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
