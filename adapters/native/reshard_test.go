package native

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// reshardWorker starts a worker of q that follows the layout every 20 ms
// (not every 2 s) and counts each job's runs; every job whose ID ends in
// 7 fails its first run, so retries run on the shards too.
func reshardWorker(t *testing.T, q *Queue) (runs func() map[string]int, w *Worker) {
	t.Helper()
	var mu sync.Mutex
	n := map[string]int{}
	w, err := NewWorker(q, fixedRule(t, 5*time.Millisecond, 3), func(ctx context.Context, j *Job) error {
		mu.Lock()
		n[j.ID]++
		first := n[j.ID] == 1
		mu.Unlock()
		if first && j.ID[len(j.ID)-1] == '7' {
			return errors.New("fails once")
		}
		return nil
	}, WithConcurrency(8), WithErrorHandler(func(err error) { t.Logf("worker: %v", err) }))
	if err != nil {
		t.Fatal(err)
	}
	w.layoutPoll = 20 * time.Millisecond
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
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range n {
			out[k] = v
		}
		return out
	}, w
}

// partTags returns the tags of the shards w's parts serve.
func partTags(w *Worker) []string {
	w.parts.mu.Lock()
	defer w.parts.mu.Unlock()
	var tags []string
	for _, p := range w.parts.list {
		tags = append(tags, p.q.tag)
	}
	return tags
}

// TestReshardLive changes the count of shards of a queue in use, 1 to 3
// then 3 to 2, with a worker running and a producer that opened the queue
// before each change (holding the old layout) enqueueing throughout: every
// job enqueued runs to completion exactly as a queue that never changed
// would run it (once, and once more after a failure), the stale producer's
// jobs go where the new layout puts them, WithID stays idempotent across
// the change while it drains, an action by ID finds a job on the old
// layout's shard, FinishReshard refuses while a dropped shard holds
// unfinished jobs, and the worker serves the new shards and stops serving
// the dropped one.
func TestReshardLive(t *testing.T) { eachBackend(t, reshardLive) }

// TestReshardLiveCluster is TestReshardLive on a three-master Cluster,
// where the shards a change adds land on other masters than shard 0.
func TestReshardLiveCluster(t *testing.T) {
	runCluster(t, []backendTest{{"live", reshardLive}}, "rbt-reshard")
}

func reshardLive(t *testing.T, rdb redis.UniversalClient, prefix string) {
	{
		ctx := context.Background()
		open := func() *Queue {
			q, err := OpenQueue(ctx, rdb, "live", WithPrefix(prefix))
			if err != nil {
				t.Fatal(err)
			}
			return q
		}
		q := open()
		stale := open() // opened once: its view goes stale at each change
		runs, w := reshardWorker(t, q)
		var ids []string
		enqueue := func(p *Queue, phase string, n int) {
			t.Helper()
			for i := range n {
				o := []EnqueueOption{WithID(fmt.Sprintf("%s-%d", phase, i))}
				if i%5 == 0 {
					o = append(o, WithDelay(30*time.Millisecond))
				}
				id, err := p.Enqueue(ctx, nil, o...)
				if err != nil {
					t.Fatalf("enqueue %s %d: %v", phase, i, err)
				}
				ids = append(ids, id)
			}
		}
		enqueue(stale, "one", 40)

		st, err := Reshard(ctx, rdb, "live", 3, WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		if st.Shards != 3 || st.From != 1 || st.Epoch != 1 || st.Unfinished() != 0 {
			t.Errorf("after Reshard to 3: %+v, want 3 shards from 1 at epoch 1, no dropped shard", st)
		}
		enqueue(stale, "grow", 40) // refused as stale by shard 0, re-read, sent by the new layout
		if stale.Shards() != 3 {
			t.Errorf("the stale producer holds %d shards after enqueueing, want 3", stale.Shards())
		}
		for i := range 40 {
			id := fmt.Sprintf("grow-%d", i)
			s := stale.shardFor(id)
			if ok, err := rdb.HExists(ctx, s.keys.jobs, id).Result(); err != nil || !ok {
				t.Errorf("job %s is not on its shard %q of the new layout", id, s.tag)
			}
		}
		// WithID across the change: an ID of the old layout is still taken.
		for i := range 40 {
			if _, err := q.Enqueue(ctx, nil, WithID(fmt.Sprintf("one-%d", i))); !errors.Is(err, ErrJobExists) {
				t.Errorf("enqueue of one-%d again while the change drains: %v, want ErrJobExists", i, err)
				break
			}
		}
		// An action by ID finds a job where the old layout put it.
		if _, err := q.Job(ctx, "one-1"); err != nil {
			t.Errorf("Job(one-1) after the change: %v", err)
		}
		st, err = q.FinishReshard(ctx)
		if err != nil || !st.Done() {
			t.Fatalf("FinishReshard of a change that drops no shard: %+v, %v", st, err)
		}
		waitFor(t, "the worker serves the 3 shards", func() bool { return len(partTags(w)) == 3 })

		enqueue(q, "three", 60)
		stale2 := open()
		// Jobs delayed on the shard the shrink drops keep it unfinished.
		var late []string
		for i := range 20 {
			id := fmt.Sprintf("late-%d", i)
			if shardIndex(id, 3) != 2 {
				continue
			}
			if _, err := q.Enqueue(ctx, nil, WithID(id), WithDelay(400*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			late = append(late, id)
			ids = append(ids, id)
		}
		if len(late) == 0 {
			t.Fatal("no late job hashed to shard 2")
		}
		st, err = Reshard(ctx, rdb, "live", 2, WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		if st.Shards != 2 || st.From != 3 || st.Epoch != 2 || len(st.Draining) != 1 {
			t.Errorf("after Reshard to 2: %+v, want 2 shards from 3 at epoch 2, one dropped", st)
		}
		if _, err := Reshard(ctx, rdb, "live", 4, WithPrefix(prefix)); !errors.Is(err, ErrReshardDraining) {
			t.Errorf("Reshard to 4 while 3 to 2 drains: %v, want ErrReshardDraining", err)
		}
		if _, err := q.FinishReshard(ctx); !errors.Is(err, ErrReshardDraining) {
			t.Errorf("FinishReshard while the dropped shard holds %d delayed jobs: %v, want ErrReshardDraining", len(late), err)
		}
		enqueue(stale2, "shrink", 40)
		for i := range 40 {
			id := fmt.Sprintf("shrink-%d", i)
			if shardIndex(id, 3) == 2 && q.shardFor(id).tag == st.Draining[0].Tag {
				t.Errorf("job %s went to the dropped shard", id)
			}
		}
		for _, id := range ids {
			waitState(t, q, id, StateCompleted, 30*time.Second)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err = q.FinishReshard(ctx)
			if err == nil || !errors.Is(err, ErrReshardDraining) || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil || !st.Done() || st.Shards != 2 {
			t.Fatalf("FinishReshard once drained: %+v, %v", st, err)
		}
		waitFor(t, "the worker stops serving the dropped shard", func() bool { return len(partTags(w)) == 2 })

		got := runs()
		for _, id := range ids {
			want := 1
			if id[len(id)-1] == '7' {
				want = 2
			}
			if got[id] != want {
				t.Errorf("job %s ran %d times, want %d", id, got[id], want)
			}
		}
		if len(got) != len(ids) {
			t.Errorf("%d jobs ran, %d were enqueued", len(got), len(ids))
		}
		c, err := q.Counts(ctx)
		if err != nil || c.Waiting+c.Active+c.Delayed+c.Failed != 0 {
			t.Errorf("counts after the changes: %+v, %v, want nothing unfinished", c, err)
		}
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReshardHostile tries Reshard and the status calls with what a caller
// should not pass: counts out of range, a nil ctx, two changes at once.
func TestReshardHostile(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		for _, n := range []int{0, -1, MaxShards + 1, math.MaxInt} {
			if _, err := Reshard(ctx, rdb, "h", n, WithPrefix(prefix)); err == nil {
				t.Errorf("Reshard to %d: no error", n)
			}
		}
		//lint:ignore SA1012 a nil ctx is what this checks
		if _, err := Reshard(nil, rdb, "h", 2, WithPrefix(prefix)); err == nil {
			t.Error("Reshard with a nil ctx: no error")
		}
		if n, _ := rdb.Exists(ctx, layoutKey(prefix, "h")).Result(); n != 0 {
			t.Error("a refused Reshard wrote a layout")
		}
		// Two changes at once: one wins, the other changes nothing.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, n := range []int{2, 5} {
			wg.Go(func() { _, errs[i] = Reshard(ctx, rdb, "h", n, WithPrefix(prefix)) })
		}
		wg.Wait()
		q, err := OpenQueue(ctx, rdb, "h", WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		st, err := q.ReshardStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Epoch != 1 || (st.Shards != 2 && st.Shards != 5) {
			t.Errorf("after two changes at once: %+v (errors %v), want one of them at epoch 1", st, errs)
		}
		if (errs[0] == nil) == (errs[1] == nil) && st.Shards != 2 && st.Shards != 5 {
			t.Errorf("errors %v", errs)
		}
		// The same count again finishes the fence, idempotently.
		if st2, err := Reshard(ctx, rdb, "h", st.Shards, WithPrefix(prefix)); err != nil || st2.Epoch != 1 {
			t.Errorf("Reshard to the count written: %+v, %v, want epoch 1 kept", st2, err)
		}
		// A producer whose layout is older than the shard's is refused by
		// the script itself, before anything is written.
		s := q.view().cur[0]
		old := &Queue{rdb: s.rdb, name: s.name, prefix: s.prefix, maxPayload: s.maxPayload, tag: s.tag, keys: s.keys, fenced: true}
		if _, err := old.enqueueGrouped(ctx, preparedJob{id: "x"}); !isStale(err) {
			t.Errorf("an enqueue at epoch 0 on a shard at epoch 1: %v, want a STALELAYOUT refusal", err)
		}
		if ok, _ := rdb.HExists(ctx, s.keys.jobs, "x").Result(); ok {
			t.Error("the refused enqueue stored its job")
		}
	})
}
