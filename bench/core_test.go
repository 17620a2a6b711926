// Package bench measures rebound beside the retry libraries and job engines
// it replaces. It is a package of its own so that none of those peers ever
// becomes an import of package backoff.
package bench

import (
	"errors"
	"math"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	cenkalti "github.com/cenkalti/backoff/v5"
	"github.com/hibiken/asynq"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	goretry "github.com/sethvargo/go-retry"

	"github.com/rebound-go/rebound/backoff"
)

// The core benchmarks compare one delay computation per op. rebound is a pure
// function of the attempt, so each op asks for attempt (i mod 16)+1, which
// covers both the growing part of a curve and the capped part. The peers are
// stateful iterators: cenkalti is Reset every 16 calls (Reset is a field
// store), so it walks the same 16 steps; go-retry has no Reset (a fresh
// backoff allocates), so it runs on from its first call and spends most ops
// on the capped part, its cheapest path.
//
// Every library is called through the interface its own consumers use
// (backoff.Delay over a Policy, cenkalti.BackOff, goretry.Backoff, asynq's
// RetryDelayFunc, river.ClientRetryPolicy), held in package variables the
// compiler cannot see through.

const cycle = 16

// cpuTimer adds a cpu-ns/op metric beside ns/op: the CPU time the
// benchmark's own thread (serial) or process (parallel) spent per op. On a
// machine shared with other work, wall-clock ns/op grows with the load while
// CPU time does not, so cpu-ns/op is the steadier base for ratios.
type cpuTimer struct {
	clock  int
	start  int64
	ok     bool
	locked bool
}

// startCPU starts a thread-CPU timer and pins the goroutine to its thread
// until stop.
func startCPU() cpuTimer {
	runtime.LockOSThread()
	t := cpuTimer{clock: clockThreadCPUTime, locked: true}
	t.start, t.ok = cpuClock(t.clock)
	return t
}

// startProcessCPU starts a process-CPU timer, for RunParallel.
func startProcessCPU() cpuTimer {
	t := cpuTimer{clock: clockProcessCPUTime}
	t.start, t.ok = cpuClock(t.clock)
	return t
}

func (t cpuTimer) stop(b *testing.B) {
	end, ok := cpuClock(t.clock)
	if t.locked {
		runtime.UnlockOSThread()
	}
	if t.ok && ok && b.N > 0 {
		b.ReportMetric(float64(end-t.start)/float64(b.N), "cpu-ns/op")
	}
}

var (
	sinkDuration time.Duration
	sinkTime     time.Time
	sinkParallel atomic.Int64
	errFailed    = errors.New("failed")
)

// Policies under test. base 100ms and cap 10s are the seeds' numbers.
const (
	base    = 100 * time.Millisecond
	ceiling = 10 * time.Second
)

var (
	reboundFixed        backoff.Policy = backoff.Must(backoff.Fixed(time.Second))
	reboundExponential  backoff.Policy = backoff.Must(backoff.Exponential(base, ceiling))
	reboundLinear       backoff.Policy = backoff.Must(backoff.Linear(base, base, ceiling))
	reboundJitter       backoff.Policy = backoff.Must(backoff.Jitter(reboundExponential))
	reboundEqual        backoff.Policy = backoff.Must(backoff.EqualJitter(reboundExponential))
	reboundProportional backoff.Policy = backoff.Must(backoff.Proportional(0.5, reboundExponential))
	reboundDecorrelated backoff.Policy = backoff.Must(backoff.Decorrelated(base, ceiling))
	// reboundEngineDefault is what a rebound user puts where an engine's
	// default was: a capped exponential with River's +-10% spread.
	reboundEngineDefault backoff.Policy = backoff.Must(backoff.Proportional(0.1,
		backoff.Must(backoff.Exponential(time.Second, 24*time.Hour))))

	jobKey = backoff.Key("0190f3a2-7c1e-7d4b-9a51-3f6c2e8b1d47")
)

func reboundBench(p backoff.Policy, src backoff.Source) func(*testing.B) {
	return func(b *testing.B) { runRebound(b, p, src) }
}

// runRebound is a named, never-inlined function so that the compiler
// inlines backoff.Delay into its loop, as it does at an adapter's call site
// (inside a closure copied by inlining it would not).
//
//go:noinline
func runRebound(b *testing.B, p backoff.Policy, src backoff.Source) {
	b.ReportAllocs()
	var d time.Duration
	cpu := startCPU()
	for i := 0; b.Loop(); i++ {
		d += backoff.Delay(p, i%cycle+1, src)
	}
	cpu.stop(b)
	sinkDuration = d
}

func reboundParallel(p backoff.Policy, src backoff.Source) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		cpu := startProcessCPU()
		b.RunParallel(func(pb *testing.PB) {
			var d time.Duration
			for i := 0; pb.Next(); i++ {
				d += backoff.Delay(p, i%cycle+1, src)
			}
			sinkParallel.Add(int64(d))
		})
		cpu.stop(b)
	}
}

func cenkaltiBench(newB func() cenkalti.BackOff) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		bo := newB()
		bo.Reset()
		var d time.Duration
		cpu := startCPU()
		for i := 0; b.Loop(); i++ {
			if i%cycle == 0 {
				bo.Reset()
			}
			d += bo.NextBackOff()
		}
		cpu.stop(b)
		sinkDuration = d
	}
}

func goretryBench(newB func() goretry.Backoff) func(*testing.B) {
	return func(b *testing.B) {
		b.ReportAllocs()
		bo := newB()
		var d time.Duration
		cpu := startCPU()
		for b.Loop() {
			v, _ := bo.Next()
			d += v
		}
		cpu.stop(b)
		sinkDuration = d
	}
}

func cenkaltiExponential(factor float64) func() cenkalti.BackOff {
	return func() cenkalti.BackOff {
		return &cenkalti.ExponentialBackOff{
			InitialInterval:     base,
			RandomizationFactor: factor,
			Multiplier:          2,
			MaxInterval:         ceiling,
		}
	}
}

func goretryExponential() goretry.Backoff {
	return goretry.WithCappedDuration(ceiling, goretry.NewExponential(base))
}

// asynqDefault and riverDefault are the engines' own defaults, held behind
// the hook types the engines call them through.
var (
	asynqDefault func(int, error, *asynq.Task) time.Duration = asynq.DefaultRetryDelayFunc
	riverDefault river.ClientRetryPolicy                     = &river.DefaultClientRetryPolicy{}
	asynqTask                                                = asynq.NewTask("email:send", nil)
)

func BenchmarkDelay(b *testing.B) {
	var keyless backoff.Source

	// fixed: the same delay every attempt.
	b.Run("fixed/rebound", reboundBench(reboundFixed, keyless))
	b.Run("fixed/cenkalti", cenkaltiBench(func() cenkalti.BackOff {
		return cenkalti.NewConstantBackOff(time.Second)
	}))
	b.Run("fixed/go-retry", goretryBench(func() goretry.Backoff { return goretry.NewConstant(time.Second) }))

	// exponential: min(100ms * 2^(n-1), 10s), no jitter.
	b.Run("exponential/rebound", reboundBench(reboundExponential, keyless))
	b.Run("exponential/cenkalti", cenkaltiBench(cenkaltiExponential(0)))
	b.Run("exponential/go-retry", goretryBench(goretryExponential))

	// linear: min(100ms + 100ms*(n-1), 10s). No peer has it.
	b.Run("linear/rebound", reboundBench(reboundLinear, keyless))

	// full jitter over the capped exponential: uniform in [0, d].
	b.Run("full-jitter/rebound", reboundBench(reboundJitter, keyless))
	b.Run("full-jitter/rebound-keyed", reboundBench(reboundJitter, jobKey))
	b.Run("full-jitter/go-retry", goretryBench(func() goretry.Backoff {
		return goretry.WithFullJitter(goretryExponential())
	}))

	// proportional jitter of +-50% over the capped exponential.
	b.Run("proportional/rebound", reboundBench(reboundProportional, keyless))
	b.Run("proportional/rebound-keyed", reboundBench(reboundProportional, jobKey))
	b.Run("proportional/cenkalti", cenkaltiBench(cenkaltiExponential(0.5)))
	b.Run("proportional/go-retry", goretryBench(func() goretry.Backoff {
		return goretry.WithJitterPercent(50, goretryExponential())
	}))

	// equal and decorrelated jitter. No peer has them.
	b.Run("equal-jitter/rebound", reboundBench(reboundEqual, keyless))
	b.Run("equal-jitter/rebound-keyed", reboundBench(reboundEqual, jobKey))
	b.Run("decorrelated/rebound", reboundBench(reboundDecorrelated, keyless))
	b.Run("decorrelated/rebound-keyed", reboundBench(reboundDecorrelated, jobKey))

	// engine-default: each engine's own default hook beside the policy a
	// rebound adapter computes in its place. rebound-keyed+hash also hashes
	// the job ID each call, as an adapter does.
	b.Run("engine-default/rebound-keyed", reboundBench(reboundEngineDefault, jobKey))
	b.Run("engine-default/rebound-keyed+hash", func(b *testing.B) {
		b.ReportAllocs()
		var d time.Duration
		cpu := startCPU()
		for i := 0; b.Loop(); i++ {
			d += backoff.Delay(reboundEngineDefault, i%cycle+1, backoff.Key("0190f3a2-7c1e-7d4b-9a51-3f6c2e8b1d47"))
		}
		cpu.stop(b)
		sinkDuration = d
	})
	b.Run("engine-default/asynq", func(b *testing.B) {
		b.ReportAllocs()
		var d time.Duration
		cpu := startCPU()
		for i := 0; b.Loop(); i++ {
			d += asynqDefault(i%cycle, errFailed, asynqTask) // asynq counts retries from 0
		}
		cpu.stop(b)
		sinkDuration = d
	})
	b.Run("engine-default/river", func(b *testing.B) {
		b.ReportAllocs()
		jobs := make([]*rivertype.JobRow, cycle)
		for i := range jobs {
			jobs[i] = &rivertype.JobRow{ID: 1, Attempt: i + 1, Errors: make([]rivertype.AttemptError, i)}
		}
		var t time.Time
		cpu := startCPU()
		for i := 0; b.Loop(); i++ {
			t = riverDefault.NextRetry(jobs[i%cycle])
		}
		cpu.stop(b)
		sinkTime = t
	})
}

// BenchmarkDelayParallel runs the core policies on every P at once. The
// per-op time should match the serial one divided by GOMAXPROCS: the core
// holds no lock and shares no mutable state, keyed or not.
func BenchmarkDelayParallel(b *testing.B) {
	var keyless backoff.Source
	b.Run("exponential/rebound", reboundParallel(reboundExponential, keyless))
	b.Run("full-jitter/rebound", reboundParallel(reboundJitter, keyless))
	b.Run("full-jitter/rebound-keyed", reboundParallel(reboundJitter, jobKey))
	b.Run("proportional/rebound", reboundParallel(reboundProportional, keyless))
	b.Run("proportional/rebound-keyed", reboundParallel(reboundProportional, jobKey))
	b.Run("full-jitter/go-retry", func(b *testing.B) {
		b.ReportAllocs()
		// go-retry's backoffs are shared iterators; one is shared by all Ps,
		// the way its Do loop would share it.
		bo := goretry.WithFullJitter(goretryExponential())
		cpu := startProcessCPU()
		b.RunParallel(func(pb *testing.PB) {
			var d time.Duration
			for pb.Next() {
				v, _ := bo.Next()
				d += v
			}
			sinkParallel.Add(int64(d))
		})
		cpu.stop(b)
	})
}

// BenchmarkDecorrelatedLate times decorrelated jitter at late attempts, where
// the stateless replay of the recurrence has the most to do, for the seeds'
// (100ms, 10s) and a wide (10ms, 1h). Each op takes the next of 256 job keys,
// since how far a replay runs depends on the job's draws. No peer has the
// policy; the figures compare rebound with itself across changes.
func BenchmarkDecorrelatedLate(b *testing.B) {
	var keys [256]backoff.Source
	for i := range keys {
		keys[i] = backoff.KeyUint64(uint64(i))
	}
	wide := backoff.Must(backoff.Decorrelated(10*time.Millisecond, time.Hour))
	for _, c := range []struct {
		name string
		p    backoff.Policy
	}{{"100ms-10s", reboundDecorrelated}, {"10ms-1h", wide}} {
		for _, attempt := range []int{16, 33, 100, 1000, math.MaxInt} {
			name := c.name + "/attempt-" + strconv.Itoa(attempt)
			if attempt == math.MaxInt {
				name = c.name + "/attempt-maxint"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				var d time.Duration
				cpu := startCPU()
				for i := 0; b.Loop(); i++ {
					d += backoff.Delay(c.p, attempt, keys[i%len(keys)])
				}
				cpu.stop(b)
				sinkDuration = d
			})
		}
	}
}
