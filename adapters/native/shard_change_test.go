package native

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestShardCountChangeRefused pins what changing N does today: a live
// change is not built, so NewShardedQueue refuses another count on a queue
// with a layout, and refuses to spread a queue of one shard that holds
// jobs, each with an error that names the way that works (drain into a
// queue of the new count under a new name, docs/native.md "Changing N");
// the refusal changes nothing stored. It failed before the errors named
// the way (they said "open it with OpenQueue, or ask for 3" and "not
// supported yet").
func TestShardCountChangeRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newSharded(t, rdb, prefix, "three", 3)
		id, err := q.Enqueue(ctx, []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		lk := layoutKey(prefix, "three")
		before, err := rdb.Get(ctx, lk).Result()
		if err != nil {
			t.Fatal(err)
		}
		wantWay := func(t *testing.T, what string, err error, n int) {
			t.Helper()
			if err == nil {
				t.Fatalf("%s: no error, want a refusal", what)
			}
			for _, s := range []string{`"Changing N"`, fmt.Sprintf("Reshard(ctx, rdb, %q, %d)", "", n)[:len("Reshard(ctx, rdb, ")], fmt.Sprintf("-shards %d", n), "rebound queue reshard"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%s: error %q does not name the way to change N (%q)", what, err, s)
				}
			}
		}
		for _, n := range []int{1, 2, 4} {
			_, err := NewShardedQueue(ctx, rdb, "three", n, WithPrefix(prefix))
			wantWay(t, fmt.Sprintf("NewShardedQueue(%d) of a queue of 3", n), err, n)
			if !strings.Contains(fmt.Sprint(err), "has 3 shards") {
				t.Errorf("NewShardedQueue(%d): error %q does not say the stored count", n, err)
			}
		}
		if after, _ := rdb.Get(ctx, lk).Result(); after != before {
			t.Errorf("a refused change rewrote the layout: %s, was %s", after, before)
		}
		opened, err := OpenQueue(ctx, rdb, "three", WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(opened.ShardTags(), q.ShardTags()) {
			t.Errorf("after the refusals the queue opens with tags %q, want %q", opened.ShardTags(), q.ShardTags())
		}
		if j, err := opened.Job(ctx, id); err != nil || j.State != StateWaiting {
			t.Errorf("job %s after the refusals: %+v, %v, want it waiting", id, j, err)
		}

		// A queue of one shard in use: refused, untouched, still one shard.
		one := newQueue(t, rdb, prefix, "one")
		oid, err := one.Enqueue(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewShardedQueue(ctx, rdb, "one", 3, WithPrefix(prefix))
		wantWay(t, "NewShardedQueue(3) of a queue of one shard holding a job", err, 3)
		if n, _ := rdb.Exists(ctx, layoutKey(prefix, "one")).Result(); n != 0 {
			t.Error("a refused NewShardedQueue wrote a layout")
		}
		reopened, err := OpenQueue(ctx, rdb, "one", WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		if reopened.Shards() != 1 || reopened.keys.base != one.keys.base {
			t.Errorf("the queue of one shard reopens with %d shards, base %q, want 1, %q", reopened.Shards(), reopened.keys.base, one.keys.base)
		}
		if j, err := reopened.Job(ctx, oid); err != nil || j.State != StateWaiting {
			t.Errorf("job %s after the refusal: %+v, %v, want it waiting", oid, j, err)
		}
	})
}

// TestShardChangeByDraining runs the procedure docs/native.md gives for
// changing N today, on live queues: producers enqueue into the old queue
// while a worker serves it; a queue of the new count is created under a
// new name with a worker of its own; the producers switch to it (one at a
// time, so for a while both queues take jobs); the old queue's worker is
// kept until its Counts are zero. Every acknowledged job runs exactly once,
// 1 -> 3 and 3 -> 2. It also pins what WithID does across the change: the
// two queues are two queues, so one ID enqueued on each is two jobs.
func TestShardChangeByDraining(t *testing.T) {
	for _, c := range []struct{ from, to int }{{1, 3}, {3, 2}} {
		t.Run(fmt.Sprintf("%d-to-%d", c.from, c.to), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
				ctx := context.Background()
				oldQ := newSharded(t, rdb, prefix, "jobs", c.from)
				var mu sync.Mutex
				ran := map[string]int{}
				handle := func(ctx context.Context, j *Job) error {
					mu.Lock()
					ran[string(j.Payload)]++
					mu.Unlock()
					return nil
				}
				rule := fixedRule(t, 5*time.Millisecond, 3)
				oldW := startWorker(t, oldQ, rule, handle, WithConcurrency(4))

				// Two producers, each enqueueing into the queue its
				// current pointer names; acked holds the jobs whose
				// Enqueue returned no error.
				var cur [2]*Queue
				cur[0], cur[1] = oldQ, oldQ
				var acked []string
				stop := make(chan struct{})
				var wg sync.WaitGroup
				var stopOnce sync.Once
				halt := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
				defer halt() // (on a t.Fatal too)
				for p := range 2 {
					wg.Go(func() {
						for n := 0; ; n++ {
							select {
							case <-stop:
								return
							default:
							}
							mu.Lock()
							q := cur[p]
							mu.Unlock()
							payload := fmt.Sprintf("p%d-%d", p, n)
							if _, err := q.Enqueue(ctx, []byte(payload)); err != nil {
								t.Errorf("enqueue %s: %v", payload, err)
								return
							}
							mu.Lock()
							acked = append(acked, payload)
							mu.Unlock()
							time.Sleep(time.Millisecond)
						}
					})
				}
				enqueued := func(n int) { // waits until n jobs were acknowledged
					t.Helper()
					deadline := time.Now().Add(30 * time.Second)
					for {
						mu.Lock()
						k := len(acked)
						mu.Unlock()
						if k >= n {
							return
						}
						if time.Now().After(deadline) {
							t.Fatalf("%d jobs acknowledged in 30s, want %d", k, n)
						}
						time.Sleep(2 * time.Millisecond)
					}
				}
				enqueued(50)
				newQ := newSharded(t, rdb, prefix, "jobs-v2", c.to)
				startWorker(t, newQ, rule, handle, WithConcurrency(4))
				mu.Lock()
				cur[0] = newQ // one producer switches, the other still on the old queue
				mu.Unlock()
				enqueued(100)
				mu.Lock()
				cur[1] = newQ
				mu.Unlock()
				enqueued(150)
				halt()

				// The old queue drains: its worker stays until its Counts
				// are zero (completed jobs aside), then goes.
				deadline := time.Now().Add(30 * time.Second)
				for {
					cnt, err := oldQ.Counts(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if cnt.Waiting+cnt.Active+cnt.Delayed == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the old queue not drained in 30s: %+v", cnt)
					}
					time.Sleep(5 * time.Millisecond)
				}
				sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if err := oldW.Shutdown(sctx); err != nil {
					t.Fatal(err)
				}
				deadline = time.Now().Add(30 * time.Second)
				for {
					cnt, err := newQ.Counts(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if cnt.Waiting+cnt.Active+cnt.Delayed == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the new queue not drained in 30s: %+v", cnt)
					}
					time.Sleep(5 * time.Millisecond)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, p := range acked {
					if ran[p] != 1 {
						t.Errorf("job %s ran %d times, want exactly once", p, ran[p])
					}
				}
				if len(ran) != len(acked) {
					t.Errorf("%d distinct jobs ran, %d acknowledged", len(ran), len(acked))
				}
				oc, _ := oldQ.Counts(ctx)
				nc, _ := newQ.Counts(ctx)
				if oc.Completed == 0 || nc.Completed == 0 || oc.Completed+nc.Completed != int64(len(acked)) {
					t.Errorf("completed %d on the old queue and %d on the new, want both > 0 and %d in all", oc.Completed, nc.Completed, len(acked))
				}

				// WithID across the change: the queues do not see each
				// other's IDs.
				if _, err := oldQ.Enqueue(ctx, nil, WithID("same"), WithDelay(time.Hour)); err != nil {
					t.Fatal(err)
				}
				if _, err := newQ.Enqueue(ctx, nil, WithID("same"), WithDelay(time.Hour)); err != nil {
					t.Errorf("WithID(same) on the new queue after the old holds it: %v, want a second job (the queues are two)", err)
				}
				if _, err := newQ.Enqueue(ctx, nil, WithID("same"), WithDelay(time.Hour)); !errors.Is(err, ErrJobExists) {
					t.Errorf("WithID(same) twice on the new queue: %v, want ErrJobExists", err)
				}
			})
		})
	}
}
