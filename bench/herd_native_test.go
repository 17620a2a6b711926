package bench

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
)

const (
	// herdJobs is the cohort that fails together.
	herdJobs = 10_000
	// herdBucket is the histogram's bucket width.
	herdBucket = 10 * time.Millisecond
)

// BenchmarkHerd sends a cohort of herdJobs jobs through the native queue on
// the real Redis; each fails on its first run and succeeds on its retry.
// Each job's failure is its own time zero (the cohort "fails together"),
// and its re-fire offset is when the retry started after it. The offsets
// are bucketed in 10 ms over the policy's window (1s): peak/uniform is the
// fullest bucket over herdJobs/buckets, the count a perfectly even spread
// would put in each. ideal is the same statistic for the delays the policy
// computed, before the queue had any say: the gap between the two is what
// the queue re-clumped. late-p99-ms is how late retries started against
// their computed time; early counts retries that started before it.
func BenchmarkHerd(b *testing.B) {
	for _, c := range []struct{ name, policy string }{
		{"native/no-jitter", "exponential(1s, 10s)"},
		{"native/full-jitter", "jitter(exponential(1s, 10s))"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				benchHerdNative(b, c.policy)
			}
		})
	}
}

func benchHerdNative(b *testing.B, spec string) {
	ctx := context.Background()
	rdb := privateRedis(b)
	policy, rule := mustRule(b, spec, 2)
	q, err := native.NewQueue(rdb, "herd", native.WithPrefix(testenv.Prefix(b, rdb)))
	if err != nil {
		b.Fatal(err)
	}
	var (
		mu     sync.Mutex
		failed = make(map[string]time.Time, herdJobs)
		offset = make([]time.Duration, 0, herdJobs)
		late   = make([]time.Duration, 0, herdJobs)
		ideal  = make([]time.Duration, 0, herdJobs)
		done   = make(chan struct{})
	)
	handler := func(_ context.Context, j *native.Job) error {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if j.Attempt == 1 {
			failed[j.ID] = now
			return errDependencyDown
		}
		d := backoff.Delay(policy, 1, backoff.Key(j.ID))
		off := now.Sub(failed[j.ID])
		offset = append(offset, off)
		late = append(late, off-d)
		ideal = append(ideal, d)
		if len(offset) == herdJobs {
			close(done)
		}
		return nil
	}
	if err := parallel(herdJobs, 32, func(int) error {
		_, err := q.Enqueue(ctx, []byte("x"))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	w, err := native.NewWorker(q, rule, handler, native.WithConcurrency(100),
		native.WithErrorHandler(func(err error) { b.Logf("worker: %v", err) }))
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		b.Fatalf("only %d of %d retries ran", len(offset), herdJobs)
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_ = w.Shutdown(sctx)

	window := policy.Max()
	if inner, ok := policy.(backoff.FullJitterPolicy); ok {
		window = inner.Inner().Max()
	}
	window = min(window, time.Second)
	b.ReportMetric(peakOverUniform(offset, window), "peak/uniform")
	b.ReportMetric(peakOverUniform(ideal, window), "ideal")
	slices.Sort(late)
	b.ReportMetric(float64(late[len(late)*99/100])/1e6, "late-p99-ms")
	early := 0
	for _, l := range late {
		if l < 0 {
			early++
		}
	}
	b.ReportMetric(float64(early), "early")
	b.ReportMetric(herdJobs, "jobs")
}

// peakOverUniform buckets the offsets by herdBucket and returns the fullest
// bucket over the even share of a window of the given width.
func peakOverUniform(offsets []time.Duration, window time.Duration) float64 {
	counts := map[int64]int{}
	peak := 0
	for _, o := range offsets {
		k := int64(o / herdBucket)
		counts[k]++
		peak = max(peak, counts[k])
	}
	buckets := float64(window / herdBucket)
	return float64(peak) / (float64(len(offsets)) / buckets)
}
