package native

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// idOnShard returns the first ID "<prefix><n>" from n = from on that lands
// on shard i of a queue of shards, and the n after it.
func idOnShard(prefix string, from, i, shards int) (string, int) {
	for n := from; ; n++ {
		id := fmt.Sprint(prefix, n)
		if shardIndex(id, shards) == i {
			return id, n + 1
		}
	}
}

func newSharded(t testing.TB, rdb redis.UniversalClient, prefix, name string, n int, opts ...QueueOption) *Queue {
	t.Helper()
	q, err := NewShardedQueue(context.Background(), rdb, name, n, append([]QueueOption{WithPrefix(prefix)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestShardOneIsTodaysQueue pins the keys of a queue of one shard: the
// names NewQueue has always used, whether the queue comes from NewQueue,
// NewShardedQueue(1) or OpenQueue, and no layout key is written for it;
// shard 0 of a sharded queue has the same keys too.
func TestShardOneIsTodaysQueue(t *testing.T) {
	pin := func(b string) keys {
		return keys{base: b, wait: b + "wait", due: b + "due", active: b + "active", delayed: b + "delayed",
			failed: b + "failed", completed: b + "completed", jobs: b + "jobs", marker: b + "marker", counter: b + "counter",
			control: b + "control", giveup: b + "giveup", giveupCalls: b + "giveup:calls", cancelling: b + "cancelling", cancels: b + "cancels", redrive: b + "redrive", epoch: b + "epoch"}
	}
	var want keys
	same := func(t *testing.T, what string, k keys) {
		t.Helper()
		k.completeKeys, k.failKeys, k.releaseKeys, k.deferKeys, k.reserveKeys = nil, nil, nil, nil, nil
		if !reflect.DeepEqual(k, want) {
			t.Errorf("%s: keys %+v, want %+v", what, k, want)
		}
	}
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		want = pin(prefix + ":{emails}:")
		q := newQueue(t, rdb, prefix, "emails")
		same(t, "NewQueue", q.keys)
		one := newSharded(t, rdb, prefix, "emails", 1)
		same(t, "NewShardedQueue(1)", one.keys)
		if one.Shards() != 1 || len(one.parts()) != 1 {
			t.Errorf("NewShardedQueue(1) has %d shards, want a queue of one", one.Shards())
		}
		if n, err := rdb.Exists(ctx, prefix+":{emails}:layout").Result(); err != nil || n != 0 {
			t.Errorf("a queue of one shard wrote a layout (exists %d, %v), want none", n, err)
		}
		opened, err := OpenQueue(ctx, rdb, "emails", WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		same(t, "OpenQueue", opened.keys)
		if opened.Shards() != 1 {
			t.Errorf("OpenQueue of a queue without a layout has %d shards, want 1", opened.Shards())
		}
		three := newSharded(t, rdb, prefix, "emails", 3)
		same(t, "shard 0 of 3", three.parts()[0].keys)
		if !slices.Equal(three.ShardTags()[:1], []string{"emails"}) {
			t.Errorf("tags %q, want shard 0's %q", three.ShardTags(), "emails")
		}
	})
}

// TestShardLayout: the layout is written once, read back the same by every
// later open, and a different shard count or a damaged layout is refused.
func TestShardLayout(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newSharded(t, rdb, prefix, "lay{out}", 4)
		tags := q.ShardTags()
		if len(tags) != 4 || tags[0] != escapeTag("lay{out}") {
			t.Fatalf("tags %q, want 4, the first the queue's own", tags)
		}
		again := newSharded(t, rdb, prefix, "lay{out}", 4)
		opened, err := OpenQueue(ctx, rdb, "lay{out}", WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(again.ShardTags(), tags) || !slices.Equal(opened.ShardTags(), tags) {
			t.Errorf("reopened tags %q and %q, want %q", again.ShardTags(), opened.ShardTags(), tags)
		}
		if _, err := NewShardedQueue(ctx, rdb, "lay{out}", 2, WithPrefix(prefix)); err == nil {
			t.Error("NewShardedQueue(2) of a queue of 4 shards: no error")
		}
		for _, n := range []int{0, -1, MaxShards + 1} {
			if _, err := NewShardedQueue(ctx, rdb, "other", n, WithPrefix(prefix)); err == nil {
				t.Errorf("NewShardedQueue(%d): no error", n)
			}
		}
		// A queue of one shard in use is not spread.
		used := newQueue(t, rdb, prefix, "used")
		if _, err := used.Enqueue(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := NewShardedQueue(ctx, rdb, "used", 3, WithPrefix(prefix)); err == nil {
			t.Error("NewShardedQueue(3) of a queue of one shard holding a job: no error")
		}
		if n, _ := rdb.Exists(ctx, layoutKey(prefix, "used")).Result(); n != 0 {
			t.Error("a refused NewShardedQueue wrote a layout")
		}
		lk := layoutKey(prefix, "bad")
		for _, raw := range []string{"nope", `{"version":9,"shards":["bad","x"]}`, `{"version":1,"shards":["bad","bad"]}`, `{"version":1,"shards":["x","y"]}`} {
			rdb.Set(ctx, lk, raw, 0)
			if _, err := OpenQueue(ctx, rdb, "bad", WithPrefix(prefix)); err == nil {
				t.Errorf("OpenQueue of layout %s: no error", raw)
			}
		}
	})
}

// TestShardQueueAPI runs the Queue API on a queue of three shards: jobs
// spread over the shards by ID, WithID stays idempotent, counts and lists
// cover every shard, and each operator action reaches the job's shard.
func TestShardQueueAPI(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newSharded(t, rdb, prefix, "api", 3)
		const n = 60
		for i := range n {
			if _, err := q.Enqueue(ctx, []byte("p"), WithID(fmt.Sprint("job-", i)), WithName("k")); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.Enqueue(ctx, nil, WithID("job-7")); !errors.Is(err, ErrJobExists) {
			t.Errorf("second Enqueue of job-7: %v, want ErrJobExists", err)
		}
		res, err := q.EnqueueMany(ctx, []EnqueueParams{{Options: []EnqueueOption{WithID("job-8")}}, {Options: []EnqueueOption{WithID("m-1")}},
			{Options: []EnqueueOption{WithID("m-1")}}, {Options: []EnqueueOption{WithID("m-2"), WithDelay(time.Hour)}}})
		if err != nil {
			t.Fatal(err)
		}
		if !errors.Is(res[0].Err, ErrJobExists) || res[1].Err != nil || !errors.Is(res[2].Err, ErrJobExists) || res[3].Err != nil {
			t.Errorf("EnqueueMany results %+v, want exists, stored, exists, stored", res)
		}
		for i, s := range q.parts() {
			c, err := s.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if c.Waiting == 0 {
				t.Errorf("shard %d holds no job of %d", i, n)
			}
		}
		c, err := q.Counts(ctx)
		if err != nil || c.Waiting != n+1 || c.Delayed != 1 {
			t.Fatalf("Counts %+v (%v), want %d waiting, 1 delayed", c, err, n+1)
		}
		// List pages through every waiting job once, in pages of 7.
		seen := map[string]int{}
		for cur := ""; ; {
			p, err := q.List(ctx, StateWaiting, ListOptions{Limit: 7, Cursor: cur})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Jobs) > 7 {
				t.Fatalf("a page of %d jobs, want at most 7", len(p.Jobs))
			}
			for _, j := range p.Jobs {
				seen[j.ID]++
			}
			if p.Next == "" {
				break
			}
			cur = p.Next
		}
		if len(seen) != n+1 {
			t.Errorf("List saw %d waiting jobs, want %d", len(seen), n+1)
		}
		for id, k := range seen {
			if k != 1 {
				t.Errorf("List gave %s %d times, want once", id, k)
			}
		}
		// Operator actions reach the job's shard.
		if _, err := q.Cancel(ctx, "job-3"); err != nil {
			t.Fatal(err)
		}
		if j, err := q.Job(ctx, "job-3"); err != nil || j.State != StateFailed || !j.Cancelled {
			t.Fatalf("job-3 after Cancel: %+v %v, want failed, cancelled", j, err)
		}
		if err := q.Retry(ctx, "job-3", RetryOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := q.RunNow(ctx, "m-2"); err != nil {
			t.Fatal(err)
		}
		if st, err := q.Delete(ctx, "job-4"); err != nil || st != StateWaiting {
			t.Fatalf("Delete job-4: %v %v, want waiting", st, err)
		}
		if _, err := q.Job(ctx, "job-4"); !errors.Is(err, ErrNotFound) {
			t.Errorf("job-4 after Delete: %v, want ErrNotFound", err)
		}
		if err := q.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		for i, s := range q.parts() {
			if p, _ := s.Paused(ctx); !p {
				t.Errorf("shard %d not paused after Pause", i)
			}
		}
		if err := q.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		if p, err := q.Paused(ctx); err != nil || p {
			t.Errorf("Paused after Resume: %v %v", p, err)
		}
		// A bulk cancel of every waiting job, in steps of 9, then bulk retry and groups.
		total, err := q.Bulk(ctx, BulkCancel, Filter{State: StateWaiting}, BulkOptions{ScanOptions: ScanOptions{Limit: 9}}, nil)
		if err != nil || total.Done != n+1 {
			t.Fatalf("bulk cancel: %+v %v, want %d done", total, err, n+1)
		}
		g, err := q.FailureGroups(ctx, Filter{}, ScanOptions{})
		if err != nil || len(g.Groups) != 1 || g.Groups[0].Count != n+1 || g.Next != "" {
			t.Fatalf("FailureGroups %+v %v, want one group of %d", g, err, n+1)
		}
		cm, err := q.CountMatching(ctx, Filter{State: StateFailed}, ScanOptions{Limit: 5})
		if err != nil || cm.Matched != 5 || cm.Next == "" || cm.Total != n+1 {
			t.Fatalf("CountMatching: %+v %v, want 5 matched of %d, more to go", cm, err, n+1)
		}
		moved, err := q.RetryFailed(ctx, FailedFilter{}, RetryOptions{})
		if err != nil || moved != n+1 {
			t.Fatalf("RetryFailed moved %d (%v), want %d", moved, err, n+1)
		}
		if _, err := q.List(ctx, StateWaiting, ListOptions{Cursor: "bogus"}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("List with a bad cursor: %v, want ErrBadCursor", err)
		}
	})
}

// TestShardListOrder: List of a sharded queue merges the shards' pages in
// the state's order (newest first, or oldest first).
func TestShardListOrder(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newSharded(t, rdb, prefix, "order", 3)
		for i := range 30 {
			if _, err := q.Enqueue(ctx, nil, WithID(fmt.Sprint("d", i)), WithDelay(time.Duration(i+1)*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		for _, oldest := range []bool{true, false} {
			var got []time.Time
			for cur := ""; ; {
				p, err := q.List(ctx, StateDelayed, ListOptions{Limit: 4, Cursor: cur, OldestFirst: oldest})
				if err != nil {
					t.Fatal(err)
				}
				for _, j := range p.Jobs {
					got = append(got, j.NextFireAt)
				}
				if cur = p.Next; cur == "" {
					break
				}
			}
			if len(got) != 30 {
				t.Fatalf("oldest first %v: listed %d jobs, want 30", oldest, len(got))
			}
			for i := 1; i < len(got); i++ {
				if oldest && got[i].Before(got[i-1]) || !oldest && got[i].After(got[i-1]) {
					t.Fatalf("oldest first %v: fire times out of order at %d: %v then %v", oldest, i, got[i-1], got[i])
				}
			}
		}
	})
}

// TestShardNoStarvation: a shard with a backlog is drained while the other
// shards are kept busy. Shard 0 starts with a backlog of 150 jobs; shards 1
// and 2 are topped up so that they never run dry until the backlog is
// done. A worker of 4 handlers takes turns among the shards with work, so
// the backlog gets about a third of the runs; a worker serving its shards
// one after the other (or the busy ones first) would give it none until
// the producers stop.
func TestShardNoStarvation(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		q := newSharded(t, rdb, prefix, "starve", 3)
		const backlog = 150
		next := 0
		var params []EnqueueParams
		for range backlog {
			var id string
			id, next = idOnShard("b", next, 0, 3)
			params = append(params, EnqueueParams{Options: []EnqueueOption{WithID(id)}})
		}
		if _, err := q.EnqueueMany(ctx, params); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		runs := map[int]int{} // runs by shard
		var left atomic.Int64
		left.Store(backlog)
		done := make(chan struct{})
		var closeOnce sync.Once
		startWorker(t, q, fixedRule(t, time.Millisecond, 1), func(ctx context.Context, j *Job) error {
			s := shardIndex(j.ID, 3)
			mu.Lock()
			runs[s]++
			mu.Unlock()
			if s == 0 && left.Add(-1) == 0 {
				closeOnce.Do(func() { close(done) })
			}
			time.Sleep(time.Millisecond)
			return nil
		}, WithConcurrency(4), WithPrefetch(0))
		// Producers keep shards 1 and 2 at 20 or more waiting jobs.
		var wg sync.WaitGroup
		for s := 1; s <= 2; s++ {
			wg.Go(func() {
				n := 0
				for ctx.Err() == nil {
					c, err := q.parts()[s].Counts(ctx)
					if err != nil {
						return
					}
					for i := c.Waiting; i < 40; i++ {
						var id string
						id, n = idOnShard(fmt.Sprint("s", s, "-"), n, s, 3)
						_, _ = q.Enqueue(ctx, nil, WithID(id))
					}
					select {
					case <-done:
						return
					case <-time.After(time.Millisecond):
					}
				}
			})
		}
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Errorf("the backlog is not drained after 60s while the other shards are busy: %d left", left.Load())
		}
		stop()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		t.Logf("runs by shard until the backlog of %d was drained: %v", backlog, runs)
		for s := 1; s <= 2; s++ {
			if runs[s] == 0 {
				t.Errorf("shard %d ran no job while the backlog drained: the producers did not keep it busy", s)
			}
			// Taking turns, each busy shard runs about as many jobs as the
			// backlog; allow three times that for the machine's noise.
			if runs[s] > 3*backlog {
				t.Errorf("shard %d ran %d jobs while the backlog of %d drained, want about as many (turns)", s, runs[s], backlog)
			}
		}
	})
}

// TestShardWorkerRunsEveryShard: a worker of a sharded queue runs the jobs
// of every shard, retries included (a retry stays on its job's shard), and
// its concurrency bounds the handlers of all shards together.
func TestShardWorkerRunsEveryShard(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newSharded(t, rdb, prefix, "every", 3)
		var running, most atomic.Int64
		var mu sync.Mutex
		attempts := map[string]int{}
		startWorker(t, q, fixedRule(t, 5*time.Millisecond, 2), func(ctx context.Context, j *Job) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
			mu.Lock()
			attempts[j.ID]++
			a := attempts[j.ID]
			mu.Unlock()
			if a == 1 {
				return errors.New("fails once")
			}
			return nil
		}, WithConcurrency(3))
		var ids []string
		for i := range 30 {
			id, err := q.Enqueue(ctx, nil, WithID(fmt.Sprint("e", i)))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		for _, id := range ids {
			waitState(t, q, id, StateCompleted, 30*time.Second)
		}
		if m := most.Load(); m > 3 {
			t.Errorf("%d handlers ran at once, want at most 3 (WithConcurrency over all shards)", m)
		}
		for _, id := range ids {
			s := q.shardFor(id)
			if n, err := rdb.HExists(ctx, s.keys.jobs, id).Result(); err != nil || !n {
				t.Errorf("job %s not on its shard %d after its retry", id, s.shard)
			}
		}
	})
}

// TestShardLayoutHostileV2 stores layouts of version 2 that no Reshard
// writes and checks each is refused with a clear error, never used.
func TestShardLayoutHostileV2(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		for _, raw := range []string{
			`{"version":2,"epoch":0,"shards":["h"]}`,
			`{"version":2,"epoch":-5,"shards":["h","h~1"]}`,
			`{"version":1,"epoch":3,"shards":["h","h~1"]}`,
			`{"version":1,"shards":["h","h~1"],"prev":["h"]}`,
			`{"version":2,"epoch":2,"shards":["h","h~1"],"prev":[]}`,
			`{"version":2,"epoch":2,"shards":["h","h~1"],"prev":["h~1","h"]}`,
			`{"version":2,"epoch":2,"shards":["h","h~1"],"prev":["h","h"]}`,
			`{"version":2,"epoch":2,"shards":[]}`,
			`{"version":3,"epoch":2,"shards":["h"]}`,
		} {
			if err := rdb.Set(ctx, layoutKey(prefix, "h"), raw, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if _, err := OpenQueue(ctx, rdb, "h", WithPrefix(prefix)); err == nil || !strings.Contains(err.Error(), "layout") {
				t.Errorf("OpenQueue with layout %s: %v, want an error about the layout", raw, err)
			}
			if _, err := Reshard(ctx, rdb, "h", 3, WithPrefix(prefix)); err == nil {
				t.Errorf("Reshard over layout %s: no error", raw)
			}
		}
	})
}
