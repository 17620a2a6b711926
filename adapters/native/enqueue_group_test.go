package native

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// groupTests are the tests of Enqueue's group commit, run on the real
// Redis and miniredis (TestEnqueueGroup) and on a three-master Cluster
// (TestEnqueueGroupCluster), each on queues of its own.
var groupTests = []backendTest{
	{"Batches", testGroupBatches},
	{"Duplicates", testGroupDuplicates},
	{"Order", testGroupOrder},
	{"Sizes", testGroupSizes},
	{"BadInput", testGroupBadInput},
	{"CancelWaiting", testGroupCancelWaiting},
	{"CancelSent", testGroupCancelSent},
	{"RandomCancel", testGroupRandomCancel},
}

func TestEnqueueGroup(t *testing.T) { runBackends(t, groupTests) }

func TestEnqueueGroupCluster(t *testing.T) { runCluster(t, groupTests, "rbt-group") }

// gate is a hook on the script calls that carry one queue's jobs key: it
// counts them and the jobs each carried, and holds the next one, when
// asked, before it reaches Redis.
type gate struct {
	key string

	mu      sync.Mutex
	jobs    []int           // jobs of each call, in order
	hold    chan struct{}   // when not nil, the next call waits for it to close
	held    chan struct{}   // closed once that call waits
	heldCtx context.Context // the ctx that call was sent with
}

// newGate adds a gate for q's script calls to rdb, with every enqueue
// script loaded first so that no call is a NOSCRIPT miss.
func newGate(t *testing.T, rdb redis.UniversalClient, q *Queue) *gate {
	t.Helper()
	for _, s := range []*redis.Script{scriptEnqueue, scriptEnqueueDelayed, scriptEnqueueMany} {
		if err := s.Load(context.Background(), rdb).Err(); err != nil {
			t.Fatal(err)
		}
	}
	g := &gate{key: q.keys.jobs}
	rdb.AddHook(g)
	return g
}

// holdNext makes the next call wait until the returned release is called;
// held is closed once it waits.
func (g *gate) holdNext() (held <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold, g.held = make(chan struct{}), make(chan struct{})
	h := g.hold
	var once sync.Once
	return g.held, func() { once.Do(func() { close(h) }) }
}

// calls returns the jobs each call carried so far.
func (g *gate) calls() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.jobs...)
}

func (*gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if name := cmd.Name(); (name != "evalsha" && name != "eval") || len(args) < 4 || args[3] != g.key {
			return next(ctx, cmd)
		}
		n := 1
		if args[1] == scriptEnqueueMany.Hash() {
			n = (len(args) - 7) / argCount // name, sha, key count and four keys
		}
		g.mu.Lock()
		g.jobs = append(g.jobs, n)
		hold, held := g.hold, g.held
		g.hold = nil
		if hold != nil {
			g.heldCtx = ctx
		}
		g.mu.Unlock()
		if hold != nil {
			close(held)
			<-hold
		}
		return next(ctx, cmd)
	}
}

func (*gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// waitPending waits until n calls of q wait for the next batch.
func waitPending(t *testing.T, q *Queue, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		q.group.mu.Lock()
		got := len(q.group.pending)
		q.group.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls wait for the next batch, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// stored reports whether q holds job id.
func stored(t *testing.T, rdb redis.UniversalClient, q *Queue, id string) bool {
	t.Helper()
	ok, err := rdb.HExists(context.Background(), q.keys.jobs, id).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// enqueueResult is what one Enqueue call returned.
type enqueueResult struct {
	id  string
	err error
}

// holdFirst sends one job while the gate holds its call, so that the calls
// made until release wait for the next batch. It returns release, and wait,
// which returns the first call's result.
func holdFirst(t *testing.T, g *gate, q *Queue) (release func(), wait func() enqueueResult) {
	t.Helper()
	held, release := g.holdNext()
	done := make(chan enqueueResult, 1)
	go func() {
		id, err := q.Enqueue(context.Background(), []byte("first"), WithID("first"))
		done <- enqueueResult{id, err}
	}()
	<-held
	return release, func() enqueueResult { return <-done }
}

// 1000 goroutines enqueueing at once, while the first call is held, ride
// one script call of the 999 others (at most 1000 a call); each gets its
// own ID, and each job is stored once, as given. A call alone goes out in
// a call of its own, with the single-job script.
func testGroupBatches(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "group-batches")
	g := newGate(t, rdb, q)
	release, first := holdFirst(t, g, q)
	const n = 999
	res := make([]enqueueResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var opts []EnqueueOption
			if i%3 == 0 {
				opts = append(opts, WithDelay(time.Hour))
			}
			id, err := q.Enqueue(ctx, fmt.Appendf(nil, "job %d", i), opts...)
			res[i] = enqueueResult{id, err}
		})
	}
	waitPending(t, q, n)
	release()
	wg.Wait()
	if r := first(); r.err != nil || r.id != "first" {
		t.Fatalf("the held call: %q, %v; want first, nil", r.id, r.err)
	}
	if calls := g.calls(); len(calls) != 2 || calls[0] != 1 || calls[1] != n {
		t.Errorf("script calls carried %v jobs, want [1 %d]", calls, n)
	}
	seen := map[string]bool{}
	for i, r := range res {
		if r.err != nil || r.id == "" || seen[r.id] {
			t.Fatalf("call %d: %q, %v; want a fresh ID", i, r.id, r.err)
		}
		seen[r.id] = true
		info, err := q.Job(ctx, r.id)
		want := StateWaiting
		if i%3 == 0 {
			want = StateDelayed
		}
		if err != nil || string(info.Payload) != fmt.Sprintf("job %d", i) || info.State != want {
			t.Fatalf("call %d's job: %q %v, %v; want its payload, %v", i, info.Payload, info.State, err, want)
		}
	}
	if c, _ := q.Counts(ctx); c.Waiting != 1+2*n/3 || c.Delayed != n/3 {
		t.Errorf("counts %+v, want %d waiting and %d delayed", c, 1+2*n/3, n/3)
	}
	before := len(g.calls())
	if _, err := q.Enqueue(ctx, []byte("alone")); err != nil {
		t.Fatal(err)
	}
	if calls := g.calls(); len(calls) != before+1 || calls[before] != 1 {
		t.Errorf("a call alone: script calls %v after %d, want one more of one job", calls, before)
	}
}

// IDs repeated within one batch: the first call made wins, the later ones
// get ErrJobExists, as they would one after the other; an ID stored
// before the batch wins over all of the batch's.
func testGroupDuplicates(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "group-dup")
	g := newGate(t, rdb, q)
	if _, err := q.Enqueue(ctx, []byte("old"), WithID("old")); err != nil {
		t.Fatal(err)
	}
	release, first := holdFirst(t, g, q)
	calls := []struct {
		id, payload string
		delay       time.Duration
	}{
		{"a", "a1", 0}, {"b", "b1", time.Hour}, {"a", "a2", time.Hour}, {"old", "new", 0},
		{"b", "b2", 0}, {"a", "a3", 0}, {"first", "again", 0}, {"c", "c1", 0},
	}
	res := make([]enqueueResult, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			id, err := q.Enqueue(ctx, []byte(c.payload), WithID(c.id), WithDelay(c.delay))
			res[i] = enqueueResult{id, err}
		})
		waitPending(t, q, i+1) // in this order
	}
	release()
	wg.Wait()
	if r := first(); r.err != nil {
		t.Fatal(r.err)
	}
	for i, wantDup := range []bool{false, false, true, true, true, true, true, false} {
		r := res[i]
		if got := errors.Is(r.err, ErrJobExists); got != wantDup || (!wantDup && (r.err != nil || r.id != calls[i].id)) {
			t.Errorf("call %d (%s): %q, %v; want duplicate %v", i, calls[i].payload, r.id, r.err, wantDup)
		}
		if wantDup && !strings.Contains(fmt.Sprint(r.err), fmt.Sprintf("ID %q", calls[i].id)) {
			t.Errorf("call %d's error %q does not name ID %q", i, r.err, calls[i].id)
		}
	}
	for id, want := range map[string]string{"a": "a1", "b": "b1", "old": "old", "first": "first", "c": "c1"} {
		if info, err := q.Job(ctx, id); err != nil || string(info.Payload) != want {
			t.Errorf("job %s: %q, %v; want the first one, %q", id, info.Payload, err, want)
		}
	}
	if got := g.calls(); len(got) != 3 || got[2] != len(calls) {
		t.Errorf("script calls carried %v jobs, want [1 1 %d]", got, len(calls))
	}
}

// A batch keeps the order calls were made in: jobs to run at once join
// the wait list in that order, and delayed jobs due in the same
// millisecond keep it too; each producer's jobs, made one after the other
// from goroutines racing each other, are in its own order.
func testGroupOrder(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "group-order")
	g := newGate(t, rdb, q)
	release, first := holdFirst(t, g, q)
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, 2*n)
	for i := range 2 * n {
		wg.Go(func() {
			var opts []EnqueueOption
			if i%2 == 1 {
				opts = append(opts, WithDelay(time.Hour))
			}
			_, errs[i] = q.Enqueue(ctx, []byte("o"), append(opts, WithID(fmt.Sprintf("o%02d", i)))...)
		})
		waitPending(t, q, i+1)
	}
	release()
	wg.Wait()
	if r := first(); r.err != nil {
		t.Fatal(r.err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var wantWait, wantDelayed []string
	for i := range 2 * n {
		if i%2 == 1 {
			wantDelayed = append(wantDelayed, fmt.Sprintf("o%02d", i))
		} else {
			wantWait = append(wantWait, fmt.Sprintf("o%02d", i))
		}
	}
	wait, _ := rdb.LRange(ctx, q.keys.wait, 1, -1).Result() // after "first"
	if strings.Join(wait, ",") != strings.Join(wantWait, ",") {
		t.Errorf("wait list %v, want %v", wait, wantWait)
	}
	delayed, _ := rdb.ZRangeWithScores(ctx, q.keys.delayed, 0, -1).Result()
	var got []string
	for _, z := range delayed {
		got = append(got, z.Member.(string))
	}
	if strings.Join(got, ",") != strings.Join(wantDelayed, ",") || len(delayed) != n || delayed[0].Score == delayed[n-1].Score {
		t.Errorf("delayed set %v, want %v in that order, on distinct places of one millisecond", delayed, wantDelayed)
	}

	// Producers racing each other, each enqueueing one job after another.
	q2 := newQueue(t, rdb, prefix, "group-producers")
	const producers, each = 8, 100
	for p := range producers {
		wg.Go(func() {
			for k := range each {
				if _, err := q2.Enqueue(ctx, fmt.Appendf(nil, "%d %03d", p, k)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	ids, _ := rdb.LRange(ctx, q2.keys.wait, 0, -1).Result()
	last := make([]int, producers)
	for i := range last {
		last[i] = -1
	}
	for _, id := range ids {
		info, err := q2.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var p, k int
		if _, err := fmt.Sscanf(string(info.Payload), "%d %d", &p, &k); err != nil {
			t.Fatal(err)
		}
		if k != last[p]+1 {
			t.Fatalf("producer %d's job %d waits after its job %d, want its jobs in its order", p, k, last[p])
		}
		last[p] = k
	}
	if len(ids) != producers*each {
		t.Errorf("%d jobs waiting, want %d", len(ids), producers*each)
	}
}

// Payloads of the queue's limit (1 MiB) among small ones: a batch carries
// at most 4 MiB of arguments, or one job alone, and every job is stored
// whole.
func testGroupSizes(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "group-sizes")
	g := newGate(t, rdb, q)
	var sizes callSizes
	rdb.AddHook(&sizes)
	release, first := holdFirst(t, g, q)
	big := bytes.Repeat([]byte("m"), DefaultMaxPayload)
	const n = 60
	payload := func(i int) []byte {
		if i%6 == 0 {
			b := bytes.Clone(big)
			copy(b, fmt.Sprint(i))
			return b
		}
		return fmt.Appendf(nil, "small %d", i)
	}
	res := make([]enqueueResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id, err := q.Enqueue(ctx, payload(i), WithID(fmt.Sprint("s", i)))
			res[i] = enqueueResult{id, err}
		})
	}
	waitPending(t, q, n)
	sizes.reset()
	release()
	wg.Wait()
	if r := first(); r.err != nil {
		t.Fatal(r.err)
	}
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("call %d: %v", i, r.err)
		}
		info, err := q.Job(ctx, r.id)
		if err != nil || !bytes.Equal(info.Payload, payload(i)) {
			t.Fatalf("call %d's job: %d bytes, %v; want its %d", i, len(info.Payload), err, len(payload(i)))
		}
	}
	calls, most := sizes.get()
	if most > manyChunkBytes || calls < 3 {
		t.Errorf("10 jobs of 1 MiB in %d script calls, the largest carrying %d bytes; want at least 3 of at most %d", calls, most, manyChunkBytes)
	}
}

// Bad input fails its own call, before anything is sent, and never the
// others of the batch it would have joined; a nil ctx is an error.
func testGroupBadInput(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "group-bad", WithMaxPayload(10))
	g := newGate(t, rdb, q)
	release, first := holdFirst(t, g, q)
	bad := []func() error{
		func() error { _, err := q.Enqueue(ctx, []byte("eleven byte")); return err },
		func() error { _, err := q.Enqueue(ctx, []byte("x"), WithID("")); return err },
		func() error { _, err := q.Enqueue(ctx, []byte("x"), WithDelay(-time.Second)); return err },
		func() error { _, err := q.Enqueue(ctx, []byte("x"), WithMaxAttempts(0)); return err },
		func() error { var none context.Context; _, err := q.Enqueue(none, []byte("x")); return err },
	}
	var wg sync.WaitGroup
	good := make([]enqueueResult, 4)
	for i := range good {
		wg.Go(func() {
			id, err := q.Enqueue(ctx, []byte("ok"), WithID(fmt.Sprint("g", i)))
			good[i] = enqueueResult{id, err}
		})
	}
	waitPending(t, q, len(good))
	for i, f := range bad {
		err := f()
		var tooLarge *PayloadTooLargeError
		if err == nil || (i == 0 && !errors.As(err, &tooLarge)) {
			t.Errorf("bad call %d: %v, want an error (a *PayloadTooLargeError for the payload)", i, err)
		}
	}
	release()
	wg.Wait()
	if r := first(); r.err != nil {
		t.Fatal(r.err)
	}
	for i, r := range good {
		if r.err != nil || !stored(t, rdb, q, r.id) {
			t.Errorf("good call %d: %q, %v; want stored", i, r.id, r.err)
		}
	}
	if c, _ := q.Counts(ctx); c.Waiting != 1+int64(len(good)) {
		t.Errorf("counts %+v, want %d waiting", c, 1+len(good))
	}
}

// A call whose ctx ends while it waits for the next batch returns
// ctx.Err() itself at once, while the call in flight is still held, and
// its job is never stored; the others of the batch are.
func testGroupCancelWaiting(t *testing.T, rdb redis.UniversalClient, prefix string) {
	q := newQueue(t, rdb, prefix, "group-cancel-wait")
	g := newGate(t, rdb, q)
	release, first := holdFirst(t, g, q)
	defer release()
	const n = 10
	res := make([]chan enqueueResult, n)
	cancels := make([]context.CancelFunc, n)
	for i := range n {
		var ctx context.Context
		if i == n-1 {
			ctx, cancels[i] = context.WithTimeout(context.Background(), 50*time.Millisecond)
		} else {
			ctx, cancels[i] = context.WithCancel(context.Background())
		}
		defer cancels[i]()
		res[i] = make(chan enqueueResult, 1)
		go func() {
			id, err := q.Enqueue(ctx, []byte("c"), WithID(fmt.Sprint("c", i)))
			res[i] <- enqueueResult{id, err}
		}()
		if i < n-1 { // the last one may time out before it is seen waiting
			waitPending(t, q, i+1)
		}
	}
	for i := 0; i < n-1; i += 3 {
		cancels[i]()
	}
	for i := 0; i < n; i += 3 { // the call in flight still held
		want := context.Canceled
		if i == n-1 {
			want = context.DeadlineExceeded
		}
		if r := <-res[i]; r.err != want {
			t.Errorf("cancelled waiting call %d: %q, %v; want ctx.Err() itself, %v", i, r.id, r.err, want)
		}
	}
	release()
	if r := first(); r.err != nil {
		t.Fatal(r.err)
	}
	for i := range n {
		if i%3 == 0 {
			if stored(t, rdb, q, fmt.Sprint("c", i)) {
				t.Errorf("cancelled call %d's job is stored", i)
			}
			continue
		}
		if r := <-res[i]; r.err != nil || !stored(t, rdb, q, r.id) {
			t.Errorf("call %d: %q, %v; want stored", i, r.id, r.err)
		}
	}
}

// A call whose ctx ends after its job was sent waits for Redis's answer
// and reports what was stored, as long as some call of the same round
// trip still waits; when the ctx of every one of them has ended, the round
// trip is abandoned and each says the job may or may not be stored.
func testGroupCancelSent(t *testing.T, rdb redis.UniversalClient, prefix string) {
	q := newQueue(t, rdb, prefix, "group-cancel-sent")
	g := newGate(t, rdb, q)
	for _, all := range []bool{false, true} {
		release, first := holdFirst(t, g, q)
		const n = 6
		res := make([]chan enqueueResult, n)
		cancels := make([]context.CancelFunc, n)
		for i := range n {
			ctx, cancel := context.WithCancel(context.Background())
			cancels[i] = cancel
			defer cancel()
			res[i] = make(chan enqueueResult, 1)
			go func() {
				id, err := q.Enqueue(ctx, []byte("s"), WithID(fmt.Sprint(all, i)))
				res[i] <- enqueueResult{id, err}
			}()
			waitPending(t, q, i+1)
		}
		held, releaseBatch := g.holdNext()
		release()
		if r := first(); r.err != nil && !errors.Is(r.err, ErrJobExists) {
			t.Fatal(r.err)
		}
		<-held // the batch is sent, and held
		for i := range n {
			if all || i > 0 {
				cancels[i]()
			}
		}
		if all {
			// Every call gave up: the round trip is abandoned where the
			// client still can, here before it is written.
			g.mu.Lock()
			sent := g.heldCtx
			g.mu.Unlock()
			<-sent.Done()
			releaseBatch()
			for i := range n {
				r := <-res[i]
				if !errors.Is(r.err, context.Canceled) || r.err == context.Canceled || !strings.Contains(r.err.Error(), "may or may not be stored") {
					t.Errorf("call %d of an abandoned round trip: %q, %v; want an error wrapping context.Canceled that says the job may be stored", i, r.id, r.err)
				}
			}
			continue
		}
		time.Sleep(10 * time.Millisecond) // the cancellations, had they mattered, would have
		releaseBatch()
		for i := range n {
			if r := <-res[i]; r.err != nil || !stored(t, rdb, q, r.id) {
				t.Errorf("sent call %d (ctx cancelled: %v): %q, %v; want stored and reported", i, i > 0, r.id, r.err)
			}
		}
	}
}

// 1000 goroutines, a third of them with a ctx cancelled at a random
// moment: a call that returns ctx.Err() itself never has its job stored,
// a call that succeeds has it stored as given, and only a call that says
// so may have it either way.
func testGroupRandomCancel(t *testing.T, rdb redis.UniversalClient, prefix string) {
	q := newQueue(t, rdb, prefix, "group-random")
	const n = 1000
	res := make([]enqueueResult, n)
	var wg sync.WaitGroup
	var sent, unsent, unknown atomic.Int64
	for i := range n {
		wg.Go(func() {
			ctx := context.Background()
			if i%3 == 0 {
				c, cancel := context.WithCancel(ctx)
				ctx = c
				defer cancel()
				time.AfterFunc(time.Duration(rand.Int64N(int64(20*time.Millisecond))), cancel)
			}
			var opts []EnqueueOption
			if i%4 == 0 {
				opts = append(opts, WithDelay(time.Duration(i)*time.Millisecond))
			}
			id, err := q.Enqueue(ctx, fmt.Appendf(nil, "r%d", i), append(opts, WithID(fmt.Sprint("r", i)))...)
			res[i] = enqueueResult{id, err}
		})
	}
	wg.Wait()
	ctx := context.Background()
	for i, r := range res {
		id := fmt.Sprint("r", i)
		switch {
		case r.err == nil:
			sent.Add(1)
			info, err := q.Job(ctx, id)
			if err != nil || string(info.Payload) != fmt.Sprint("r", i) {
				t.Errorf("call %d succeeded, its job: %q, %v; want stored as given", i, info.Payload, err)
			}
		case r.err == context.Canceled: // ctx.Err() itself: the job was never sent
			unsent.Add(1)
			if stored(t, rdb, q, id) {
				t.Errorf("call %d returned ctx.Err(), yet its job is stored", i)
			}
		case errors.Is(r.err, context.Canceled) && strings.Contains(r.err.Error(), "may or may not be stored"):
			unknown.Add(1)
		default:
			t.Errorf("call %d: %v", i, r.err)
		}
	}
	t.Logf("%d stored and reported, %d cancelled before sending, %d abandoned in flight", sent.Load(), unsent.Load(), unknown.Load())
	if sent.Load() < 2*n/3 {
		t.Errorf("%d calls succeeded, want at least the %d whose ctx never ended", sent.Load(), 2*n/3)
	}
}

// A Redis that stalls (a proxy holding every byte): the call in flight
// waits; calls made meanwhile wait for the next batch, and those whose ctx
// ends return ctx.Err() while the stall lasts, never stored; once Redis
// answers again every other job is stored.
func TestEnqueueGroupStall(t *testing.T) {
	m := miniredis.RunT(t)
	p := newProxy(t, m.Addr())
	t.Cleanup(p.close)
	rdb := redis.NewClient(&redis.Options{Addr: p.addr(), ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = rdb.Close() })
	q := newQueue(t, rdb, "rbt", "group-stall")
	for _, s := range []*redis.Script{scriptEnqueue, scriptEnqueueMany} {
		if err := s.Load(context.Background(), rdb).Err(); err != nil {
			t.Fatal(err)
		}
	}
	p.stalled.Store(true)
	firstDone := make(chan error, 1)
	go func() {
		_, err := q.Enqueue(context.Background(), []byte("first"), WithID("first"))
		firstDone <- err
	}()
	// The first call is in flight once no call waits and the group is busy.
	for {
		q.group.mu.Lock()
		busy := q.group.busy
		q.group.mu.Unlock()
		if busy {
			break
		}
		time.Sleep(time.Millisecond)
	}
	const n = 200
	res := make([]chan enqueueResult, n)
	for i := range n {
		ctx := context.Background()
		if i%2 == 0 {
			c, cancel := context.WithTimeout(ctx, time.Duration(1+i%7)*time.Millisecond)
			defer cancel()
			ctx = c
		}
		res[i] = make(chan enqueueResult, 1)
		go func() {
			id, err := q.Enqueue(ctx, bytes.Repeat([]byte{byte(i)}, 1+i*100), WithID(fmt.Sprint("t", i)))
			res[i] <- enqueueResult{id, err}
		}()
	}
	for i := 0; i < n; i += 2 { // while the stall lasts
		if r := <-res[i]; r.err != context.DeadlineExceeded { // ctx.Err() itself
			t.Fatalf("call %d, its deadline passed while waiting: %q, %v; want ctx.Err() itself", i, r.id, r.err)
		}
	}
	select {
	case err := <-firstDone:
		t.Fatalf("the first call returned %v during the stall", err)
	default:
	}
	p.stalled.Store(false)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range n {
		id := fmt.Sprint("t", i)
		if i%2 == 0 {
			if stored(t, rdb, q, id) {
				t.Errorf("call %d timed out waiting, yet its job is stored", i)
			}
			continue
		}
		r := <-res[i]
		info, err := q.Job(ctx, id)
		if r.err != nil || err != nil || !bytes.Equal(info.Payload, bytes.Repeat([]byte{byte(i)}, 1+i*100)) {
			t.Errorf("call %d: %v; its job %d bytes, %v; want stored as given", i, r.err, len(info.Payload), err)
		}
	}
}

// panicHook panics once, on the first enqueue_many call it sees.
type panicHook struct{ done atomic.Bool }

func (*panicHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *panicHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && args[1] == scriptEnqueueMany.Hash() && h.done.CompareAndSwap(false, true) {
			panic("a hook of the user's panicked")
		}
		return next(ctx, cmd)
	}
}

func (*panicHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A panic while a batch is sent (a hook of the user's) comes out of the
// call that led it; the other calls of the batch return an error, and the
// queue's next calls still go out.
func TestEnqueueGroupPanic(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q := newQueue(t, rdb, "rbt", "group-panic")
	g := newGate(t, rdb, q)
	rdb.AddHook(&panicHook{})
	release, first := holdFirst(t, g, q)
	const n = 5
	type outcome struct {
		err      error
		panicked bool
	}
	res := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer func() {
				if recover() != nil {
					res[i].panicked = true
				}
			}()
			_, res[i].err = q.Enqueue(context.Background(), []byte("p"))
		})
	}
	waitPending(t, q, n)
	release()
	wg.Wait()
	if r := first(); r.err != nil {
		t.Fatal(r.err)
	}
	panicked := 0
	for i, r := range res {
		switch {
		case r.panicked:
			panicked++
		case r.err == nil || !strings.Contains(r.err.Error(), "panicked"):
			t.Errorf("call %d of the batch that panicked: %v, want an error saying so", i, r.err)
		}
	}
	if panicked != 1 {
		t.Errorf("%d calls panicked, want the one that led the batch", panicked)
	}
	if _, err := q.Enqueue(context.Background(), []byte("after")); err != nil {
		t.Errorf("a call after the panic: %v", err)
	}
}

// now_ms_text gives the text num(math.floor(now_us() / 1000)) would, at
// microseconds that need padding and at the edges of a millisecond, on
// miniredis's set clock and on the real Redis's.
func TestNowMsText(t *testing.T) {
	src := mustRead("lua/lib/num.lua") + "\n" + mustRead("lua/lib/now_us.lua") + "\n" + mustRead("lua/lib/now_ms_text.lua") +
		"\nreturn {now_ms_text(), num(math.floor(now_us() / 1000))}\n"
	check := func(t *testing.T, rdb redis.UniversalClient, at, want string) {
		t.Helper()
		got, err := rdb.Eval(context.Background(), src, nil).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != got[1] || (want != "" && got[0] != want) {
			t.Errorf("at %s: now_ms_text %q, num %q, want both %q", at, got[0], got[1], want)
		}
	}
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	for _, us := range []int64{0, 1, 999, 1000, 1001, 99_999, 123_456, 999_000, 999_999} {
		at := time.Unix(1_764_660_000, us*1000)
		m.SetTime(at)
		check(t, rdb, at.Format(time.RFC3339Nano), fmt.Sprint(at.UnixMilli()))
	}
	for _, b := range backends[:1] {
		c, _ := b.open(t)
		check(t, c, "the real Redis's clock", "")
	}
}

// A job enqueued alone (the enqueue script, its texts packed by the host)
// is stored as the same record, byte for byte but its created time, as
// the same job through EnqueueMany (enqueue_many, rec_new), names and
// metadata of any bytes and lengths included.
func TestEnqueueRecordAsMany(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "record-as-many")
		created := regexp.MustCompile(`^(\d*,\d*,\d*,)\d+(,)`)
		for i, opts := range [][]EnqueueOption{
			nil,
			{WithName("email"), WithMaxAttempts(7)},
			{WithName(strings.Repeat("n", 1234)), WithMetadata(map[string]string{"trace\x00id": "\xff\xfe:|,", "": "", "k": strings.Repeat("v", 10_000)})},
		} {
			alone, err := q.Enqueue(ctx, []byte("pay:load|,"), append(opts, WithID(fmt.Sprint("alone", i)))...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := q.EnqueueMany(ctx, []EnqueueParams{{Payload: []byte("pay:load|,"), Options: append(opts, WithID(fmt.Sprint("many", i)))}})
			if err != nil || res[0].Err != nil {
				t.Fatal(err, res)
			}
			a, _ := rdb.HGet(ctx, q.keys.jobs, alone).Result()
			m, _ := rdb.HGet(ctx, q.keys.jobs, res[0].ID).Result()
			if a, m := created.ReplaceAllString(a, "${1}T$2"), created.ReplaceAllString(m, "${1}T$2"); a != m || !strings.Contains(a, ",T,") {
				t.Errorf("options %d: alone %.80q, many %.80q; want the same record but the created time", i, a, m)
			}
		}
	})
}
