package native

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
)

func TestRetryThenComplete(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		q := newQueue(t, rdb, prefix, "retry")
		var mu sync.Mutex
		var starts []time.Time
		var ends []time.Time
		startWorker(t, q, fixedRule(t, 100*time.Millisecond, 5), func(ctx context.Context, j *Job) error {
			mu.Lock()
			defer mu.Unlock()
			starts = append(starts, time.Now())
			defer func() { ends = append(ends, time.Now()) }()
			if j.Attempt < 3 {
				return errors.New("boom")
			}
			return nil
		})
		id, err := q.Enqueue(context.Background(), []byte("x"))
		if err != nil {
			t.Fatal(err)
		}
		info := waitState(t, q, id, StateCompleted, 5*time.Second)
		if info.Attempts != 3 || info.LastError != "boom" {
			t.Fatalf("attempts %d last error %q, want 3 and boom", info.Attempts, info.LastError)
		}
		mu.Lock()
		defer mu.Unlock()
		for i := 1; i < len(starts); i++ {
			gap := starts[i].Sub(ends[i-1])
			t.Logf("gap %d: %s", i, gap)
			if gap < 100*time.Millisecond {
				t.Errorf("retry %d ran %s after the failure, before its 100ms delay", i, gap)
			}
		}
	})
}

func TestExhaustedAndPermanent(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		q := newQueue(t, rdb, prefix, "exh")
		startWorker(t, q, fixedRule(t, 10*time.Millisecond, 3), func(ctx context.Context, j *Job) error {
			if string(j.Payload) == "perm" {
				return backoff.Permanent(errors.New("bad input"))
			}
			return errors.New("always")
		})
		ctx := context.Background()
		a, _ := q.Enqueue(ctx, []byte("a"))
		p, _ := q.Enqueue(ctx, []byte("perm"))
		o, _ := q.Enqueue(ctx, []byte("o"), WithMaxAttempts(5))
		if info := waitState(t, q, a, StateFailed, 5*time.Second); info.Attempts != 3 {
			t.Errorf("exhausted job took %d attempts, want 3", info.Attempts)
		}
		if info := waitState(t, q, p, StateFailed, 5*time.Second); info.Attempts != 1 || info.LastError != "bad input" {
			t.Errorf("permanent job: %d attempts, error %q; want 1, bad input", info.Attempts, info.LastError)
		}
		if info := waitState(t, q, o, StateFailed, 5*time.Second); info.Attempts != 5 {
			t.Errorf("job with its own cap took %d attempts, want 5", info.Attempts)
		}
	})
}
