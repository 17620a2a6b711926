package native

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/reboundtest"
)

// blockedPrefetch starts a worker of one handler that holds prefetch jobs
// ahead, enqueues n jobs and waits until the first one runs, blocked until
// release is closed, and the next prefetch are leased behind it. It returns
// the jobs' IDs and the count of runs per ID.
func blockedPrefetch(t *testing.T, q *Queue, n, prefetch int, release <-chan struct{}, opts ...WorkerOption) ([]string, func() map[string]int) {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for range n {
		id, err := q.Enqueue(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var mu sync.Mutex
	runs := map[string]int{}
	started := make(chan struct{}, n)
	startWorker(t, q, fixedRule(t, time.Millisecond, 3), func(ctx context.Context, j *Job) error {
		mu.Lock()
		runs[j.ID]++
		mu.Unlock()
		started <- struct{}{}
		<-release
		return nil
	}, append([]WorkerOption{WithConcurrency(1), WithPrefetch(prefetch)}, opts...)...)
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the first job never started")
	}
	want := int64(1 + prefetch)
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := q.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Active == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("counts %+v with one handler blocked, want %d active (1 running, %d ahead)", c, want, prefetch)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ids, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]int, len(runs))
		for k, v := range runs {
			out[k] = v
		}
		return out
	}
}

// Cancelling a job a worker holds ahead (prefetched, leased, not started)
// fails it, cancelled; the worker learns of it at its next renewal and
// never runs its handler; its observer hears of one attempt that ended the
// job, permanent, with ErrCancelled, and so does its give-up hook.
func TestCancelPrefetchedJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "cancel-prefetched")
		rec := &reboundtest.Recorder{}
		release := make(chan struct{})
		released := sync.OnceFunc(func() { close(release) })
		t.Cleanup(released)
		ids, runs := blockedPrefetch(t, q, 2, 1, release,
			WithLease(600*time.Millisecond), WithObserver(rec), WithGiveUp(rec.GiveUp))
		first, ahead := ids[0], ids[1]
		was, err := q.Cancel(ctx, ahead)
		if err != nil || was != StateActive {
			t.Fatalf("Cancel(prefetched) = %v, %v; want active", was, err)
		}
		// The worker learns of it while its handler is still blocked.
		evs := waitEnded(t, rec, ahead, 1)
		released()
		waitState(t, q, first, StateCompleted, 5*time.Second)
		j, err := q.Job(ctx, ahead)
		if err != nil || j.State != StateFailed || !j.Cancelled || j.LastError != ErrCancelled.Error() {
			t.Errorf("cancelled prefetched job %+v (%v): want failed, Cancelled, ErrCancelled's text", j, err)
		}
		if n := runs()[ahead]; n != 0 {
			t.Errorf("the cancelled prefetched job's handler ran %d times, want never", n)
		}
		end := evs[len(evs)-1]
		if !errors.Is(end.Result.Err, ErrCancelled) || end.Result.Decision.Outcome != backoff.OutcomePermanent {
			t.Errorf("observer told %+v, want a permanent end with ErrCancelled", end.Result)
		}
		// Let a (wrong) late start of the cancelled job show.
		time.Sleep(100 * time.Millisecond)
		if evs := rec.Job(ahead); len(evs) != 1 || !evs[0].Ended {
			t.Errorf("observer heard of %d attempts of the cancelled job, want one, ended:\n%s", len(evs), rec.Story(ahead))
		}
		if p := rec.Problems(); len(p) > 0 {
			t.Errorf("observer problems: %v", p)
		}
		if g := rec.GiveUps(); len(g) != 1 || g[0].Attempt.JobID != ahead || !errors.Is(g[0].Err, ErrCancelled) || g[0].Outcome != backoff.OutcomePermanent {
			t.Errorf("give-up hook told %+v, want once, for %s, permanent, ErrCancelled", g, ahead)
		}
	})
}

// Pausing a queue while a worker holds jobs ahead lets those jobs run (they
// are reserved already) and reserves nothing more until Resume; then the
// rest run, each job exactly once, none lost.
func TestPauseWithPrefetchedJobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "pause-prefetched")
		const n, prefetch = 6, 2
		gate := make(chan struct{})
		ids, runs := blockedPrefetch(t, q, n, prefetch, gate)
		if err := q.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		close(gate)
		held := ids[:1+prefetch]
		for _, id := range held {
			waitState(t, q, id, StateCompleted, 5*time.Second)
		}
		// Time enough for the (wrong) reservation of another job.
		time.Sleep(200 * time.Millisecond)
		c, err := q.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rest := int64(n - len(held)); c.Waiting != rest || c.Active != 0 || c.Completed != int64(len(held)) || !c.Paused {
			t.Errorf("paused, the held jobs done: counts %+v, want %d completed, %d waiting, none active, paused", c, len(held), rest)
		}
		if err := q.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			waitState(t, q, id, StateCompleted, 5*time.Second)
		}
		got := runs()
		for _, id := range ids {
			if got[id] != 1 {
				t.Errorf("job %s ran %d times, want once", id, got[id])
			}
		}
	})
}

// Shutdown does not run the jobs a worker holds ahead: it puts them back
// at once, uncounted (their attempts as before the reservation), at the
// front of the queue in their order, and no observer hears of them; the
// running job finishes within the deadline and is stored as usual.
func TestShutdownPutsBackPrefetchedJobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "shutdown-prefetched")
		rec := &reboundtest.Recorder{}
		const prefetch = 2
		gate := make(chan struct{})
		released := sync.OnceFunc(func() { close(gate) })
		t.Cleanup(released)
		var w *Worker
		ids, runs := blockedPrefetch(t, q, 1+prefetch, prefetch, gate, WithObserver(rec), func(x *Worker) error { w = x; return nil })
		done := make(chan error, 1)
		go func() {
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			done <- w.Shutdown(sctx)
		}()
		// The jobs ahead go back while the running one still runs.
		deadline := time.Now().Add(5 * time.Second)
		for {
			c, err := q.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if c.Active == 1 && c.Waiting == prefetch {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("counts %+v during Shutdown with the handler blocked, want 1 active and the %d ahead waiting", c, prefetch)
			}
			time.Sleep(5 * time.Millisecond)
		}
		released()
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v, want nil (the running job finished in time)", err)
		}
		waitState(t, q, ids[0], StateCompleted, 5*time.Second)
		due, err := rdb.LRange(ctx, q.keys.due, 0, -1).Result()
		if err != nil || len(due) != prefetch || due[0] != ids[1] || due[1] != ids[2] {
			t.Errorf("due list %v (%v), want the jobs ahead at its front in their order %v", due, err, ids[1:])
		}
		for _, id := range ids[1:] {
			j, err := q.Job(ctx, id)
			if err != nil || j.State != StateWaiting || j.Attempts != 0 {
				t.Errorf("job held ahead after Shutdown: %+v (%v), want waiting with 0 attempts", j, err)
			}
			if n := runs()[id]; n != 0 {
				t.Errorf("job held ahead ran %d times during Shutdown, want never", n)
			}
			if evs := rec.Job(id); len(evs) != 0 {
				t.Errorf("the observer heard of a job held ahead:\n%s", rec.Story(id))
			}
		}
	})
}
