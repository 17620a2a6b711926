package native

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
)

// A typed-nil client (a nil *redis.Client in the interface) is refused like
// a nil one, not accepted to panic at the first Enqueue.
func TestNewQueueRefusesTypedNilClient(t *testing.T) {
	var c *redis.Client
	var cc *redis.ClusterClient
	for _, rdb := range []redis.UniversalClient{c, cc} {
		q, err := NewQueue(rdb, "q")
		if err == nil || !strings.Contains(err.Error(), "redis client is nil") {
			t.Errorf("NewQueue(%T(nil)) = %v, %v; want an error saying the client is nil", rdb, q, err)
		}
	}
}

func TestQueueNamesWithBracesAndColons(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		names := []string{"a{b}:c", "}{", "x}:job:1", "%7B", "plain:colon"}
		qs := map[string]*Queue{}
		for _, name := range names {
			q := newQueue(t, rdb, prefix, name)
			qs[name] = q
			k := q.keys
			tag := hashTag(k.wait)
			for _, key := range []string{k.due, k.active, k.delayed, k.failed, k.completed, k.jobs, k.marker, k.counter, k.control, k.giveup, k.giveupCalls} {
				if hashTag(key) != tag {
					t.Errorf("queue %q: key %q has hash tag %q, want %q like its wait list", name, key, hashTag(key), tag)
				}
			}
			if _, err := q.Enqueue(ctx, []byte(name), WithID("1}:wait")); err != nil {
				t.Fatal(err)
			}
		}
		// Distinct names never share keys: each queue sees exactly its job.
		for name, q := range qs {
			if c, err := q.Counts(ctx); err != nil || c.Waiting != 1 {
				t.Errorf("queue %q counts %+v (%v), want one waiting job", name, c, err)
			}
			info, err := q.Job(ctx, "1}:wait")
			if err != nil || string(info.Payload) != name {
				t.Errorf("queue %q job payload %q (%v), want %q", name, info.Payload, err, name)
			}
		}
		// And a worker runs one end to end.
		q := qs["a{b}:c"]
		done := make(chan string, 1)
		startWorker(t, q, fixedRule(t, time.Millisecond, 2), func(ctx context.Context, j *Job) error {
			done <- j.ID
			return nil
		})
		select {
		case id := <-done:
			waitState(t, q, id, StateCompleted, 2*time.Second)
		case <-time.After(5 * time.Second):
			t.Fatal("job on a queue named with braces never ran")
		}
	})
}

func TestPayloadLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "big", WithMaxPayload(1024))
		if _, err := q.Enqueue(ctx, make([]byte, 1024)); err != nil {
			t.Fatalf("payload at the limit: %v", err)
		}
		_, err := q.Enqueue(ctx, make([]byte, 1025))
		var pe *PayloadTooLargeError
		if !errors.As(err, &pe) || pe.Size != 1025 || pe.Limit != 1024 {
			t.Fatalf("payload above the limit: %v, want a PayloadTooLargeError of 1025 > 1024", err)
		}
		want := "native: payload is 1025 bytes, above the queue's limit of 1024 bytes (raise it with WithMaxPayload)"
		if err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
		if c, _ := q.Counts(ctx); c.Waiting != 1 {
			t.Errorf("%d jobs waiting, want only the one at the limit", c.Waiting)
		}
	})
}

func TestDuplicateID(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "dup")
		if _, err := q.Enqueue(ctx, []byte("1"), WithID("order-7")); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Enqueue(ctx, []byte("2"), WithID("order-7")); !errors.Is(err, ErrJobExists) {
			t.Fatalf("second enqueue of one ID: %v, want ErrJobExists", err)
		}
		info, _ := q.Job(ctx, "order-7")
		if string(info.Payload) != "1" {
			t.Errorf("payload %q, want the first one", info.Payload)
		}
	})
}

func TestBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	rule := fixedRule(t, time.Second, 3)
	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"nil client", func() error { _, err := NewQueue(nil, "q"); return err }, "redis client is nil"},
		{"empty queue", func() error { _, err := NewQueue(rdb, ""); return err }, "queue name is empty"},
		{"braced prefix", func() error { _, err := NewQueue(rdb, "q", WithPrefix("a{b")); return err }, "WithPrefix: \"a{b\" contains '{' or '}'"},
		{"zero payload limit", func() error { _, err := NewQueue(rdb, "q", WithMaxPayload(0)); return err }, "WithMaxPayload: 0 is not positive"},
		{"short completed retention", func() error { _, err := NewQueue(rdb, "q", WithCompletedRetention(0, 10)); return err }, "WithCompletedRetention: keeping jobs for 0s is below 1ms"},
		{"bad completed count", func() error { _, err := NewQueue(rdb, "q", WithCompletedRetention(time.Hour, -2)); return err }, "WithCompletedRetention: keeping at most -2 jobs is invalid"},
		{"short failed retention", func() error { _, err := NewQueue(rdb, "q", WithFailedRetention(0, 10)); return err }, "WithFailedRetention: keeping jobs for 0s is below 1ms"},
		{"bad failed count", func() error { _, err := NewQueue(rdb, "q", WithFailedRetention(time.Hour, -2)); return err }, "WithFailedRetention: keeping at most -2 jobs is invalid"},
		{"zero rule", func() error {
			q, _ := NewQueue(rdb, "q")
			_, err := NewWorker(q, backoff.Rule{}, func(context.Context, *Job) error { return nil })
			return err
		}, "NewWorker: the rule is the zero backoff.Rule"},
		{"nil handler", func() error { q, _ := NewQueue(rdb, "q"); _, err := NewWorker(q, rule, nil); return err }, "handler is nil"},
		{"short lease", func() error {
			q, _ := NewQueue(rdb, "q")
			_, err := NewWorker(q, rule, func(context.Context, *Job) error { return nil }, WithLease(time.Millisecond))
			return err
		}, "WithLease: 1ms is below 50ms"},
		{"zero concurrency", func() error {
			q, _ := NewQueue(rdb, "q")
			_, err := NewWorker(q, rule, func(context.Context, *Job) error { return nil }, WithConcurrency(0))
			return err
		}, "WithConcurrency: 0 is below 1"},
		{"negative delay", func() error {
			q, _ := NewQueue(rdb, "q")
			_, err := q.Enqueue(context.Background(), nil, WithDelay(-time.Second))
			return err
		}, "WithDelay: -1s is negative"},
		{"zero max attempts", func() error {
			q, _ := NewQueue(rdb, "q")
			_, err := q.Enqueue(context.Background(), nil, WithMaxAttempts(0))
			return err
		}, "WithMaxAttempts: 0 is below 1"},
		{"empty prefix", func() error { _, err := NewQueue(rdb, "q", WithPrefix("")); return err }, "WithPrefix: the prefix is empty"},
		{"zero fallback delay", func() error {
			q, _ := NewQueue(rdb, "q")
			_, err := NewWorker(q, rule, func(context.Context, *Job) error { return nil }, WithFallbackDelay(0))
			return err
		}, "WithFallbackDelay: 0s is zero, want > 0"},
		{"negative fallback delay", func() error {
			q, _ := NewQueue(rdb, "q")
			_, err := NewWorker(q, rule, func(context.Context, *Job) error { return nil }, WithFallbackDelay(-time.Second))
			return err
		}, "WithFallbackDelay: -1s is negative, want > 0"},
		{"short reclaim interval", func() error {
			q, _ := NewQueue(rdb, "q")
			_, err := NewWorker(q, rule, func(context.Context, *Job) error { return nil }, WithReclaimInterval(0))
			return err
		}, "WithReclaimInterval: 0s is not positive"},
		{"negative shutdown timeout", func() error {
			q, _ := NewQueue(rdb, "q")
			_, err := NewWorker(q, rule, func(context.Context, *Job) error { return nil }, WithShutdownTimeout(-time.Second))
			return err
		}, "WithShutdownTimeout: -1s is negative"},
		{"empty ID", func() error {
			q, _ := NewQueue(rdb, "q")
			_, err := q.Enqueue(context.Background(), nil, WithID(""))
			return err
		}, "WithID: the ID is empty"},
	}
	for _, c := range cases {
		err := c.err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// The nil rule of every option: a nil option is skipped, and an option
// given a nil function, observer, hook or policy means the default.
func TestNilOptions(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	q, err := NewQueue(rdb, "q", nil)
	if err != nil {
		t.Fatalf("NewQueue with a nil option: %v", err)
	}
	w, err := NewWorker(q, fixedRule(t, time.Second, 3), func(context.Context, *Job) error { return nil }, nil,
		WithKey(nil), WithObserver(nil), WithGiveUp(nil), WithErrorHandler(nil), WithReconnectPolicy(nil))
	if err != nil {
		t.Fatalf("NewWorker with nil options: %v", err)
	}
	if w.key != nil || w.notify.Observer != nil || w.notify.GiveUp != nil || w.notify.OnError != nil || w.reconnect != defaultReconnect {
		t.Errorf("nil options did not leave the defaults: key %v, notifier %+v, reconnect %v", w.key != nil, w.notify, w.reconnect)
	}
	if _, err := q.Enqueue(context.Background(), make([]byte, 2<<20), nil); err == nil {
		t.Errorf("Enqueue with a nil option and a too large payload: no error")
	}
}
