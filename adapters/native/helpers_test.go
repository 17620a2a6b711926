package native

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
)

// backend names a Redis a test runs on.
type backend struct {
	name string
	open func(t testing.TB) (redis.UniversalClient, string)
}

// backends are the servers every behavioural test runs on: the real Redis
// (skipped, or failed under REBOUND_REQUIRE_SERVERS=1, when it is down) and
// an in-process miniredis.
var backends = []backend{
	{"redis", func(t testing.TB) (redis.UniversalClient, string) {
		c := testenv.Redis(t)
		return c, testenv.Prefix(t, c)
	}},
	{"miniredis", func(t testing.TB) (redis.UniversalClient, string) {
		m := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		return c, "rbt"
	}},
}

func eachBackend(t *testing.T, f func(t *testing.T, rdb redis.UniversalClient, prefix string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			rdb, prefix := b.open(t)
			f(t, rdb, prefix)
		})
	}
}

func newQueue(t testing.TB, rdb redis.UniversalClient, prefix, name string, opts ...QueueOption) *Queue {
	t.Helper()
	q, err := NewQueue(rdb, name, append([]QueueOption{WithPrefix(prefix)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func fixedRule(t testing.TB, d time.Duration, maxAttempts int) backoff.Rule {
	t.Helper()
	p, err := backoff.Fixed(d)
	if err != nil {
		t.Fatal(err)
	}
	r, err := backoff.NewRule(p, maxAttempts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// startWorker starts a worker shut down at the end of the test; errors it
// reports are logged.
func startWorker(t testing.TB, q *Queue, rule backoff.Rule, h Handler, opts ...WorkerOption) *Worker {
	t.Helper()
	opts = append([]WorkerOption{WithErrorHandler(func(err error) { t.Logf("worker: %v", err) })}, opts...)
	w, err := NewWorker(q, rule, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return w
}

// waitState polls the inspector until the job reaches state or the time
// runs out.
func waitState(t testing.TB, q *Queue, id string, want State, within time.Duration) StoredJob {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		info, err := q.Job(context.Background(), id)
		if err == nil && info.State == want {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: state %v (err %v), want %v within %s", id, info.State, err, want, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reserve leases up to n jobs, as the fetch loop does with no outcomes to
// store.
func (w *Worker) reserve(n int) ([]*Job, []string, time.Time, error) {
	rjs, due, err := w.reserveWith(n, nil)
	var jobs []*Job
	var tokens []string
	for _, rj := range rjs {
		jobs = append(jobs, rj.job)
		tokens = append(tokens, rj.token)
	}
	return jobs, tokens, due, err
}

// complete runs the complete script for one job, not batched.
func (w *Worker) complete(ctx context.Context, id, token, meta string) ([]any, error) {
	return oneReply(scriptComplete.Run(ctx, w.q.rdb, w.completeKeys(), w.completeArgs(id, token, meta)...).Slice())
}
