package native

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
)

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

func TestUnknownJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "unknown")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3))
		if _, err := q.Job(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Job(unknown) = %v, want ErrNotFound", err)
		}
		if c := (tc{t}).code(w.complete(ctx, "nope", "1", "")); c != -2 {
			t.Errorf("complete(unknown) = %d, want -2 (unknown job)", c)
		}
		if c := (tc{t}).code(w.fail(ctx, "nope", "1", backoff.Decision{Outcome: backoff.OutcomeRetry}, 3, "x", "", false)); c != -2 {
			t.Errorf("fail(unknown) = %d, want -2 (unknown job)", c)
		}
		_, err := w.finish("nope", nil, func(ctx context.Context) ([]any, error) { return w.complete(ctx, "nope", "1", "") })
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("finish(unknown) = %v, want ErrNotFound", err)
		}
		if n, err := q.Counts(ctx); err != nil || n != (Counts{}) {
			t.Errorf("counts after calls on an unknown job = %+v, %v; want all zero", n, err)
		}
	})
}

func TestDoubleCompletion(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "double")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3))
		id, err := q.Enqueue(ctx, []byte("p"))
		if err != nil {
			t.Fatal(err)
		}
		j, tok := reserveOne(t, w)
		if j.ID != id || j.Attempt != 1 || string(j.Payload) != "p" {
			t.Fatalf("reserved %+v, want job %s attempt 1 payload p", j, id)
		}
		if c := (tc{t}).code(w.complete(ctx, id, tok, "")); c != 1 {
			t.Fatalf("first complete = %d, want 1", c)
		}
		// The same call again (a retry whose first reply was lost) is told
		// it was applied and changes nothing.
		if c := (tc{t}).code(w.complete(ctx, id, tok, "")); c != 0 {
			t.Errorf("second complete with the same token = %d, want 0 (already applied)", c)
		}
		if c := (tc{t}).code(w.fail(ctx, id, tok, backoff.Decision{Outcome: backoff.OutcomeRetry}, 3, "late", "", false)); c != 0 {
			t.Errorf("fail after complete with the same token = %d, want 0", c)
		}
		if c := (tc{t}).code(w.complete(ctx, id, "999999", "")); c != -1 {
			t.Errorf("complete with a foreign token = %d, want -1 (stale)", c)
		}
		info, err := q.Job(ctx, id)
		if err != nil || info.State != StateCompleted || info.Attempts != 1 || info.LastError != "" {
			t.Errorf("after double completion: %+v, %v; want completed after 1 attempt, no error", info, err)
		}
		if n, _ := q.Counts(ctx); n != (Counts{Completed: 1}) {
			t.Errorf("counts %+v, want one completed job", n)
		}
	})
}

func TestStaleWorkerAfterReclaim(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "stale")
		rule := fixedRule(t, 40*time.Millisecond, 3)
		w := idle(t, q, rule, WithLease(50*time.Millisecond))
		id, _ := q.Enqueue(ctx, []byte("p"))
		_, oldTok := reserveOne(t, w)

		// The lease is live: reclaim leaves it alone, and a reclaiming
		// fail is refused even with the right token.
		if n, err := w.reclaimOnce(ctx, 10); err != nil || n != 0 {
			t.Fatalf("reclaim with a live lease found %d (%v), want 0", n, err)
		}
		if c := (tc{t}).code(w.fail(ctx, id, oldTok, backoff.Decision{Outcome: backoff.OutcomeRetry}, 3, "x", "", true)); c != -3 {
			t.Fatalf("reclaiming fail on a live lease = %d, want -3", c)
		}
		time.Sleep(70 * time.Millisecond)
		if n, err := w.reclaimOnce(ctx, 10); err != nil || n != 1 {
			t.Fatalf("reclaim after expiry found %d (%v), want 1", n, err)
		}
		info, _ := q.Job(ctx, id)
		if info.State != StateDelayed || info.Attempts != 1 || info.LastError != ErrLeaseExpired.Error() {
			t.Fatalf("reclaimed job: %+v; want delayed, 1 attempt counted, lease-expired error", info)
		}

		// The stale worker comes back: neither completing nor failing nor
		// renewing may touch the newer state.
		if c := (tc{t}).code(w.complete(ctx, id, oldTok+"x", "")); c != -1 {
			t.Errorf("stale complete = %d, want -1", c)
		}
		if res, err := scriptExtend.Run(ctx, rdb, []string{q.keys.active, q.keys.jobs}, 1000, id, oldTok).Slice(); err != nil || parseInt(res[0]) != 0 {
			t.Errorf("stale extend = %v, %v; want 0", res, err)
		}
		time.Sleep(50 * time.Millisecond)
		j, newTok := reserveOne(t, w)
		if j.Attempt != 2 || newTok == oldTok {
			t.Fatalf("re-reserved attempt %d token %s (old %s); want attempt 2 and a new token", j.Attempt, newTok, oldTok)
		}
		// The reclaim ended the old token's attempt, not its worker: the
		// stale worker's own outcome is refused as stale, never taken for
		// one it already stored.
		_, err := w.finish(id, nil, func(ctx context.Context) ([]any, error) { return w.complete(ctx, id, oldTok, "") })
		if !errors.Is(err, ErrLeaseLost) {
			t.Errorf("stale complete with the reclaimed token: %v, want ErrLeaseLost", err)
		}
		_, err = w.finish(id, nil, func(ctx context.Context) ([]any, error) { return w.complete(ctx, id, "12345", "") })
		if !errors.Is(err, ErrLeaseLost) {
			t.Errorf("stale complete with a foreign token: %v, want ErrLeaseLost", err)
		}
		if info, _ := q.Job(ctx, id); info.State != StateActive || info.Attempts != 2 {
			t.Errorf("after stale calls: %+v; want active with attempt 2", info)
		}
		if c := (tc{t}).code(w.complete(ctx, id, newTok, "")); c != 1 {
			t.Errorf("current holder's complete = %d, want 1", c)
		}
	})
}

func TestPoisonJobStopsAtCap(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "poison")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3), WithLease(50*time.Millisecond))
		id, _ := q.Enqueue(ctx, nil)
		for attempt := 1; attempt <= 3; attempt++ {
			deadline := time.Now().Add(2 * time.Second)
			var j *Job
			for j == nil {
				jobs, _, _, err := w.reserve(1)
				if err != nil {
					t.Fatal(err)
				}
				if len(jobs) == 1 {
					j = jobs[0]
				} else if time.Now().After(deadline) {
					t.Fatalf("attempt %d never became runnable", attempt)
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
			if j.Attempt != attempt {
				t.Fatalf("reserved attempt %d, want %d", j.Attempt, attempt)
			}
			// The worker "dies": nothing is stored, the lease runs out.
			time.Sleep(60 * time.Millisecond)
			if n, err := w.reclaimOnce(ctx, 10); err != nil || n != 1 {
				t.Fatalf("attempt %d: reclaim found %d (%v), want 1", attempt, n, err)
			}
		}
		info, _ := q.Job(ctx, id)
		if info.State != StateFailed || info.Attempts != 3 {
			t.Fatalf("poison job: %+v; want failed after 3 attempts", info)
		}
	})
}

func TestSameMillisecondFIFO(t *testing.T) {
	// On miniredis the clock is frozen, so every job shares one fire
	// millisecond and only the sequence number orders them.
	m := miniredis.RunT(t)
	m.SetTime(time.UnixMilli(1_800_000_000_000))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	checkFIFO(t, rdb, "rbt", func() { m.SetTime(time.UnixMilli(1_800_000_000_000 + 60)) })
	t.Run("redis", func(t *testing.T) {
		rdb, prefix := backends[0].open(t)
		checkFIFO(t, rdb, prefix, func() { time.Sleep(60 * time.Millisecond) })
	})
}

func checkFIFO(t *testing.T, rdb redis.UniversalClient, prefix string, advance func()) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "fifo")
	const n = 300
	var want []string
	for i := range n {
		id := fmt.Sprintf("job-%03d", i)
		if _, err := q.Enqueue(ctx, nil, WithID(id), WithDelay(50*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	scores, err := rdb.ZRangeWithScores(ctx, q.keys.delayed, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	ms := map[int64]int{}
	for _, z := range scores {
		ms[int64(z.Score)/0x1000]++
	}
	shared := 0
	for _, c := range ms {
		shared = max(shared, c)
	}
	advance()
	if _, err := q.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.LRange(ctx, q.keys.due, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("due list after promotion is not in enqueue order:\n got %v\nwant %v", got, want)
	}
	t.Logf("%d jobs, at most %d sharing one fire millisecond", n, shared)
	if shared < 2 {
		t.Logf("no two jobs shared a millisecond on this run; order held anyway")
	}
}

// A job whose delay has passed (a retry, or a first run enqueued with a
// delay) is reserved before jobs enqueued to run at once, however many of
// those wait: its lateness is bounded by the workers' capacity, not by the
// backlog. Due jobs keep their fire-time order among themselves, and fresh
// jobs theirs.
func TestDueJobsRunBeforeTheWaitList(t *testing.T) {
	m := miniredis.RunT(t)
	m.SetTime(time.UnixMilli(1_800_000_000_000))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	q := newQueue(t, rdb, "rbt", "duefirst")
	w := idle(t, q, fixedRule(t, time.Millisecond, 3))
	for i := range 5 {
		if _, err := q.Enqueue(ctx, nil, WithID(fmt.Sprintf("fresh-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for i, d := range []time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
		if _, err := q.Enqueue(ctx, nil, WithID(fmt.Sprintf("delayed-%d", i)), WithDelay(d)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	take := func(n int) {
		t.Helper()
		jobs, _, _, err := w.reserve(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			got = append(got, j.ID)
		}
	}
	take(2) // nothing due yet: the wait list's first two
	m.SetTime(time.UnixMilli(1_800_000_000_000 + 25))
	take(1) // delayed-1 and delayed-2 are due; the earliest goes first
	if c, err := q.Counts(ctx); err != nil || c.Waiting != 4 || c.Delayed != 1 {
		t.Fatalf("counts %+v, %v; want 4 waiting (3 fresh, 1 due) and 1 delayed", c, err)
	}
	take(3) // delayed-2, then the wait list resumes
	m.SetTime(time.UnixMilli(1_800_000_000_000 + 40))
	take(5) // delayed-0, then what is left of the wait list
	want := "fresh-0,fresh-1,delayed-1,delayed-2,fresh-2,fresh-3,delayed-0,fresh-4"
	if strings.Join(got, ",") != want {
		t.Fatalf("reserved in order\n %s\nwant\n %s", strings.Join(got, ","), want)
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
			for _, key := range []string{k.due, k.active, k.delayed, k.failed, k.completed, k.jobs, k.marker, k.counter} {
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

// hashTag returns the part of key Redis Cluster hashes.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
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

// An outcome batch sends every complete in one call: each job is checked
// and stored as if alone, and a script error on one job (an unreadable
// record) is that job's alone.
func TestCompleteBatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "batch")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3))
		for range 5 {
			if _, err := q.Enqueue(ctx, []byte("p")); err != nil {
				t.Fatal(err)
			}
		}
		jobs, tokens, _, err := w.reserve(5)
		if err != nil || len(jobs) != 5 {
			t.Fatalf("reserve(5) = %d jobs, %v; want 5", len(jobs), err)
		}
		// Job 2's record becomes unreadable to the scripts.
		if err := rdb.HSet(ctx, q.keys.jobs, jobs[2].ID, "garbage").Err(); err != nil {
			t.Fatal(err)
		}
		req := func(s *redis.Script, keys []string, args []any) *finishReq {
			return &finishReq{script: s, keys: keys, args: args, done: make(chan finishRes, 1)}
		}
		batch := []*finishReq{
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[0].ID, tokens[0], "")),
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[0].ID, tokens[0], "")), // the same call twice
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[1].ID, "999999", "")),  // a foreign token
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[2].ID, tokens[2], "")),
			req(scriptFail, w.failKeys(), w.failArgs(jobs[3].ID, tokens[3], backoff.Decision{Outcome: backoff.OutcomeRetry}, 3, "x", "", false)),
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[4].ID, tokens[4], "")),
		}
		w.sendBatch(batch)
		// 99: an error. Job 0 may answer 0 to its first call too: the
		// script error sends each job again alone, and job 0 was already
		// stored by the batch (retried calls are safe by their token).
		want := []int64{1, 0, -1, 99, 1, 1}
		for i, r := range batch {
			out := <-r.done
			switch {
			case i == 0 && out.err == nil && parseInt(out.res[0]) == 0:
			case want[i] == 99:
				if out.err == nil {
					t.Errorf("request %d on an unreadable record = %v, want an error", i, out.res)
				}
			case out.err != nil:
				t.Errorf("request %d: %v, want code %d", i, out.err, want[i])
			case parseInt(out.res[0]) != want[i]:
				t.Errorf("request %d = %v, want code %d", i, out.res, want[i])
			}
		}
		for _, c := range []struct {
			i     int
			state State
		}{{0, StateCompleted}, {1, StateActive}, {3, StateDelayed}, {4, StateCompleted}} {
			info, err := q.Job(ctx, jobs[c.i].ID)
			if err != nil || info.State != c.state {
				t.Errorf("job %d after the batch: %+v, %v; want state %v", c.i, info, err, c.state)
			}
		}
		// A clean batch: one call ends both jobs, and the repeat of a
		// call in the same batch is told it was applied.
		for range 2 {
			if _, err := q.Enqueue(ctx, []byte("p")); err != nil {
				t.Fatal(err)
			}
		}
		jobs, tokens, _, err = w.reserve(2)
		if err != nil || len(jobs) != 2 {
			t.Fatalf("reserve(2) = %d jobs, %v; want 2", len(jobs), err)
		}
		batch = []*finishReq{
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[0].ID, tokens[0], "")),
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[1].ID, tokens[1], "")),
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[1].ID, tokens[1], "")),
		}
		w.sendBatch(batch)
		for i, want := range []int64{1, 1, 0} {
			out := <-batch[i].done
			if out.err != nil || parseInt(out.res[0]) != want {
				t.Errorf("clean batch request %d = %v, %v; want code %d", i, out.res, out.err, want)
			}
		}
		if n, err := q.Counts(ctx); err != nil || n.Completed != 4 {
			t.Errorf("counts %+v, %v; want 4 completed", n, err)
		}
	})
}

// An outcome batch sends every fail in one call: each job is checked and
// stored as if alone (a repeat, a foreign token, an unknown job, a retry,
// an exhausted job, a permanent error), and a complete that keeps the stored
// metadata keeps it.
func TestFailBatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "failbatch")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3))
		for i := range 5 {
			opts := []EnqueueOption{WithMetadata(map[string]string{"k": "v"})}
			if i == 2 {
				opts = append(opts, WithMaxAttempts(1))
			}
			if _, err := q.Enqueue(ctx, []byte("p"), opts...); err != nil {
				t.Fatal(err)
			}
		}
		jobs, tokens, _, err := w.reserve(5)
		if err != nil || len(jobs) != 5 {
			t.Fatalf("reserve(5) = %d jobs, %v; want 5", len(jobs), err)
		}
		req := func(s *redis.Script, keys []string, args []any) *finishReq {
			return &finishReq{script: s, keys: keys, args: args, done: make(chan finishRes, 1)}
		}
		retry := backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: time.Hour}
		batch := []*finishReq{
			req(scriptFail, w.failKeys(), w.failArgs(jobs[0].ID, tokens[0], retry, 3, "first", keepMeta, false)),
			req(scriptFail, w.failKeys(), w.failArgs(jobs[0].ID, tokens[0], retry, 3, "first", keepMeta, false)), // the same call twice
			req(scriptFail, w.failKeys(), w.failArgs(jobs[1].ID, "999999", retry, 3, "x", keepMeta, false)),      // a foreign token
			req(scriptFail, w.failKeys(), w.failArgs("nope", "1", retry, 3, "x", keepMeta, false)),               // an unknown job
			req(scriptFail, w.failKeys(), w.failArgs(jobs[2].ID, tokens[2], retry, 1, "last", keepMeta, false)),
			req(scriptFail, w.failKeys(), w.failArgs(jobs[3].ID, tokens[3], backoff.Decision{Outcome: backoff.OutcomePermanent}, 3, "perm", keepMeta, false)),
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[4].ID, tokens[4], keepMeta)),
		}
		w.sendBatch(batch)
		for i, want := range []int64{1, 0, -1, -2, 2, 2, 1} {
			out := <-batch[i].done
			if out.err != nil || parseInt(out.res[0]) != want {
				t.Errorf("request %d = %v, %v; want code %d", i, out.res, out.err, want)
			}
		}
		for _, c := range []struct {
			i       int
			state   State
			lastErr string
		}{{0, StateDelayed, "first"}, {1, StateActive, ""}, {2, StateFailed, "last"}, {3, StateFailed, "perm"}, {4, StateCompleted, ""}} {
			info, err := q.Job(ctx, jobs[c.i].ID)
			switch {
			case err != nil:
				t.Errorf("job %d after the batch: %v", c.i, err)
			case info.State != c.state || info.LastError != c.lastErr || info.Metadata["k"] != "v":
				t.Errorf("job %d after the batch: %+v; want state %v, last error %q, metadata kept", c.i, info, c.state, c.lastErr)
			}
		}
		if info, err := q.Job(ctx, jobs[0].ID); err == nil && info.NextFireAt.Before(time.Now().Add(59*time.Minute)) {
			t.Errorf("job 0 due at %v, want about an hour from now", info.NextFireAt)
		}
	})
}

// An attempt's end rewrites only what leads the record: the error (fail),
// the metadata (when the handler changed it) and the fixed fields. The
// name and payload, and whatever the call does not change, come through
// byte for byte, also when they hold the record's own separators.
func TestOutcomesKeepTheRestOfTheRecord(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "splice")
		w := idle(t, q, fixedRule(t, time.Millisecond, 5))
		payload := []byte("p|1:x,2:yy\x00\n")
		if _, err := q.Enqueue(ctx, payload, WithID("j"), WithName("n|a:m,e"), WithMetadata(map[string]string{"k": "v0"})); err != nil {
			t.Fatal(err)
		}
		check := func(step, lastErr string, meta map[string]string) {
			t.Helper()
			info, err := q.Job(ctx, "j")
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			if info.Name != "n|a:m,e" || string(info.Payload) != string(payload) || info.LastError != lastErr || fmt.Sprint(info.Metadata) != fmt.Sprint(meta) {
				t.Fatalf("%s: name %q payload %q error %q metadata %v; want %q %q %q %v",
					step, info.Name, info.Payload, info.LastError, info.Metadata, "n|a:m,e", payload, lastErr, meta)
			}
		}
		retry := backoff.Decision{Outcome: backoff.OutcomeRetry}
		steps := []struct {
			name, errText, meta string
			wantErr             string
			wantMeta            map[string]string
		}{
			{"fail keeping metadata", "boom: a|b", keepMeta, "boom: a|b", map[string]string{"k": "v0"}},
			{"fail with new metadata", "", `{"k":"v1"}`, "", map[string]string{"k": "v1"}},
			{"fail again", "third", keepMeta, "third", map[string]string{"k": "v1"}},
			{"complete with new metadata", "-", `{"k":"v2","z":"|:,"}`, "third", map[string]string{"k": "v2", "z": "|:,"}},
		}
		for _, s := range steps {
			jobs, tokens, _, err := w.reserve(1)
			if err != nil || len(jobs) != 1 {
				t.Fatalf("%s: reserve = %d jobs, %v", s.name, len(jobs), err)
			}
			var res []any
			if s.errText == "-" {
				res, err = w.complete(ctx, "j", tokens[0], s.meta)
			} else {
				res, err = w.fail(ctx, "j", tokens[0], retry, 5, s.errText, s.meta, false)
			}
			if err != nil || parseInt(res[0]) != 1 {
				t.Fatalf("%s: %v, %v", s.name, res, err)
			}
			check(s.name, s.wantErr, s.wantMeta)
			if s.errText != "-" {
				if _, err := q.Promote(ctx); err != nil {
					t.Fatal(err)
				}
				time.Sleep(2 * time.Millisecond)
				_, _ = q.Promote(ctx)
			}
		}
	})
}

// Completed and failed jobs are kept within their retention: past the
// count limit or the age limit the oldest go, record and all, trimmed by
// a later completion or failure.
func TestRetention(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  func(time.Duration, int) QueueOption
		end  func(t *testing.T, w *Worker, id, token string)
	}{
		{"completed", WithCompletedRetention, func(t *testing.T, w *Worker, id, token string) {
			if res, err := w.complete(context.Background(), id, token, keepMeta); err != nil || parseInt(res[0]) != 1 {
				t.Fatalf("complete %s: %v, %v", id, res, err)
			}
		}},
		{"failed", WithFailedRetention, func(t *testing.T, w *Worker, id, token string) {
			d := backoff.Decision{Outcome: backoff.OutcomePermanent}
			if res, err := w.fail(context.Background(), id, token, d, 3, "no", keepMeta, false); err != nil || parseInt(res[0]) != 2 {
				t.Fatalf("fail %s: %v, %v", id, res, err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := miniredis.RunT(t)
			start := time.UnixMilli(1_800_000_000_000)
			m.SetTime(start)
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			ctx := context.Background()
			run := func(q *Queue, ids ...string) {
				t.Helper()
				w := idle(t, q, fixedRule(t, time.Millisecond, 3))
				for _, id := range ids {
					if _, err := q.Enqueue(ctx, nil, WithID(id)); err != nil {
						t.Fatal(err)
					}
					jobs, tokens, _, err := w.reserve(1)
					if err != nil || len(jobs) != 1 {
						t.Fatalf("reserve %s: %d jobs, %v", id, len(jobs), err)
					}
					c.end(t, w, id, tokens[0])
				}
			}
			kept := func(q *Queue, want ...string) {
				t.Helper()
				set := q.keys.completed
				if c.name == "failed" {
					set = q.keys.failed
				}
				got, err := rdb.ZRange(ctx, set, 0, -1).Result()
				if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("%s set holds %v (%v), want %v", c.name, got, err, want)
				}
				for _, id := range []string{"a", "b", "c", "d", "e"} {
					_, err := q.Job(ctx, id)
					if slices.Contains(want, id) != (err == nil) {
						t.Fatalf("job %s: inspector says %v, kept %v", id, err, want)
					}
				}
			}

			// Count: at most 3 kept, the oldest dropped first.
			byCount := newQueue(t, rdb, "rbt", "count", c.opt(time.Hour, 3))
			for i, id := range []string{"a", "b", "c", "d", "e"} {
				m.SetTime(start.Add(time.Duration(i) * time.Millisecond))
				run(byCount, id)
			}
			kept(byCount, "c", "d", "e")

			// Age: older than 10ms goes at the next end on the queue.
			byAge := newQueue(t, rdb, "rbt", "age", c.opt(10*time.Millisecond, -1))
			m.SetTime(start)
			run(byAge, "a", "b")
			m.SetTime(start.Add(20 * time.Millisecond))
			kept(byAge, "a", "b") // nothing ended since: both stay
			run(byAge, "c")
			kept(byAge, "c")
		})
	}
}

// release puts a job back uncounted at the front of the due list, only for
// the lease's holder, and a repeat of the call changes nothing.
func TestRelease(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "release")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3))
		for _, id := range []string{"a", "b", "c"} {
			if _, err := q.Enqueue(ctx, nil, WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		jobs, tokens, _, err := w.reserve(2)
		if err != nil || len(jobs) != 2 {
			t.Fatalf("reserve(2) = %d jobs, %v", len(jobs), err)
		}
		release := func(id, token string) int64 {
			t.Helper()
			res, err := scriptRelease.Run(ctx, rdb, q.keys.releaseKeys, id, token, encodeMeta(map[string]string{"m": id})).Slice()
			if err != nil || len(res) != 1 {
				t.Fatalf("release %s: %v, %v", id, res, err)
			}
			return parseInt(res[0].([]any)[0])
		}
		for _, c := range []struct {
			id, token string
			want      int64
		}{{"b", tokens[1], 1}, {"a", tokens[0], 1}, {"a", tokens[0], 0}, {"b", "999999", -1}, {"nope", "1", -2}} {
			if got := release(c.id, c.token); got != c.want {
				t.Errorf("release(%s, %s) = %d, want %d", c.id, c.token, got, c.want)
			}
		}
		for _, id := range []string{"a", "b"} {
			info, err := q.Job(ctx, id)
			if err != nil || info.State != StateWaiting || info.Attempts != 0 || info.Metadata["m"] != id {
				t.Errorf("released job %s: %+v (%v); want waiting, 0 attempts, its metadata stored", id, info, err)
			}
		}
		// Each put back in front: a (released last), b, then c.
		jobs, _, _, err = w.reserve(3)
		if err != nil || len(jobs) != 3 || jobs[0].ID != "a" || jobs[1].ID != "b" || jobs[2].ID != "c" || jobs[0].Attempt != 1 {
			var got []string
			for _, j := range jobs {
				got = append(got, fmt.Sprintf("%s#%d", j.ID, j.Attempt))
			}
			t.Errorf("after release, reserved %v (%v); want a#1, b#1 (each released to the front), then c#1", got, err)
		}
	})
}
