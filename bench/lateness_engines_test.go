package bench

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The lateness benchmarks of asynq and River (BenchmarkLateness) run the
// same experiment as BenchmarkNativeRetryLateness: every job fails its first
// attempt and succeeds on its retry under fixed(100ms) with MaxAttempts 2,
// with 32 workers, and the figure is how late the retry started against its
// computed time (end of the failed attempt + 100ms).

// latenessDelay is the fixed retry delay of every lateness benchmark.
const latenessDelay = 100 * time.Millisecond

// latenessConcurrency is the number of workers of every lateness benchmark.
const latenessConcurrency = 32

// latenessPolicy is the policy of every lateness benchmark, as text.
const latenessPolicy = "fixed(100ms)"

// A latenessLoad is one load of the lateness benchmarks: jobs first runs
// spread evenly over spread (the loads of BenchmarkNativeRetryLateness), or
// arriving batch at a time when batch is above 1.
type latenessLoad struct {
	name   string
	jobs   int
	spread time.Duration
	batch  int
}

// latenessLoads are the loads every engine is measured under.
var latenessLoads = []latenessLoad{
	{"idle", 200, 2 * time.Second, 1},
	{"inflight-10k", 10_000, 5 * time.Second, 1},
}

// riverQuiet is a load for River alone. River's fetcher also wakes when
// jobs are inserted (at most once per FetchCooldown), so under the loads
// above, where jobs keep arriving, its retries do not wait for the poll.
// Here 8 batches of 16 jobs arrive 1.13s apart and nothing else: each
// retry is found by a poll, as on a queue that receives nothing. The jobs
// of a batch fail together and share a poll, so the batches are the
// samples; their spacing is no multiple of the polls (1s, 50ms), so each
// batch meets the poll at another phase.
var riverQuiet = latenessLoad{"quiet", 128, 9040 * time.Millisecond, 16}

// latenessRecorder keeps, per job index, when its first attempt ended and
// when its retry started.
type latenessRecorder struct {
	ended, started []time.Time
	seen           []atomic.Bool
	left           atomic.Int64
	done           chan struct{}
	fail           chan error
}

func newLatenessRecorder(jobs int) *latenessRecorder {
	r := &latenessRecorder{
		ended:   make([]time.Time, jobs),
		started: make([]time.Time, jobs),
		seen:    make([]atomic.Bool, jobs),
		done:    make(chan struct{}),
		fail:    make(chan error, 1),
	}
	r.left.Store(int64(jobs))
	return r
}

// failed records the end of job i's first attempt; call it just before the
// handler returns its error.
func (r *latenessRecorder) failed(i int) { r.ended[i] = time.Now() }

// retried records the start of job i's retry; call it first thing in the
// handler. A repeated delivery of the same retry is ignored.
func (r *latenessRecorder) retried(i int) {
	now := time.Now()
	if r.seen[i].Swap(true) {
		return
	}
	r.started[i] = now
	if r.left.Add(-1) == 0 {
		close(r.done)
	}
}

// wait blocks until every job's retry started, or fails b after timeout.
func (r *latenessRecorder) wait(b *testing.B, timeout time.Duration) {
	b.Helper()
	select {
	case <-r.done:
	case err := <-r.fail:
		b.Fatalf("enqueue: %v", err)
	case <-time.After(timeout):
		b.Fatalf("%d of %d retries had not started after %s", r.left.Load(), len(r.ended), timeout)
	}
}

// report prints late-p50-ms, late-p99-ms, late-max-ms and early, computed as
// BenchmarkNativeRetryLateness computes them.
func (r *latenessRecorder) report(b *testing.B) {
	late := make([]time.Duration, len(r.ended))
	for i := range late {
		late[i] = r.started[i].Sub(r.ended[i]) - latenessDelay
	}
	reportLateness(b, late)
}

// reportLateness prints late-p50-ms, late-p99-ms, late-max-ms and early of
// the lateness of each retry (its start less the end of the failed attempt
// and the delay), computed as BenchmarkNativeRetryLateness computes them.
func reportLateness(b *testing.B, late []time.Duration) {
	late = slices.Clone(late)
	early := 0
	for _, l := range late {
		if l < 0 {
			early++
		}
	}
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(late[len(late)/2]), "late-p50-ms")
	b.ReportMetric(ms(late[len(late)*99/100]), "late-p99-ms")
	b.ReportMetric(ms(late[len(late)-1]), "late-max-ms")
	b.ReportMetric(float64(early), "early")
}

// arrive hands the jobs of load to enqueue on the schedule of the native
// benchmark's first runs (job i due at i*spread/jobs from now; with a batch
// above 1, each batch due when its first job is), checking every few
// milliseconds: enqueue(from, to) must enqueue jobs [from, to) to run at
// once. The peers get their jobs from this producer rather than
// from their own scheduled-job paths, which would bunch the first runs
// (asynq stores whole seconds, River's scheduler runs every 5s) and so give
// each engine a different load. It returns when every job is enqueued.
func arrive(ctx context.Context, load latenessLoad, enqueue func(from, to int) error) error {
	const tick = 5 * time.Millisecond
	step := load.spread / time.Duration(load.jobs)
	start := time.Now()
	t := time.NewTicker(tick)
	defer t.Stop()
	next := 0
	for next < load.jobs {
		due := int(time.Since(start)/step) + 1
		if load.batch > 1 {
			due = (due + load.batch - 1) / load.batch * load.batch
		}
		due = min(load.jobs, due)
		if due > next {
			if err := enqueue(next, due); err != nil {
				return err
			}
			next = due
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// produce runs arrive in the background for the recorder's jobs; wait
// fails at once if it stops with an error. It stops when b ends.
func (r *latenessRecorder) produce(b *testing.B, load latenessLoad, enqueue func(from, to int) error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := arrive(ctx, load, enqueue); err != nil && ctx.Err() == nil {
			r.fail <- err
		}
	}()
	b.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// BenchmarkLateness measures retry lateness on the peers through rebound's
// adapters, under the policy and loads of BenchmarkNativeRetryLateness:
//
//   - asynq/<intervals>-<mode>/<load>: asynq on a private redis-server, its
//     polling intervals at their defaults (DelayedTaskCheckInterval 5s,
//     TaskCheckInterval 1s) or both at 100ms, with the adapter rounding
//     fire times up to whole seconds (round) or holding early deliveries
//     until their exact time (precise, reboundasynq.WithPrecise).
//   - river/<poll>/<load>: River on the real PostgreSQL with its default
//     fetch settings (FetchPollInterval 1s, FetchCooldown 100ms) or both at
//     50ms. River also runs a quiet load (see riverQuiet).
//   - bullmq/<load>: BullMQ (attempts 2, backoff fixed) on a private
//     redis-server, through bench/bullmq/bench.js on Node, which runs the
//     same producer schedule itself (one addBulk per 5ms tick).
//
// Jobs reach the engines from a producer on the schedule of the native
// benchmark's first runs (see arrive).
//
// Metrics: late-p50-ms, late-p99-ms, late-max-ms and early (retries that
// started before their time; must be 0).
func BenchmarkLateness(b *testing.B) {
	for _, iv := range asynqLatenessIntervals {
		for _, precise := range []bool{false, true} {
			mode := "round"
			if precise {
				mode = "precise"
			}
			for _, load := range latenessLoads {
				b.Run("asynq/"+iv.name+"-"+mode+"/"+load.name, func(b *testing.B) {
					for b.Loop() {
						benchLatenessAsynq(b, iv, precise, load)
					}
				})
			}
		}
	}
	for _, p := range riverLatenessPolls {
		for _, load := range append(slices.Clip(latenessLoads), riverQuiet) {
			b.Run("river/"+p.name+"/"+load.name, func(b *testing.B) {
				for b.Loop() {
					benchLatenessRiver(b, p, load)
				}
			})
		}
	}
	for _, load := range latenessLoads {
		b.Run("bullmq/"+load.name, func(b *testing.B) {
			for b.Loop() {
				benchLatenessBullMQ(b, load)
			}
		})
	}
}
