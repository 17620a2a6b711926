package backoff_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// TestPropertyRange: every delay of every random policy tree, for every
// probed attempt (math.MaxInt and values below 1 included), keyed or not,
// lies in [0, Max()], whether asked through Delay or the method itself.
func TestPropertyRange(t *testing.T) {
	r := newRand(3, 4)
	for i := range 3000 {
		p := randPolicy(r, 3)
		m := p.Max()
		if m < 0 {
			t.Fatalf("%v: Max() = %v, negative", p, m)
		}
		srcs := []backoff.Source{{}, backoff.KeyUint64(r.Uint64()), backoff.Key(fmt.Sprint(i))}
		for _, a := range attemptsToProbe(r) {
			for _, src := range srcs {
				if d := backoff.Delay(p, a, src); d < 0 || d > m {
					t.Fatalf("%v at attempt %d (%+v) = %v, outside [0, %v]", p, a, src, d, m)
				}
				if d := p.Delay(a, src); d < 0 || d > m {
					t.Fatalf("%v.Delay(%d) = %v, outside [0, %v]", p, a, d, m)
				}
			}
		}
	}
}

// TestPropertyMonotone: fixed, exponential and linear never shrink from one
// attempt to the next, over the curve and out to math.MaxInt.
func TestPropertyMonotone(t *testing.T) {
	r := newRand(5, 6)
	for range 3000 {
		var p backoff.Policy
		switch r.IntN(3) {
		case 0:
			p = backoff.Must(backoff.Fixed(randDuration(r)))
		case 1:
			base, cap := orderedPositive(r)
			p = backoff.Must(backoff.Exponential(base, cap))
		default:
			base, cap := randDuration(r), randDuration(r)
			if cap < base {
				base, cap = cap, base
			}
			p = backoff.Must(backoff.Linear(base, randDuration(r), cap))
		}
		prev := time.Duration(-1)
		attempts := []int{1, 2, 3, 10, 30, 61, 62, 63, 64, 65, 100, 1 << 20, math.MaxInt32}
		if shift := 40; strconv.IntSize == 64 { // 1 << 40, written so that it compiles for GOARCH=386
			attempts = append(attempts, 1<<shift)
		}
		for _, a := range append(attempts, math.MaxInt-1, math.MaxInt) {
			d := backoff.Delay(p, a, backoff.Source{})
			if d < prev {
				t.Fatalf("%v: attempt %d gives %v, below the previous %v", p, a, d, prev)
			}
			prev = d
		}
		if prev != p.Max() {
			t.Fatalf("%v: at math.MaxInt the delay is %v, want the cap %v", p, prev, p.Max())
		}
	}
}

// TestPropertyWrapperWindows checks each wrapper's delay against the window
// its definition gives around the inner delay, drawn with the same key.
func TestPropertyWrapperWindows(t *testing.T) {
	r := newRand(7, 8)
	for range 2000 {
		inner := randPolicy(r, 1)
		key := r.Uint64()
		// The wrappers hand the inner policy a derived source, so the inner
		// delay they saw is not Delay(inner, a, key) for a jittered inner;
		// use an unjittered inner to know it exactly.
		switch inner.(type) {
		case backoff.FullJitterPolicy, backoff.EqualJitterPolicy, backoff.ProportionalPolicy, backoff.DecorrelatedPolicy:
			continue
		}
		full := backoff.Must(backoff.Jitter(inner))
		equal := backoff.Must(backoff.EqualJitter(inner))
		f := r.Float64()
		if f == 0 {
			f = 1
		}
		prop := backoff.Must(backoff.Proportional(f, inner))
		for _, a := range attemptsToProbe(r) {
			src := backoff.KeyUint64(key)
			d := backoff.Delay(inner, a, src)
			if got := backoff.Delay(full, a, src); got < 0 || got > d {
				t.Fatalf("%v at %d = %v, outside [0, %v]", full, a, got, d)
			}
			if got := backoff.Delay(equal, a, src); got < d/2 || got > d {
				t.Fatalf("%v at %d = %v, outside [%v, %v]", equal, a, got, d/2, d)
			}
			spread := time.Duration(float64(d) * f)
			if f == 1 || spread > d {
				spread = d
			}
			lo, hi := d-spread, min(d+spread, inner.Max())
			if d+spread < d { // overflow: the window's top is the inner max
				hi = inner.Max()
			}
			if got := backoff.Delay(prop, a, src); got < lo || got > hi {
				t.Fatalf("%v at %d = %v, outside [%v, %v] around %v", prop, a, got, lo, hi, d)
			}
		}
	}
}

// TestPropertyDecorrelatedChain: every decorrelated delay is in [base, cap],
// and a keyed chain follows the recurrence, past attempt 32 too:
// Delay(n) is in [base, min(cap, 3*Delay(n-1))].
func TestPropertyDecorrelatedChain(t *testing.T) {
	r := newRand(9, 10)
	for range 2000 {
		base, cap := orderedPositive(r)
		if r.IntN(2) == 0 { // also ordinary ratios, where the chain wanders
			base, cap = time.Duration(1+r.Int64N(int64(time.Second))), time.Duration(1+r.Int64N(int64(time.Hour)))
			if cap < base {
				base, cap = cap, base
			}
		}
		p := backoff.Must(backoff.Decorrelated(base, cap))
		src := backoff.KeyUint64(r.Uint64())
		prev := base
		for a := 1; a <= 100; a++ {
			d := backoff.Delay(p, a, src)
			hi := cap
			if prev <= math.MaxInt64/3 {
				hi = min(cap, 3*prev)
			}
			if d < base || d > hi {
				t.Fatalf("%v at %d = %v, outside [%v, %v] after %v", p, a, d, base, hi, prev)
			}
			prev = d
		}
		for _, a := range attemptsToProbe(r) {
			if d := backoff.Delay(p, a, src); d < base || d > cap {
				t.Fatalf("%v at %d = %v, outside [%v, %v]", p, a, d, base, cap)
			}
		}
	}
}

// TestPropertyKeyedDeterminism: the same policy, key and attempt give the
// same delay, also for a policy rebuilt from its text (another process would
// do exactly that).
func TestPropertyKeyedDeterminism(t *testing.T) {
	r := newRand(11, 12)
	for i := range 2000 {
		p := randPolicy(r, 3)
		q, err := backoff.Parse(p.String())
		if err != nil {
			t.Fatalf("Parse(%q): %v", p, err)
		}
		key := fmt.Sprintf("job-%d", i)
		for _, a := range attemptsToProbe(r) {
			d1 := backoff.Delay(p, a, backoff.Key(key))
			d2 := backoff.Delay(p, a, backoff.Key(key))
			d3 := backoff.Delay(q, a, backoff.Key(key))
			if d1 != d2 || d1 != d3 {
				t.Fatalf("%v at %d with key %q: %v, %v, then %v from the parsed copy", p, a, key, d1, d2, d3)
			}
			// The method and the dispatching function take different code
			// paths to the same value; so does a Spec holding the policy.
			if d4, d5 := p.Delay(a, backoff.Key(key)), backoff.Delay(backoff.Spec{Policy: p}, a, backoff.Key(key)); d4 != d1 || d5 != d1 {
				t.Fatalf("%v at %d with key %q: Delay %v, method %v, Spec %v", p, a, key, d1, d4, d5)
			}
		}
	}
}

// TestKeyedValuesPinned pins a few keyed draws, so a change to the hashing or
// the mapping, which would move every job's schedule, cannot pass unnoticed.
func TestKeyedValuesPinned(t *testing.T) {
	p := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))))
	tests := []struct {
		src     backoff.Source
		attempt int
		want    time.Duration
	}{
		{backoff.Key("job-42"), 1, 55411596},
		{backoff.Key("job-42"), 3, 210891521},
		{backoff.Key("job-42"), 20, 2591099479},
		{backoff.KeyUint64(42), 3, 144495694},
	}
	for _, tt := range tests {
		if got := backoff.Delay(p, tt.attempt, tt.src); got != tt.want {
			t.Errorf("%v at %d = %d, want %d", p, tt.attempt, got, tt.want)
		}
	}
}

// TestKeysSpread: over many keys, a keyed full jitter covers its window
// evenly: every tenth of [0, d] gets close to a tenth of the draws, and
// nearly every key gets its own delay.
func TestKeysSpread(t *testing.T) {
	p := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))))
	const n = 10000
	const d = 1600 * time.Millisecond // attempt 5
	var buckets [10]int
	seen := make(map[time.Duration]bool, n)
	for i := range n {
		got := backoff.Delay(p, 5, backoff.Key(fmt.Sprint(i)))
		buckets[min(int(got*10/d), 9)]++
		seen[got] = true
	}
	for i, c := range buckets {
		if c < n/10*85/100 || c > n/10*115/100 {
			t.Errorf("bucket %d of [0, %v] holds %d of %d keyed draws, want about %d", i, d, c, n, n/10)
		}
	}
	if len(seen) < n*99/100 {
		t.Errorf("%d keys gave only %d distinct delays", n, len(seen))
	}
	// Numeric keys spread as well as strings, and neighbouring attempts of
	// one key are not correlated: the draws for attempt 5 and 6 of the same
	// key must not move together.
	var sameSide int
	for i := range n {
		a := backoff.Delay(p, 5, backoff.KeyUint64(uint64(i)))
		b := backoff.Delay(p, 6, backoff.KeyUint64(uint64(i)))
		if (a > d/2) == (b > 2*d/2) {
			sameSide++
		}
	}
	if sameSide < n*45/100 || sameSide > n*55/100 {
		t.Errorf("attempts 5 and 6 of one key fall on the same side of their means %d of %d times, want about half", sameSide, n)
	}
}

// TestNestedWrappersDrawIndependently: jitter(jitter(fixed(1s))) must draw
// two independent uniforms, u*v with mean 1/4 s. Reusing one draw would
// give u*u, mean 1/3 s. Likewise for the other wrappers stacked.
func TestNestedWrappersDrawIndependently(t *testing.T) {
	one := backoff.Must(backoff.Fixed(time.Second))
	jj := backoff.Must(backoff.Jitter(backoff.Must(backoff.Jitter(one))))
	const n = 20000
	var sum float64
	for i := range n {
		sum += backoff.Delay(jj, 1, backoff.KeyUint64(uint64(i))).Seconds()
	}
	if mean := sum / n; math.Abs(mean-0.25) > 0.01 {
		t.Errorf("mean of %v over %d keys = %.4fs, want 0.25s (independent draws)", jj, n, mean)
	}

	// The same in the unkeyed path.
	sum = 0
	for range n {
		sum += backoff.Delay(jj, 1, backoff.Source{}).Seconds()
	}
	if mean := sum / n; math.Abs(mean-0.25) > 0.01 {
		t.Errorf("unkeyed mean of %v = %.4fs, want 0.25s", jj, mean)
	}

	// equal(jitter(fixed(1s))): with independent draws u (inner) and v
	// (outer) the delay is u/2 + v*u/2, mean 3/8 s; a shared draw gives
	// u/2 + u*u/2, mean 5/12 s. proportional(1, jitter(fixed(1s))) is
	// uniform in [0, min(2u, 1s)]: mean 3/8 s independent, 11/24 s shared.
	for _, p := range []backoff.Policy{
		backoff.Must(backoff.EqualJitter(backoff.Must(backoff.Jitter(one)))),
		backoff.Must(backoff.Proportional(1, backoff.Must(backoff.Jitter(one)))),
	} {
		sum = 0
		for i := range n {
			sum += backoff.Delay(p, 1, backoff.KeyUint64(uint64(i))).Seconds()
		}
		if mean := sum / n; math.Abs(mean-0.375) > 0.01 {
			t.Errorf("mean of %v over %d keys = %.4fs, want 0.375s (independent draws)", p, n, mean)
		}
	}
}

// TestUnkeyedVaries: without a key the draws are fresh each call.
func TestUnkeyedVaries(t *testing.T) {
	p := backoff.Must(backoff.Jitter(backoff.Must(backoff.Fixed(time.Hour))))
	seen := map[time.Duration]bool{}
	for range 100 {
		seen[backoff.Delay(p, 1, backoff.Source{})] = true
	}
	if len(seen) < 95 {
		t.Errorf("100 unkeyed draws over an hour gave %d distinct values", len(seen))
	}
	if (backoff.Source{}).Keyed() || !backoff.Key("a").Keyed() || !backoff.KeyUint64(0).Keyed() {
		t.Error("Keyed() is wrong")
	}
}

// TestConcurrentUse runs keyed and unkeyed draws from many goroutines at
// once; under -race it proves the core shares no mutable state, and keyed
// results must equal the serial ones.
func TestConcurrentUse(t *testing.T) {
	r := newRand(13, 14)
	policies := make([]backoff.Policy, 50)
	for i := range policies {
		policies[i] = randPolicy(r, 2)
	}
	want := make([][]time.Duration, len(policies))
	for i, p := range policies {
		for a := 1; a <= 40; a++ {
			want[i] = append(want[i], backoff.Delay(p, a, backoff.Key(fmt.Sprint(i))))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			for i, p := range policies {
				for a := 1; a <= 40; a++ {
					if got := backoff.Delay(p, a, backoff.Key(fmt.Sprint(i))); got != want[i][a-1] {
						errs <- fmt.Sprintf("%v at %d: %v concurrently, %v serially", p, a, got, want[i][a-1])
						return
					}
					_ = backoff.Delay(p, a, backoff.Source{})
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestPropertyDecorrelatedMatchesSimulation: at every attempt, decorrelated
// jitter over many job keys has the distribution of the stateful recurrence
// min(cap, uniform(base, 3*prev)), prev = base at first, run by an
// independent simulation in floating point on its own generator. The
// empirical distribution functions are compared at the simulation's
// deciles; they must agree within 0.04 (a few standard errors for 4000
// samples each; a stateless shortcut off by a factor at some attempt misses
// by far more).
func TestPropertyDecorrelatedMatchesSimulation(t *testing.T) {
	const n = 4000
	attempts := []int{1, 2, 10, 32, 33, 50, 100, 200, 1000}
	last := attempts[len(attempts)-1]
	for ci, c := range []struct{ base, cap time.Duration }{
		{100 * time.Millisecond, time.Second},      // ratio 10
		{100 * time.Millisecond, 10 * time.Second}, // the seeds' numbers
		{10 * time.Millisecond, 10 * time.Second},  // 1e3
		{10 * time.Millisecond, time.Hour},         // 3.6e5, the example of issue 13
		{time.Millisecond, 1000 * time.Second},     // 1e6
	} {
		p := backoff.Must(backoff.Decorrelated(c.base, c.cap))
		// sim[j][i] is chain i's delay at attempts[j].
		r := newRand(17, uint64(ci))
		sim := make([][]float64, len(attempts))
		for j := range sim {
			sim[j] = make([]float64, n)
		}
		base, cp := float64(c.base), float64(c.cap)
		for i := range n {
			prev, j := base, 0
			for a := 1; a <= last; a++ {
				prev = min(cp, base+r.Float64()*(3*prev-base))
				if a == attempts[j] {
					sim[j][i] = prev
					j++
				}
			}
		}
		for j, a := range attempts {
			got := make([]float64, n)
			for i := range got {
				got[i] = float64(backoff.Delay(p, a, backoff.KeyUint64(uint64(i))))
			}
			slices.Sort(got)
			slices.Sort(sim[j])
			for q := 1; q <= 9; q++ {
				x := sim[j][q*n/10]
				fs, fg := cdf(sim[j], x), cdf(got, x)
				if math.Abs(fs-fg) > 0.04 {
					t.Errorf("%v at attempt %d: %.1f%% of keys are at most %v, %.1f%% of simulated chains (medians %v keyed, %v simulated)",
						p, a, 100*fg, time.Duration(x), 100*fs, time.Duration(got[n/2]), time.Duration(sim[j][n/2]))
					break
				}
			}
		}
	}
}

// cdf returns the fraction of the sorted sample xs that is at most x.
func cdf(xs []float64, x float64) float64 {
	i, _ := slices.BinarySearchFunc(xs, x, func(e, t float64) int {
		if e <= t {
			return -1
		}
		return 1
	})
	return float64(i) / float64(len(xs))
}

// TestPropertyDecorrelatedReachesCap: where the cap is above a third of the
// largest Duration, so that 3*prev no longer fits in one, the recurrence
// still draws from all of [base, 3*prev]: the share of keys whose delay is
// the cap matches an independent floating-point simulation of min(cap,
// uniform(base, 3*prev)) on its own generator. For decorrelated(1ns, max
// Duration) at attempt 5000 that share is about 17.6%; a draw whose top is
// cut to the largest Duration never reaches the cap (0%).
func TestPropertyDecorrelatedReachesCap(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 2000
	}
	const attempt = 5000
	for ci, c := range []struct{ base, cap time.Duration }{
		{1, math.MaxInt64},
		{1, math.MaxInt64/3*2 + 1},
		{time.Second, math.MaxInt64 / 2},
	} {
		p := backoff.Must(backoff.Decorrelated(c.base, c.cap))
		atCap := 0
		for i := range n {
			if backoff.Delay(p, attempt, backoff.KeyUint64(uint64(i))) == c.cap {
				atCap++
			}
		}
		r := newRand(23, uint64(ci))
		base, cp := float64(c.base), float64(c.cap)
		simCap := 0
		for range n {
			prev := base
			for range attempt {
				prev = min(cp, base+r.Float64()*(3*prev-base))
			}
			if prev >= cp {
				simCap++
			}
		}
		got, want := float64(atCap)/float64(n), float64(simCap)/float64(n)
		// Two samples of n: the difference has a standard error of about
		// 0.0054 at n = 10000 and p = 0.18; allow six of them.
		tol := 6 * math.Sqrt(2*want*(1-want)/float64(n))
		t.Logf("%v at attempt %d: %.2f%% of keys at the cap, %.2f%% of simulated chains", p, attempt, 100*got, 100*want)
		if want < 0.05 || math.Abs(got-want) > tol {
			t.Errorf("%v at attempt %d: %.2f%% of keys reach the cap, %.2f%% of simulated chains do (tolerance %.2f%%)",
				p, attempt, 100*got, 100*want, 100*tol)
		}
	}
}
