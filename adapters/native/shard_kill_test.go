package native

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rebound-go/rebound/internal/testenv"
)

// TestShardMasterKilled: on a three-master Cluster whose nodes fsync every
// write before replying, a queue of three shards runs while a producer
// enqueues; the master of shard 1 is killed with SIGKILL mid-run. The
// other shards keep serving (jobs enqueued to them after the kill run
// while it is down), and after the master's restart every job whose
// Enqueue returned its ID ends completed, exactly once in one state: none
// acknowledged is lost.
func TestShardMasterKilled(t *testing.T) {
	cc, nodes := testenv.DurableCluster(t)
	ctx := context.Background()
	q := newSharded(t, cc, "rbk", "killed", 3)
	owner, _, err := slotOwners(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	victim := -1
	for i, a := range nodes.Addrs {
		if a == owner(keySlot(q.parts()[1].tag)) {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("no node serves shard 1's slot %d", keySlot(q.parts()[1].tag))
	}

	var mu sync.Mutex
	runs := map[string]int{}
	ranDuring := map[int]int{} // by shard: jobs that ran while the master was down
	var down atomic.Bool
	startWorker(t, q, fixedRule(t, 10*time.Millisecond, 5), func(ctx context.Context, j *Job) error {
		mu.Lock()
		runs[j.ID]++
		if down.Load() {
			ranDuring[shardIndex(j.ID, 3)]++
		}
		mu.Unlock()
		time.Sleep(time.Millisecond)
		return nil
	}, WithConcurrency(8), WithLease(2*time.Second), WithErrorHandler(func(error) {}))

	// One producer per shard, so that the down shard's enqueues, which
	// wait for their timeout, hold up none of the others'.
	var acked []string
	stop := make(chan struct{})
	var producers sync.WaitGroup
	for s := range 3 {
		producers.Go(func() {
			for n := 0; ; {
				select {
				case <-stop:
					return
				default:
				}
				var id string
				id, n = idOnShard(fmt.Sprint("k", s, "-"), n, s, 3)
				cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				if _, err := q.Enqueue(cctx, []byte("x"), WithID(id)); err == nil {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
				cancel()
				time.Sleep(time.Millisecond)
			}
		})
	}
	time.Sleep(time.Second)
	nodes.Kill(victim)
	down.Store(true)
	time.Sleep(2 * time.Second)
	down.Store(false)
	nodes.Restart(victim)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	producers.Wait()

	mu.Lock()
	during := map[int]int{}
	for k, v := range ranDuring {
		during[k] = v
	}
	ids := append([]string(nil), acked...)
	mu.Unlock()
	t.Logf("%d jobs acknowledged; run while shard 1's master was down, by shard: %v", len(ids), during)
	if during[0] < 20 || during[2] < 20 {
		t.Errorf("while shard 1's master was down, shards 0 and 2 ran %d and %d jobs, want both serving (20 or more each in 2s)", during[0], during[2])
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range ids {
		for {
			j, err := q.Job(ctx, id)
			if err == nil && j.State == StateCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("acknowledged job %s (shard %d): state %v, err %v, want completed: lost or stuck", id, shardIndex(id, 3), j.State, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Each job is in one state: the shards' sets and lists hold it once.
	for i, s := range q.parts() {
		c, err := s.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Waiting+c.Active+c.Delayed+c.Failed != 0 {
			t.Errorf("shard %d after the drain: %+v, want every job completed", i, c)
		}
		_, ps := snapshotProblems(takeSnapshot(t, cc, s))
		for _, p := range ps {
			t.Errorf("shard %d: %s", i, p)
		}
	}
	c, err := q.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Completed != int64(len(ids)) {
		t.Logf("completed %d, acknowledged %d (enqueues that timed out may have stored their job too)", c.Completed, len(ids))
	}
	if c.Completed < int64(len(ids)) {
		t.Errorf("completed %d jobs, fewer than the %d acknowledged", c.Completed, len(ids))
	}
}
