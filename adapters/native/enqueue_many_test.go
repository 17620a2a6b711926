package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// enqueueManyTests are EnqueueMany's tests. Each runs on the real Redis and
// miniredis (TestEnqueueMany) and on a three-master Cluster
// (TestEnqueueManyCluster), each on queues of its own.
var enqueueManyTests = []backendTest{
	{"Results", testManyResults},
	{"Duplicates", testManyDuplicates},
	{"Delayed", testManyDelayed},
	{"WorkerRunsAll", testManyWorkerRunsAll},
	{"LongestDelay", testManyLongestDelay},
	{"Empty", testManyEmpty},
	{"Cancelled", testManyCancelled},
	{"NilContext", testManyNilContext},
	{"BadJob", testManyBadJob},
	{"Chunks", testManyChunks},
	{"PayloadLimit", testManyPayloadLimit},
	{"CallBytes", testManyCallBytes},
}

func TestEnqueueMany(t *testing.T) { runBackends(t, enqueueManyTests) }

func TestEnqueueManyCluster(t *testing.T) { runCluster(t, enqueueManyTests, "rbt-many") }

// scriptCalls counts the script calls rdb sends from now on. It loads the
// enqueue_many script first, so that no call is a NOSCRIPT miss and its
// fallback.
func scriptCalls(t *testing.T, rdb redis.UniversalClient) *atomic.Int64 {
	t.Helper()
	if err := scriptEnqueueMany.Load(context.Background(), rdb).Err(); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	rdb.AddHook(countHook{&n})
	return &n
}

type countHook struct{ n *atomic.Int64 }

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			h.n.Add(1)
		}
		return err
	}
}

func (countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Each job gets its own result in order, and is stored as Enqueue stores
// it: payload, name, cap and metadata (any bytes) kept exactly, generated
// IDs distinct, run-at-once jobs waiting in the order given.
func testManyResults(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "many-results")
	meta := map[string]string{"trace\x00id": "\xff\xfe not utf-8", "k": ""}
	jobs := []EnqueueParams{
		{Payload: []byte("a")},
		{Payload: []byte("b"), Options: []EnqueueOption{WithID("b-1"), WithName("mail"), WithMaxAttempts(7), WithMetadata(meta)}},
		{Payload: nil, Options: []EnqueueOption{nil, WithName("empty")}},
		{Payload: []byte("d")},
	}
	res, err := q.EnqueueMany(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(jobs) {
		t.Fatalf("%d results for %d jobs", len(res), len(jobs))
	}
	seen := map[string]bool{}
	for i, r := range res {
		if r.Err != nil || r.ID == "" || seen[r.ID] {
			t.Fatalf("result %d: %+v, want a new ID and no error", i, r)
		}
		seen[r.ID] = true
	}
	if res[1].ID != "b-1" {
		t.Errorf("job 1's ID %q, want its WithID b-1", res[1].ID)
	}
	for i, r := range res {
		info, err := q.Job(ctx, r.ID)
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		if info.State != StateWaiting || !bytes.Equal(info.Payload, jobs[i].Payload) || info.Attempts != 0 {
			t.Errorf("job %d stored as %+v, want waiting with payload %q", i, info, jobs[i].Payload)
		}
	}
	b, _ := q.Job(ctx, "b-1")
	if b.Name != "mail" || b.MaxAttempts != 7 || len(b.Metadata) != 2 || b.Metadata["trace\x00id"] != meta["trace\x00id"] || b.Metadata["k"] != "" {
		t.Errorf("job b-1 stored as name %q, cap %d, metadata %q; want mail, 7, %q", b.Name, b.MaxAttempts, b.Metadata, meta)
	}
	if e, _ := q.Job(ctx, res[2].ID); e.Name != "empty" || e.MaxAttempts != 0 || len(e.Metadata) != 0 {
		t.Errorf("job 2 stored as %+v, want name empty, the worker's cap, no metadata", e)
	}
	wait, err := rdb.LRange(ctx, q.keys.wait, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{res[0].ID, res[1].ID, res[2].ID, res[3].ID}
	if strings.Join(wait, ",") != strings.Join(want, ",") {
		t.Errorf("wait list %q, want the jobs in the order given %q", wait, want)
	}
}

// A duplicate ID, of a job stored before or of an earlier job of the same
// batch, is that job's ErrJobExists; the first job keeps its payload and
// every other job of the batch is stored.
func testManyDuplicates(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "many-dup")
	if _, err := q.Enqueue(ctx, []byte("old"), WithID("x")); err != nil {
		t.Fatal(err)
	}
	res, err := q.EnqueueMany(ctx, []EnqueueParams{
		{Payload: []byte("new x"), Options: []EnqueueOption{WithID("x")}},
		{Payload: []byte("y1"), Options: []EnqueueOption{WithID("y")}},
		{Payload: []byte("z")},
		{Payload: []byte("y2"), Options: []EnqueueOption{WithID("y"), WithDelay(time.Hour)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, wantDup := range []bool{true, false, false, true} {
		if got := errors.Is(res[i].Err, ErrJobExists); got != wantDup || (!wantDup && res[i].Err != nil) {
			t.Errorf("result %d: %v, want duplicate %v", i, res[i].Err, wantDup)
		}
	}
	if res[0].ID != "x" || res[3].ID != "y" || !strings.Contains(res[3].Err.Error(), `ID "y"`) {
		t.Errorf("duplicates' results %+v and %+v, want IDs x and y, named in the error", res[0], res[3])
	}
	for id, want := range map[string]string{"x": "old", "y": "y1"} {
		if info, _ := q.Job(ctx, id); string(info.Payload) != want || info.State != StateWaiting {
			t.Errorf("job %s: %q %v, want the first one, %q, waiting", id, info.Payload, info.State, want)
		}
	}
	if c, _ := q.Counts(ctx); c.Waiting != 3 || c.Delayed != 0 {
		t.Errorf("counts %+v, want 3 waiting (x, y, z) and none delayed", c)
	}
}

// Delayed jobs land in the delayed set, never due before the server's
// clock at the call plus their delay, and in the order given within a
// millisecond; jobs without a delay wait.
func testManyDelayed(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "many-delayed")
	before, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	delays := []time.Duration{time.Hour, 0, 1500 * time.Microsecond, time.Hour, time.Minute, MaxDelay + time.Hour}
	var jobs []EnqueueParams
	for i, d := range delays {
		jobs = append(jobs, EnqueueParams{Payload: []byte{byte(i)}, Options: []EnqueueOption{WithID(fmt.Sprint("d", i)), WithDelay(d)}})
	}
	res, err := q.EnqueueMany(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := rdb.Time(ctx).Result()
	for i, d := range delays {
		if res[i].Err != nil {
			t.Fatal(res[i].Err)
		}
		info, err := q.Job(ctx, res[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if d == 0 {
			if info.State != StateWaiting {
				t.Errorf("job %d without delay: %v, want waiting", i, info.State)
			}
			continue
		}
		d = clampDelay(d)
		if info.State != StateDelayed || info.NextFireAt.Before(before.Add(d)) || info.NextFireAt.After(after.Add(d+time.Millisecond)) {
			t.Errorf("job %d delayed %s: %v at %s, want delayed, due between %s and %s",
				i, d, info.State, info.NextFireAt.Format(time.RFC3339Nano), before.Add(d).Format(time.RFC3339Nano), after.Add(d+time.Millisecond).Format(time.RFC3339Nano))
		}
	}
	// Jobs 0 and 3, due in the same millisecond, keep the batch's order.
	order, _ := rdb.ZRange(ctx, q.keys.delayed, 0, -1).Result()
	if strings.Join(order, ",") != "d2,d4,d0,d3,d5" {
		t.Errorf("delayed set in order %q, want d2,d4,d0,d3,d5", order)
	}
}

// A worker that is idle, blocked on the wake-up marker, is woken by a
// batch and runs every job of it once: a batch of jobs to run at once, then
// a batch of delayed jobs.
func testManyWorkerRunsAll(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "many-run")
	var mu sync.Mutex
	runs := map[string]int{}
	w, err := NewWorker(q, fixedRule(t, time.Millisecond, 1), func(_ context.Context, j *Job) error {
		mu.Lock()
		runs[string(j.Payload)]++
		mu.Unlock()
		return nil
	}, WithConcurrency(8), WithErrorHandler(func(err error) { t.Logf("worker: %v", err) }))
	if err != nil {
		t.Fatal(err)
	}
	// No idle poll within the test: the jobs run only if the batch wakes
	// the worker.
	w.idlePoll = time.Hour
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
	const n = 150
	total := 0
	for _, delayed := range []bool{false, true} {
		idle := time.Now().Add(5 * time.Second)
		for !w.blocked.Load() {
			if time.Now().After(idle) {
				t.Fatal("the worker never went idle")
			}
			time.Sleep(time.Millisecond)
		}
		var jobs []EnqueueParams
		for i := range n {
			var opts []EnqueueOption
			if delayed {
				opts = append(opts, WithDelay(time.Duration(1+i%50)*time.Millisecond))
			}
			jobs = append(jobs, EnqueueParams{Payload: fmt.Appendf(nil, "job-%v-%d", delayed, i), Options: opts})
		}
		if _, err := q.EnqueueMany(ctx, jobs); err != nil {
			t.Fatal(err)
		}
		total += n
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := q.Counts(ctx)
			if err == nil && c.Completed == int64(total) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("delayed %v: counts %+v, want %d completed", delayed, c, total)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, delayed := range []bool{false, true} {
		for i := range n {
			if k := fmt.Sprintf("job-%v-%d", delayed, i); runs[k] != 1 {
				t.Errorf("%s ran %d times, want once", k, runs[k])
			}
		}
	}
}

// On a server clock a test sets, a batch's fire times are exactly those
// Enqueue gives at the same instant: the clock plus the delay, rounded up
// to the millisecond, never earlier.
func TestEnqueueManyFireTimes(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	q := newQueue(t, rdb, "rbt", "many-fire")
	now := time.UnixMilli(1_800_000_000_000).Add(100 * time.Microsecond)
	m.SetTime(now)
	delays := []time.Duration{time.Microsecond, 900 * time.Microsecond, 1500 * time.Microsecond, time.Second, 36 * time.Hour}
	var jobs []EnqueueParams
	for i, d := range delays {
		if _, err := q.Enqueue(ctx, nil, WithID(fmt.Sprint("one-", i)), WithDelay(d)); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, EnqueueParams{Options: []EnqueueOption{WithID(fmt.Sprint("many-", i)), WithDelay(d)}})
	}
	if _, err := q.EnqueueMany(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	for i, d := range delays {
		one, _ := q.Job(ctx, fmt.Sprint("one-", i))
		many, _ := q.Job(ctx, fmt.Sprint("many-", i))
		want := now.Add(d).Truncate(time.Millisecond)
		if want.Before(now.Add(d)) {
			want = want.Add(time.Millisecond)
		}
		if !many.NextFireAt.Equal(want) || !one.NextFireAt.Equal(want) {
			t.Errorf("delay %s from %s: EnqueueMany fires at %s, Enqueue at %s; want both at %s",
				d, now.Format(time.RFC3339Nano), many.NextFireAt.Format(time.RFC3339Nano), one.NextFireAt.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
		}
	}
}

// A batch job delayed by the largest time.Duration waits MaxDelay, never
// less, and never runs at once by overflow: a worker runs the job enqueued
// beside it to run at once, and leaves it delayed.
func testManyLongestDelay(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "many-longest")
	before, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.EnqueueMany(ctx, []EnqueueParams{
		{Payload: []byte("far"), Options: []EnqueueOption{WithID("far"), WithDelay(math.MaxInt64)}},
		{Payload: []byte("now"), Options: []EnqueueOption{WithID("now")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	var mu sync.Mutex
	var ran []string
	startWorker(t, q, fixedRule(t, time.Millisecond, 1), func(_ context.Context, j *Job) error {
		mu.Lock()
		ran = append(ran, j.ID)
		mu.Unlock()
		return nil
	})
	waitState(t, q, "now", StateCompleted, 5*time.Second)
	far, err := q.Job(ctx, "far")
	if err != nil {
		t.Fatal(err)
	}
	if far.State != StateDelayed || far.NextFireAt.Before(before.Add(MaxDelay)) {
		t.Errorf("job delayed by math.MaxInt64: %v, due %s; want delayed, due no sooner than MaxDelay from %s",
			far.State, far.NextFireAt.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 1 || ran[0] != "now" {
		t.Errorf("ran %v, want only the job without delay", ran)
	}
}

// An empty or nil batch stores nothing, sends nothing and is no error.
func testManyEmpty(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "many-empty")
	calls := scriptCalls(t, rdb)
	for _, jobs := range [][]EnqueueParams{nil, {}} {
		res, err := q.EnqueueMany(ctx, jobs)
		if err != nil || len(res) != 0 {
			t.Errorf("EnqueueMany(%#v) = %v, %v; want no results and no error", jobs, res, err)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d script calls for empty batches, want 0", n)
	}
}

// A nil context is an error, not a panic, and stores nothing.
func testManyNilContext(t *testing.T, rdb redis.UniversalClient, prefix string) {
	q := newQueue(t, rdb, prefix, "many-nilctx")
	var none context.Context
	res, err := q.EnqueueMany(none, []EnqueueParams{{Payload: []byte("a")}})
	if err == nil || res != nil || !strings.Contains(err.Error(), "ctx is nil") {
		t.Errorf("EnqueueMany(nil ctx) = %v, %v; want no results and an error saying ctx is nil", res, err)
	}
	if c, _ := q.Counts(context.Background()); c.Waiting != 0 {
		t.Errorf("%d jobs waiting after a nil-ctx call, want 0", c.Waiting)
	}
}

// A call whose context has ended stores nothing and says so, in its error
// and in every job's result.
func testManyCancelled(t *testing.T, rdb redis.UniversalClient, prefix string) {
	q := newQueue(t, rdb, prefix, "many-cancel")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := q.EnqueueMany(ctx, []EnqueueParams{{Payload: []byte("a")}, {Payload: []byte("b")}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if len(res) != 2 || res[0].ID == "" || !errors.Is(res[0].Err, context.Canceled) || !errors.Is(res[1].Err, context.Canceled) {
		t.Errorf("results %+v, want both IDs with the call's error", res)
	}
	if c, _ := q.Counts(context.Background()); c.Waiting != 0 {
		t.Errorf("%d jobs waiting after a cancelled call, want 0", c.Waiting)
	}
}

// One invalid job fails the call before anything is stored, and the error
// names its index and wraps what Enqueue would have said.
func testManyBadJob(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "many-bad")
	good := EnqueueParams{Payload: []byte("ok"), Options: []EnqueueOption{WithID("good")}}
	for _, c := range []struct {
		bad  EnqueueOption
		want string
	}{
		{WithID(""), "WithID: the ID is empty"},
		{WithDelay(-time.Second), "WithDelay: -1s is negative"},
		{WithMaxAttempts(0), "WithMaxAttempts: 0 is below 1"},
	} {
		calls := scriptCalls(t, rdb)
		jobs := []EnqueueParams{good, good, {Payload: []byte("bad"), Options: []EnqueueOption{c.bad}}, good}
		res, err := q.EnqueueMany(ctx, jobs)
		if err == nil || res != nil || !strings.Contains(err.Error(), "job 2 of 4 is invalid, nothing was enqueued") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("batch with a bad job 2: %v, %v; want no results and an error naming job 2 and saying %q", res, err, c.want)
		}
		if n := calls.Load(); n != 0 {
			t.Errorf("%d script calls for an invalid batch, want 0", n)
		}
	}
	if _, err := q.Job(ctx, "good"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the valid jobs of invalid batches: %v, want none stored (ErrNotFound)", err)
	}
}

// A large batch is sent in calls of at most 1000 jobs, every job stored
// once and in order.
func testManyChunks(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "many-chunks")
	const n = 5000
	jobs := make([]EnqueueParams, n)
	for i := range jobs {
		jobs[i] = EnqueueParams{Payload: fmt.Appendf(nil, "%d", i)}
	}
	jobs[4321].Options = []EnqueueOption{WithID("dup")}
	jobs[4999].Options = []EnqueueOption{WithID("dup")} // in a later chunk than its first
	calls := scriptCalls(t, rdb)
	res, err := q.EnqueueMany(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 5 {
		t.Errorf("%d script calls for %d jobs, want 5 (1000 a call)", got, n)
	}
	for i, r := range res {
		if (i == 4999) != errors.Is(r.Err, ErrJobExists) || (i != 4999 && r.Err != nil) {
			t.Fatalf("result %d: %v", i, r.Err)
		}
	}
	wait, _ := rdb.LRange(ctx, q.keys.wait, 0, -1).Result()
	if len(wait) != n-1 {
		t.Fatalf("%d jobs waiting, want %d", len(wait), n-1)
	}
	for i, id := range wait {
		if id != res[i].ID {
			t.Fatalf("wait list position %d holds %s, want job %d's %s", i, id, i, res[i].ID)
		}
	}
}

// Payloads are held to the queue's limit (1 MiB by default) as by Enqueue,
// and a batch of large payloads is split so that a call carries about
// 4 MiB at most.
func testManyPayloadLimit(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "many-big")
	limit := bytes.Repeat([]byte("p"), DefaultMaxPayload)
	_, err := q.EnqueueMany(ctx, []EnqueueParams{{Payload: limit}, {Payload: append(limit, 'x')}})
	var pe *PayloadTooLargeError
	if !errors.As(err, &pe) || pe.Size != DefaultMaxPayload+1 || pe.Limit != DefaultMaxPayload || !strings.Contains(err.Error(), "job 1 of 2") {
		t.Fatalf("a batch with a payload 1 byte above the limit: %v, want a PayloadTooLargeError for job 1", err)
	}
	calls := scriptCalls(t, rdb)
	jobs := make([]EnqueueParams, 6)
	for i := range jobs {
		jobs[i] = EnqueueParams{Payload: limit}
	}
	res, err := q.EnqueueMany(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("%d script calls for 6 payloads of 1 MiB, want 2 (4 MiB a call)", got)
	}
	for i, r := range res {
		info, err := q.Job(ctx, r.ID)
		if r.Err != nil || err != nil || !bytes.Equal(info.Payload, limit) {
			t.Errorf("job %d: %v, %v, payload of %d bytes; want stored whole", i, r.Err, err, len(info.Payload))
		}
	}
}

// Every byte a job carries counts toward a call's bound, not only its
// payload: jobs of about 1 MiB of metadata, of name or of ID (and small
// payloads) are split as payloads of that size are, so that no call
// carries much more than 4 MiB, and each is stored whole.
func testManyCallBytes(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "many-bytes")
	big := strings.Repeat("m", 1<<20-1<<10)
	var sizes callSizes
	if err := scriptEnqueueMany.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.AddHook(&sizes)
	for _, field := range []string{"metadata", "name", "id"} {
		sizes.reset()
		jobs := make([]EnqueueParams, 6)
		for i := range jobs {
			var opt EnqueueOption
			switch field {
			case "metadata":
				opt = WithMetadata(map[string]string{"k": big})
			case "name":
				opt = WithName(big)
			case "id":
				opt = WithID(fmt.Sprint(i, big))
			}
			jobs[i] = EnqueueParams{Payload: []byte("p"), Options: []EnqueueOption{opt}}
		}
		res, err := q.EnqueueMany(ctx, jobs)
		if err != nil {
			t.Fatal(err)
		}
		calls, most := sizes.get()
		if calls != 2 || most > manyChunkBytes {
			t.Errorf("6 jobs of 1 MiB of %s: %d script calls, the largest carrying %d bytes; want 2 of at most %d", field, calls, most, manyChunkBytes)
		}
		for i, r := range res {
			info, err := q.Job(ctx, r.ID)
			if r.Err != nil || err != nil || len(info.Metadata["k"])+len(info.Name)+len(info.ID) < len(big) {
				t.Errorf("job %d of 1 MiB of %s: %v, %v; want stored whole", i, field, r.Err, err)
			}
		}
	}
}

// callSizes is a hook that counts the script calls a client sends and
// the most argument bytes (strings and byte slices) one of them carried.
type callSizes struct {
	mu          sync.Mutex
	calls, most int
}

func (s *callSizes) reset() { s.mu.Lock(); s.calls, s.most = 0, 0; s.mu.Unlock() }

func (s *callSizes) get() (int, int) { s.mu.Lock(); defer s.mu.Unlock(); return s.calls, s.most }

func (*callSizes) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *callSizes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			n := 0
			for _, a := range cmd.Args() {
				switch v := a.(type) {
				case string:
					n += len(v)
				case []byte:
					n += len(v)
				}
			}
			s.mu.Lock()
			s.calls++
			s.most = max(s.most, n)
			s.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (*callSizes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
