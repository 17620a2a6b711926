package backoff

import (
	"fmt"
	"math"
	"math/big"
	"testing"
	"time"
)

// statefulDecorrelated runs AWS's recurrence the way a stateful client does,
// one step after another from prev = base, on the keyed draws Delay uses:
// prev_k = min(cap, uniform(base, 3*prev_{k-1})), the uniform drawn from
// step k's keyed word r as base + floor(r * (3*prev-base+1) / 2^64), in
// big integers, so that 3*prev is never cut to a Duration. It returns
// prev_1 .. prev_n at indexes 1 .. n.
func statefulDecorrelated(base, cap time.Duration, src Source, n int) []time.Duration {
	out := make([]time.Duration, n+1)
	prev := int64(base)
	b, c := big.NewInt(int64(base)), big.NewInt(int64(cap))
	var span, off big.Int
	for k := 1; k <= n; k++ {
		span.Mul(big.NewInt(prev), big.NewInt(3))
		span.Sub(&span, b)
		span.Add(&span, big.NewInt(1))
		off.SetUint64(src.keyedDraw(k))
		off.Mul(&off, &span)
		off.Rsh(&off, 64)
		off.Add(&off, b)
		if off.Cmp(c) > 0 {
			off.Set(c)
		}
		prev = off.Int64()
		out[k] = time.Duration(prev)
	}
	return out
}

// decorrelatedCases are base/cap pairs of ratio 1, 10, 1e3, 3.6e5 (the
// issue's 10ms..1h), 1e6, and the widest there are, including both sides
// of the cap where 3*prev stops fitting in a Duration.
var decorrelatedCases = []struct{ base, cap time.Duration }{
	{time.Second, time.Second},
	{100 * time.Millisecond, time.Second},
	{10 * time.Millisecond, 10 * time.Second},
	{10 * time.Millisecond, time.Hour},
	{time.Millisecond, 1000 * time.Second},
	{1, math.MaxInt64},
	{1, math.MaxInt64 / 3},
	{1, math.MaxInt64/3 + 1},
	{1 << 40, math.MaxInt64 - 1},
	{1, math.MaxInt64/3*2 + 5},
	{1 << 62, math.MaxInt64},
}

// TestDecorrelatedExact: for every attempt, Delay is exactly the value the
// stateful recurrence reaches at that step, for several keys and ratios.
// Up to attempt 3000 every attempt is checked; beyond, a sample out to
// attempt 100000, where Delay can only have replayed a window.
func TestDecorrelatedExact(t *testing.T) {
	const dense, far = 3000, 100_000
	for _, c := range decorrelatedCases {
		p, err := Decorrelated(c.base, c.cap)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 4 {
			src := Key(fmt.Sprintf("job-%d", k))
			n := dense
			if k == 0 {
				n = far
			}
			want := statefulDecorrelated(c.base, c.cap, src, n)
			for a := 1; a <= n; a++ {
				if a > dense && a%97 != 0 && a != n {
					continue
				}
				if got := p.Delay(a, src); got != want[a] {
					t.Fatalf("%v at attempt %d with key %d = %v, the stateful recurrence gives %v", p, a, k, got, want[a])
				}
			}
		}
	}
}

// TestDecorrelatedBoundedWork: however late the attempt, one Delay replays
// a bounded number of steps of the recurrence, and allocates nothing.
func TestDecorrelatedBoundedWork(t *testing.T) {
	// Each window is replayed once, and the windows double from
	// decorrelatedWindow to decorrelatedMaxWindow.
	bound := 2*decorrelatedMaxWindow - decorrelatedWindow
	for _, c := range decorrelatedCases {
		p, err := Decorrelated(c.base, c.cap)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 200 {
			src := KeyUint64(uint64(k))
			for _, a := range []int{33, 5000, math.MaxInt32, math.MaxInt - 1, math.MaxInt} {
				d, steps := p.replay(a, src)
				if steps > bound {
					t.Fatalf("%v at attempt %d replayed %d steps, want at most %d", p, a, steps, bound)
				}
				if d < c.base || d > c.cap {
					t.Fatalf("%v at attempt %d = %v, outside [%v, %v]", p, a, d, c.base, c.cap)
				}
			}
		}
	}
	p := Must(Decorrelated(1, math.MaxInt64))
	if n := testing.AllocsPerRun(100, func() { _ = p.Delay(math.MaxInt, Source{}) }); n != 0 {
		t.Errorf("%v allocates %v times a call", p, n)
	}
}
