package native

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/reboundtest"
)

// jitterRule jitters a fixed hour, so two keys give delays minutes apart.
func jitterRule(t *testing.T, maxAttempts int) backoff.Rule {
	t.Helper()
	r, err := backoff.NewRule(backoff.Must(backoff.Jitter(backoff.Must(backoff.Fixed(time.Hour)))), maxAttempts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// apart fails the test unless keying by business and by id gives delays
// far enough apart for the checks to tell them apart.
func apart(t *testing.T, rule backoff.Rule, business, id string) time.Duration {
	t.Helper()
	want := backoff.Delay(rule.Policy(), 1, backoff.Key(business))
	byID := backoff.Delay(rule.Policy(), 1, backoff.Key(id))
	if d := want - byID; d < 10*time.Second && d > -10*time.Second {
		t.Fatalf("test setup: keys %q and %q give delays %s and %s, too close to tell apart", business, id, want, byID)
	}
	return want
}

func TestWithKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "key")
		rule := jitterRule(t, 3)
		rec := &reboundtest.Recorder{}
		var reported atomic.Int32
		// Key by the payload (a business ID); panic for payload "panic".
		startWorker(t, q, rule, func(context.Context, *Job) error { return errors.New("down") },
			WithObserver(rec),
			WithErrorHandler(func(err error) {
				if strings.Contains(err.Error(), "key function panicked") {
					reported.Add(1)
				}
			}),
			WithKey(func(j *Job) backoff.Source {
				if string(j.Payload) == "panic" {
					panic("no business ID")
				}
				return backoff.Key(string(j.Payload))
			}))
		// Two jobs with one business ID get one schedule.
		want := apart(t, rule, "order-1", "job-a")
		apart(t, rule, "order-1", "job-b")
		for _, id := range []string{"job-a", "job-b"} {
			if _, err := q.Enqueue(ctx, []byte("order-1"), WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		byID := backoff.Delay(rule.Policy(), 1, backoff.Key("job-p"))
		if _, err := q.Enqueue(ctx, []byte("panic"), WithID("job-p")); err != nil {
			t.Fatal(err)
		}
		for id, wantDelay := range map[string]time.Duration{"job-a": want, "job-b": want, "job-p": byID} {
			info := waitState(t, q, id, StateDelayed, 5*time.Second)
			if d := waitEnded(t, rec, id, 1)[0].Result.Decision.Delay; d != wantDelay {
				t.Errorf("job %s: delay %s, want %s", id, d, wantDelay)
			}
			if left := time.Until(info.NextFireAt); left > wantDelay+2*time.Second || left < wantDelay-2*time.Second {
				t.Errorf("job %s: fires in %s, want about %s", id, left, wantDelay)
			}
		}
		if reported.Load() == 0 {
			t.Errorf("the key function's panic was not reported to the error handler")
		}
	})
}

func TestWithKeyOnReclaim(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "keyreclaim")
		rule := jitterRule(t, 3)
		var mu sync.Mutex
		var seen []Job
		w := idle(t, q, rule, WithLease(50*time.Millisecond), WithKey(func(j *Job) backoff.Source {
			mu.Lock()
			seen = append(seen, *j)
			mu.Unlock()
			return backoff.Key(string(j.Payload))
		}))
		want := apart(t, rule, "order-9", "job-r")
		if _, err := q.Enqueue(ctx, []byte("order-9"), WithID("job-r"), WithName("mail")); err != nil {
			t.Fatal(err)
		}
		reserveOne(t, w)
		time.Sleep(70 * time.Millisecond) // the worker "died"; its lease runs out
		if n, err := w.reclaimOnce(ctx, 10); err != nil || n != 1 {
			t.Fatalf("reclaim found %d (%v), want 1", n, err)
		}
		mu.Lock()
		if len(seen) != 1 || seen[0].ID != "job-r" || string(seen[0].Payload) != "order-9" ||
			seen[0].Name != "mail" || seen[0].Attempt != 1 || seen[0].MaxAttempts != 3 {
			t.Errorf("key function saw %+v, want job-r attempt 1 of 3 with its stored name and payload", seen)
		}
		mu.Unlock()
		info, err := q.Job(ctx, "job-r")
		if err != nil || info.State != StateDelayed {
			t.Fatalf("reclaimed job: %+v (%v), want delayed", info, err)
		}
		if left := time.Until(info.NextFireAt); left > want+2*time.Second || left < want-2*time.Second {
			t.Errorf("reclaimed job fires in %s, want about %s (keyed by its payload)", left, want)
		}
	})
}
