package native

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/internal/stall"
)

// A job a worker holds ahead that an operator cancels never starts its
// handler once Cancel returned, even when a handler frees up at that very
// instant (before the fix, Cancel returned at once and the freed handler
// started the held job before the worker's next round trip told it).
func TestCancelHeldJobNeverStartsAfterCancel(t *testing.T) {
	eachBackend(t, testCancelHeldJobNeverStarts)
}

func testCancelHeldJobNeverStarts(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "cancel-held")
	release := make(chan struct{})
	released := sync.OnceFunc(func() { close(release) })
	t.Cleanup(released)
	// Its slots all taken, the worker reserves nothing (so no reserve sees
	// the cancel) and renews every 10s: only the published cancel tells it
	// in time.
	ids, runs := blockedPrefetch(t, q, 2, 1, release, WithLease(30*time.Second))
	first, ahead := ids[0], ids[1]
	start := time.Now()
	was, err := q.Cancel(ctx, ahead)
	took := time.Since(start)
	released() // the held job's handler would start now
	if err != nil || was != StateActive {
		t.Fatalf("Cancel(held) = %v, %v; want active, nil", was, err)
	}
	if took > 3*time.Second {
		t.Errorf("Cancel took %s against a live worker, want its confirmation well before its renewal (10s)", took)
	}
	waitState(t, q, first, StateCompleted, 5*time.Second)
	time.Sleep(100 * time.Millisecond) // let a (wrong) late start show
	if n := runs()[ahead]; n != 0 {
		t.Errorf("the cancelled held job's handler ran %d times after Cancel returned, want never", n)
	}
}

// Cancel of a running job returns once its worker cancelled the handler's
// context, well before the lease would have run out: the cancel reaches
// the worker at once (published), not at its renewal a third of the lease
// later (before the fix Cancel returned with the context still live).
func TestCancelReturnsAfterTheHandlersContextIsCancelled(t *testing.T) {
	eachBackend(t, testCancelReturnsAfterContext)
}

func testCancelReturnsAfterContext(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "cancel-running")
	running := make(chan context.Context, 1)
	startWorker(t, q, fixedRule(t, time.Second, 3), func(ctx context.Context, j *Job) error {
		running <- ctx
		<-ctx.Done()
		return ctx.Err()
	}, WithLease(6*time.Second))
	id, err := q.Enqueue(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var hctx context.Context
	select {
	case hctx = <-running:
	case <-time.After(5 * time.Second):
		t.Fatal("the job never started")
	}
	start := time.Now()
	was, err := q.Cancel(ctx, id)
	took := time.Since(start)
	if err != nil || was != StateActive {
		t.Fatalf("Cancel(running) = %v, %v; want active, nil", was, err)
	}
	if !errors.Is(context.Cause(hctx), ErrCancelled) {
		t.Errorf("the handler's context when Cancel returned: cause %v, want ErrCancelled", context.Cause(hctx))
	}
	if took > 3*time.Second {
		t.Errorf("Cancel took %s, want the worker's confirmation well before its renewal (2s) and lease (6s)", took)
	}
}

// On a Cluster the cancel's message reaches the worker (PUBLISH from the
// script, on whichever node the worker listens) and its confirmation
// lands in the queue's slot.
func TestCancelWaitCluster(t *testing.T) {
	runCluster(t, []backendTest{
		{"held", testCancelHeldJobNeverStarts},
		{"running", testCancelReturnsAfterContext},
	}, "cw")
}

// heldByDeadWorker reserves a job with a worker that never starts (as one
// that died holding it), with lease, and returns its ID.
func heldByDeadWorker(t *testing.T, q *Queue, lease time.Duration) string {
	t.Helper()
	id, err := q.Enqueue(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := idle(t, q, fixedRule(t, time.Second, 3), WithLease(lease))
	j, _ := reserveOne(t, w)
	if j.ID != id {
		t.Fatalf("reserved %s, want %s", j.ID, id)
	}
	return id
}

// Cancel of a job held by a worker that died (no confirmation comes)
// returns once that worker's lease ran out, not before and not much
// after, with no error: no worker can start the job unseen from then on.
func TestCancelOfADeadWorkersJobReturnsByItsLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "cancel-dead")
		const lease = 400 * time.Millisecond
		reserved := time.Now()
		id := heldByDeadWorker(t, q, lease)
		was, err := q.Cancel(ctx, id)
		took := time.Since(reserved)
		if err != nil || was != StateActive {
			t.Fatalf("Cancel = %v, %v; want active, nil", was, err)
		}
		// The lease runs from the reserve on the server: Cancel returns at
		// or after it (less the server's millisecond), within a few polls.
		if took < lease-5*time.Millisecond || took > lease+2*time.Second {
			t.Errorf("Cancel returned %s after the reserve, want at the %s lease's end", took, lease)
		}
		if n, err := rdb.HLen(ctx, q.keys.cancelling).Result(); err != nil || n != 0 {
			t.Errorf("cancelling hash holds %d entries (%v) once the lease ran out, want none", n, err)
		}
		if j, err := q.Job(ctx, id); err != nil || j.State != StateFailed || !j.Cancelled {
			t.Errorf("job %+v (%v), want failed, cancelled", j, err)
		}
	})
}

// When Cancel's context ends before the holder confirmed, Cancel returns
// the state it found and an error matching ErrCancelUnconfirmed and the
// context's: the job is cancelled all the same. Delete of that job waits
// as Cancel does (nothing deleted when its context ends first), and
// deletes it once the lease ran out.
func TestCancelUnconfirmedWhenItsContextEnds(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "cancel-unconfirmed")
		const lease = 1500 * time.Millisecond
		id := heldByDeadWorker(t, q, lease)
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		was, err := q.Cancel(cctx, id)
		if was != StateActive || !errors.Is(err, ErrCancelUnconfirmed) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Cancel with a short context = %v, %v; want active and an error matching ErrCancelUnconfirmed and DeadlineExceeded", was, err)
		}
		if j, err := q.Job(ctx, id); err != nil || j.State != StateFailed || !j.Cancelled {
			t.Errorf("job %+v (%v) after an unconfirmed cancel, want failed, cancelled", j, err)
		}
		dctx, dcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer dcancel()
		if _, err := q.Delete(dctx, id); !errors.Is(err, ErrCancelUnconfirmed) {
			t.Fatalf("Delete before the holder confirmed or its lease ran out = %v, want an error matching ErrCancelUnconfirmed", err)
		}
		if _, err := q.Job(ctx, id); err != nil {
			t.Fatalf("the job is gone after a Delete that was refused: %v", err)
		}
		was, err = q.Delete(ctx, id)
		if err != nil || was != StateFailed {
			t.Fatalf("Delete once the lease runs out = %v, %v; want failed, nil", was, err)
		}
		if _, err := q.Job(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("job after Delete: %v, want ErrNotFound", err)
		}
	})
}

// A worker whose clock says it held a job past the job's lease (as a
// process stopped by SIGSTOP finds on resume) does not start it on trust:
// it renews the lease first, which shows that another worker reclaimed
// it, and drops it (before the fix it started it beside that worker's
// run). A job held as long but still its own starts after the check.
func TestHeldJobPastItsLeaseStartsOnlyAfterACheck(t *testing.T) {
	for _, reclaimed := range []bool{true, false} {
		name := "still-held"
		if reclaimed {
			name = "reclaimed"
		}
		t.Run(name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
				ctx := context.Background()
				q := newQueue(t, rdb, prefix, "stale-held")
				const lease = 2 * time.Second
				var skew atomic.Int64 // how far the worker's clock is ahead
				var mu sync.Mutex
				runs := map[string]int{}
				started, release := make(chan string, 4), make(chan struct{})
				w, err := NewWorker(q, fixedRule(t, time.Minute, 3), func(ctx context.Context, j *Job) error {
					mu.Lock()
					runs[j.ID]++
					mu.Unlock()
					started <- j.ID
					<-release
					return nil
				}, WithConcurrency(1), WithPrefetch(1), WithLease(lease),
					WithErrorHandler(func(err error) { t.Logf("worker: %v", err) }))
				if err != nil {
					t.Fatal(err)
				}
				w.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
				first, err := q.Enqueue(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				ahead, err := q.Enqueue(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					defer cancel()
					_ = w.Shutdown(sctx)
				})
				if got := <-started; got != first {
					t.Fatalf("%s started first, want %s", got, first)
				}
				deadline := time.Now().Add(5 * time.Second)
				for {
					if c, _ := q.Counts(ctx); c.Active == 2 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the second job was never held ahead")
					}
					time.Sleep(5 * time.Millisecond)
				}
				// The worker "wakes" a lease and more later.
				skew.Store(int64(lease + time.Second))
				if reclaimed {
					forceReclaim(t, rdb, q, idle(t, q, fixedRule(t, time.Minute, 3)), ahead)
				}
				close(release)
				waitState(t, q, first, StateCompleted, 5*time.Second)
				if reclaimed {
					time.Sleep(200 * time.Millisecond)
					mu.Lock()
					n := runs[ahead]
					mu.Unlock()
					if n != 0 {
						t.Errorf("the held job whose lease was reclaimed ran %d times here, want never", n)
					}
					return
				}
				waitState(t, q, ahead, StateCompleted, 5*time.Second)
				mu.Lock()
				defer mu.Unlock()
				if runs[ahead] != 1 {
					t.Errorf("the held job still its own ran %d times, want once", runs[ahead])
				}
			})
		})
	}
}

// A bulk cancel of running jobs whose workers died waits, as Cancel does,
// until their leases ran out, and the waits run side by side: three jobs
// held under leases that end together take about one lease, not three.
func TestBulkCancelOfDeadWorkersJobsWaitsOneLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "bulk-cancel-dead")
		const lease = 500 * time.Millisecond
		wit := stall.Watch(t)
		reserved := time.Now()
		ids := map[string]bool{}
		for range 3 {
			ids[heldByDeadWorker(t, q, lease)] = true
		}
		p, err := q.Bulk(ctx, BulkCancel, Filter{State: StateActive}, BulkOptions{}, nil)
		took := time.Since(reserved)
		if err != nil || p.Done != 3 {
			t.Fatalf("Bulk cancel = %+v, %v; want 3 done", p, err)
		}
		// The last lease began last; each wait ends at its own lease's
		// end, measured from the reply: waited one after the other they take
		// about three leases.
		if took < lease-5*time.Millisecond || took > lease+wit.Allow(400*time.Millisecond, reserved, time.Now()) {
			t.Errorf("Bulk cancel returned %s after the first reserve, want about one %s lease", took, lease)
		}
		for id := range ids {
			if j, err := q.Job(ctx, id); err != nil || j.State != StateFailed || !j.Cancelled {
				t.Errorf("job %s: %+v (%v), want failed, cancelled", id, j, err)
			}
		}
	})
}

// A cancel published before the worker's subscription to the cancels
// channel was live reaches it anyway: once subscribed, the worker looks
// up its jobs in the cancelling hash. Before the fix the cancel waited for
// the next renewal (10s here), as the CI run's loaded machine showed when
// the subscription came up late.
func TestCancelBeforeTheSubscriptionIsLive(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "cancel-early")
		id, err := q.Enqueue(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		gate := make(chan struct{})
		opened := sync.OnceFunc(func() { close(gate) })
		t.Cleanup(opened)
		started := make(chan struct{}, 1)
		w, err := NewWorker(q, fixedRule(t, time.Millisecond, 1), func(ctx context.Context, j *Job) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}, WithLease(30*time.Second), WithConcurrency(1), WithPrefetch(0)) // its one slot taken: no reserve sees the cancel
		if err != nil {
			t.Fatal(err)
		}
		var gated atomic.Bool
		w.beforeCancelSubscribe = func() {
			if gated.CompareAndSwap(false, true) {
				<-gate
			}
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			opened()
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = w.Shutdown(sctx)
		})
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the job never started")
		}
		type result struct {
			was  State
			err  error
			took time.Duration
		}
		done := make(chan result, 1)
		go func() {
			s := time.Now()
			was, err := q.Cancel(ctx, id)
			done <- result{was, err, time.Since(s)}
		}()
		time.Sleep(200 * time.Millisecond) // the cancel is published to no one
		opened()
		select {
		case r := <-done:
			if r.err != nil || r.was != StateActive {
				t.Fatalf("Cancel = %v, %v; want active, nil", r.was, r.err)
			}
			if r.took > 5*time.Second {
				t.Errorf("Cancel took %s, want the worker's confirmation once it subscribed, well before its renewal (10s)", r.took)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Cancel did not return in 20s")
		}
	})
}
