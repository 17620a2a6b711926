package native

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rebound-go/rebound/conformance"
	"github.com/rebound-go/rebound/internal/testenv"
)

func TestConformanceCluster(t *testing.T) {
	cc := testenv.Cluster(t)
	h := &harness{name: "native/cluster", rdb: cc, prefix: "rbt", lateness: 100 * time.Millisecond}
	conformance.Run(t, h)

	// The suite's queues ("conf{N}:q", braces escaped in the tag) landed on
	// more than one master, and each queue's keys on exactly one.
	ctx := context.Background()
	masters := map[string]bool{}
	for i := 1; i <= h.n; i++ {
		k := newKeys("rbt", fmt.Sprintf("conf{%d}:q", i))
		slot := cc.ClusterKeySlot(ctx, k.wait).Val()
		for _, key := range []string{k.due, k.active, k.delayed, k.failed, k.completed, k.marker, k.jobs, k.counter, k.control, k.giveup, k.giveupCalls, k.cancelling} {
			if s := cc.ClusterKeySlot(ctx, key).Val(); s != slot {
				t.Errorf("key %s in slot %d, its queue's wait list in %d", key, s, slot)
			}
		}
		for j, r := range [][2]int64{{0, 5460}, {5461, 10921}, {10922, 16383}} {
			if slot >= r[0] && slot <= r[1] {
				masters[strconv.Itoa(j)] = true
			}
		}
	}
	t.Logf("%d queues spread over %d of 3 masters", h.n, len(masters))
}

// TestConformanceShardedCluster runs the suite on queues of three shards on
// a three-master Cluster, then checks that each queue's shards landed on
// three distinct masters, each shard's keys in one slot, and that the
// slots the queue computed for its tags are the ones the cluster gives.
func TestConformanceShardedCluster(t *testing.T) {
	cc := testenv.Cluster(t)
	h := &harness{name: "native/cluster-3shards", rdb: cc, prefix: "rbs", lateness: 100 * time.Millisecond, shards: 3}
	conformance.Run(t, h)

	ctx := context.Background()
	owner, masters, err := slotOwners(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	if len(masters) != 3 {
		t.Fatalf("the cluster has %d masters, want 3", len(masters))
	}
	checked := 0
	for i := 1; i <= h.n; i++ {
		q, err := OpenQueue(ctx, cc, fmt.Sprintf("conf{%d}:q", i), WithPrefix("rbs"))
		if err != nil {
			t.Fatal(err)
		}
		if q.Shards() == 1 {
			continue // (a name the harness gave a breaker store, or to shared queues under prefixes of their own)
		}
		checked++
		on := map[string]bool{}
		for _, s := range q.parts() {
			k := s.keys
			slot := cc.ClusterKeySlot(ctx, k.wait).Val()
			if int64(keySlot(s.tag)) != slot {
				t.Errorf("tag %q: keySlot %d, CLUSTER KEYSLOT %d", s.tag, keySlot(s.tag), slot)
			}
			for _, key := range []string{k.due, k.active, k.delayed, k.failed, k.completed, k.marker, k.jobs, k.counter, k.control, k.giveup, k.giveupCalls, k.cancelling} {
				if s := cc.ClusterKeySlot(ctx, key).Val(); s != slot {
					t.Errorf("key %s in slot %d, its shard's wait list in %d", key, s, slot)
				}
			}
			on[owner(uint16(slot))] = true
		}
		if len(on) != 3 {
			t.Errorf("queue %d: shards %q on %d masters, want 3 distinct", i, q.ShardTags(), len(on))
		}
	}
	if checked < h.n/2 {
		t.Errorf("%d of %d queues had a layout, want most", checked, h.n)
	}
	t.Logf("%d queues of 3 shards, each on 3 distinct masters", checked)
}
