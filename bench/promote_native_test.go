package bench

import (
	"context"
	"testing"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/internal/testenv"
)

// promoteJobs is how many delayed jobs fall due at once.
const promoteJobs = 100_000

// BenchmarkPromotion measures the native due-sweep: promoteJobs jobs sit in
// the delayed set, all due, with no worker running; the timed part calls
// Queue.Promote (the same Lua sweep a worker runs before each fetch, up to
// 1000 jobs a call) until every job is on the due list. promoted/s is jobs
// over that time.
func BenchmarkPromotion(b *testing.B) {
	b.Run("native", func(b *testing.B) {
		ctx := context.Background()
		rdb := privateRedis(b)
		for b.Loop() {
			b.StopTimer()
			q, err := native.NewQueue(rdb, "promote", native.WithPrefix(testenv.Prefix(b, rdb)))
			if err != nil {
				b.Fatal(err)
			}
			if err := parallel(promoteJobs, 32, func(int) error {
				_, err := q.Enqueue(ctx, []byte("x"), native.WithDelay(time.Millisecond))
				return err
			}); err != nil {
				b.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond) // the last one is due too
			c, err := q.Counts(ctx)
			if err != nil || c.Delayed != promoteJobs {
				b.Fatalf("%d delayed before the sweep (err %v), want %d", c.Delayed, err, promoteJobs)
			}
			b.StartTimer()
			start := time.Now()
			moved := 0
			for moved < promoteJobs {
				n, err := q.Promote(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if n == 0 {
					b.Fatalf("the sweep stopped after %d of %d jobs", moved, promoteJobs)
				}
				moved += n
			}
			elapsed := time.Since(start)
			b.StopTimer()
			c, err = q.Counts(ctx)
			if err != nil || c.Waiting != promoteJobs || c.Delayed != 0 {
				b.Fatalf("after the sweep %+v (err %v), want all %d waiting", c, err, promoteJobs)
			}
			b.ReportMetric(float64(moved)/elapsed.Seconds(), "promoted/s")
			b.ReportMetric(promoteJobs, "jobs")
			b.StartTimer()
		}
	})
}
