package native

// The history test's real sharded mode: the real mode's histories (worker
// processes behind proxies of the test's, real faults) with the main queue
// spread over 3 shards on the 3 masters of a Redis Cluster the mode starts
// (nodes that fsync every write before replying, and serve their slots
// while another master is down), where Redis's fault is one master killed
// with SIGKILL and restarted from its files, at least once a history.

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/internal/testenv"
)

// clusterBudget is how many real sharded histories CI runs, and the most
// time they take (see docs/native.md, History tests).
const (
	clusterBudget     = 5
	clusterBudgetTime = 90 * time.Second
)

func testHistoryRealSharded(t *testing.T) {
	cc, nodes := testenv.DurableCluster(t)
	// While a master is down the client's pools log every dial that
	// failed, hundreds of lines a history: counted, not printed.
	quiet := &quietDials{out: log.New(os.Stderr, "redis: ", log.LstdFlags)}
	redis.SetLogger(quiet)
	t.Cleanup(func() {
		redis.SetLogger(&quietDials{out: quiet.out, all: true})
		t.Logf("%d failed dials of the client's pools not logged", quiet.dropped.Load())
	})
	runReal(t, "real-sharded", realEnv{cc: cc, nodes: nodes}, realShardedShape, clusterBudget, clusterBudgetTime)
}

// realShardedShape is the real mode's shape with the main queue over 3
// shards.
func realShardedShape(seed uint64) shape {
	s := realShape(seed)
	s.Shards = 3
	return s
}

// quietDials is the Redis client's logger that drops (and counts) the
// lines of dials that failed, unless all is set.
type quietDials struct {
	out     *log.Logger
	all     bool
	dropped atomic.Int64
}

func (q *quietDials) Printf(_ context.Context, format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	if !q.all && strings.Contains(line, "failed to dial") {
		q.dropped.Add(1)
		return
	}
	q.out.Print(line)
}
