package native

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A worker holds up to its prefetch of jobs beyond its running handlers,
// leased (Active) but not started, and starts them in the queue's order as
// handlers free up, never running more handlers than its concurrency.
func TestPrefetchHoldsJobsAheadInOrder(t *testing.T) {
	for _, prefetch := range []int{0, 2} {
		t.Run(fmt.Sprintf("prefetch%d", prefetch), func(t *testing.T) {
			eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
				ctx := context.Background()
				q := newQueue(t, rdb, prefix, "prefetch")
				var ids []string
				for range 5 {
					id, err := q.Enqueue(ctx, []byte("x"))
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, id)
				}
				release := make(chan struct{})
				var mu sync.Mutex
				var order []string
				running, most := 0, 0
				startWorker(t, q, fixedRule(t, time.Millisecond, 1), func(ctx context.Context, j *Job) error {
					mu.Lock()
					order = append(order, j.ID)
					running++
					most = max(most, running)
					mu.Unlock()
					<-release
					mu.Lock()
					running--
					mu.Unlock()
					return nil
				}, WithConcurrency(1), WithPrefetch(prefetch))
				// One job runs; prefetch more are leased, waiting for it.
				want := int64(1 + prefetch)
				deadline := time.Now().Add(5 * time.Second)
				var c Counts
				for {
					var err error
					if c, err = q.Counts(ctx); err != nil {
						t.Fatal(err)
					}
					if c.Active >= want || time.Now().After(deadline) {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(50 * time.Millisecond) // time enough to (wrongly) take more
				if c, _ = q.Counts(ctx); c.Active != want || c.Waiting != int64(5)-want {
					t.Fatalf("active %d waiting %d with one handler blocked, want %d and %d", c.Active, c.Waiting, want, 5-want)
				}
				close(release)
				for _, id := range ids {
					waitState(t, q, id, StateCompleted, 5*time.Second)
				}
				mu.Lock()
				defer mu.Unlock()
				if most != 1 {
					t.Errorf("%d handlers ran at once, want at most 1 (the concurrency)", most)
				}
				if fmt.Sprint(order) != fmt.Sprint(ids) {
					t.Errorf("ran %v, want the queue's order %v", order, ids)
				}
			})
		})
	}
}

func TestWithPrefetchRejectsNegative(t *testing.T) {
	q := newQueue(t, redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), "p", "prefetch")
	if _, err := NewWorker(q, fixedRule(t, time.Millisecond, 1), func(context.Context, *Job) error { return nil }, WithPrefetch(-1)); err == nil {
		t.Fatal("WithPrefetch(-1) accepted, want an error")
	}
}
