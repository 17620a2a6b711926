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
