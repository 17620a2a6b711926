package native

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
	"github.com/rebound-go/rebound/reboundtest"
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

// backendTest is one test of a table run on every backend
// (runBackends) and on a three-master Cluster (runCluster), each on queues
// of its own.
type backendTest struct {
	name string
	f    func(t *testing.T, rdb redis.UniversalClient, prefix string)
}

// runBackends runs each test of tests on every backend (eachBackend).
func runBackends(t *testing.T, tests []backendTest) {
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, c.f)
		})
	}
}

// runCluster runs each test of tests on the test Cluster, test i under the
// key prefix prefix followed by i.
func runCluster(t *testing.T, tests []backendTest, prefix string) {
	cc := testenv.Cluster(t)
	for i, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			c.f(t, cc, fmt.Sprint(prefix, i))
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

// waitEnded waits until the recorder has seen n ended attempts of job id.
func waitEnded(t *testing.T, rec *reboundtest.Recorder, id string, n int) []reboundtest.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		evs := rec.Job(id)
		ended := 0
		for _, e := range evs {
			if e.Ended {
				ended++
			}
		}
		if ended >= n {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %d attempts ended, want %d; story:\n%s", id, ended, n, rec.Story(id))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// idle returns a worker that is never started, for driving the scripts by
// hand.
func idle(t *testing.T, q *Queue, rule backoff.Rule, opts ...WorkerOption) *Worker {
	t.Helper()
	opts = append([]WorkerOption{WithErrorHandler(func(err error) { t.Logf("idle worker: %v", err) })}, opts...)
	w, err := NewWorker(q, rule, func(context.Context, *Job) error { return nil }, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func reserveOne(t *testing.T, w *Worker) (*Job, string) {
	t.Helper()
	jobs, tokens, _, err := w.reserve(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("reserve gave %d jobs, want 1", len(jobs))
	}
	return jobs[0], tokens[0]
}

// tc turns a script reply into its status code, failing the test on error.
type tc struct{ t *testing.T }

func (c tc) code(res []any, err error) int64 {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
	return parseInt(res[0])
}

// forceReclaim makes the lease of running job id expire and reclaims it
// with w, retrying while the job's own worker renews the lease in between.
func forceReclaim(t *testing.T, rdb redis.UniversalClient, q *Queue, w *Worker, id string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := rdb.ZAddXX(ctx, q.keys.active, redis.Z{Score: 0, Member: id}).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.reclaimOnce(ctx, 10); err != nil {
			t.Fatal(err)
		}
		if info, err := q.Job(ctx, id); err == nil && info.State != StateActive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s was never reclaimed", id)
		}
	}
}

// hashTag returns the part of key Redis Cluster hashes.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}
