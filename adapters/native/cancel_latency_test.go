package native

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rebound-go/rebound/internal/testenv"
)

// BenchmarkCancelLatency measures how long Queue.Cancel of a job a busy
// worker holds takes on the real Redis: the worker runs 20 handlers of 5ms
// jobs with 20 held ahead over a backlog, and each Cancel picks one of the
// jobs it holds (running or held ahead), so Cancel returns on the worker's
// confirmation. It reports the p50, p99 and max in microseconds.
//
//	go test ./adapters/native/ -run '^$' -bench CancelLatency -benchtime 200x
func BenchmarkCancelLatency(b *testing.B) {
	rdb := testenv.Redis(b)
	q := newQueue(b, rdb, testenv.Prefix(b, rdb), "cancel-latency")
	ctx := context.Background()
	startWorker(b, q, fixedRule(b, time.Second, 3), func(ctx context.Context, j *Job) error {
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	}, WithConcurrency(20), WithPrefetch(20), WithLease(30*time.Second))
	fill := func() {
		for {
			c, err := q.Counts(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if c.Waiting > 500 {
				return
			}
			if _, err := q.EnqueueMany(ctx, make([]EnqueueParams, 1000)); err != nil {
				b.Fatal(err)
			}
		}
	}
	fill()
	var took []time.Duration
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; b.Loop(); i++ {
		if i%50 == 0 {
			fill()
		}
		ids, err := rdb.ZRange(ctx, q.keys.active, 0, -1).Result()
		if err != nil || len(ids) == 0 {
			continue
		}
		id := ids[r.IntN(len(ids))]
		start := time.Now()
		if _, err := q.Cancel(ctx, id); err != nil {
			continue // it ended meanwhile
		}
		took = append(took, time.Since(start))
	}
	if len(took) == 0 {
		b.Fatal("no cancel found its job running")
	}
	slices.Sort(took)
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(took[len(took)/2]), "p50-us")
	b.ReportMetric(us(took[len(took)*99/100]), "p99-us")
	b.ReportMetric(us(took[len(took)-1]), "max-us")
	b.ReportMetric(float64(len(took)), "cancels")
}
