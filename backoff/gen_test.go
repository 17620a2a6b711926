package backoff_test

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// newRand returns a deterministic generator for a test: seeded PCG, never
// the global source.
func newRand(seed1, seed2 uint64) *rand.Rand { return rand.New(rand.NewPCG(seed1, seed2)) }

// randDuration draws a non-negative duration that favours the edges: zero,
// nanoseconds, ordinary retry delays and values near the largest Duration.
func randDuration(r *rand.Rand) time.Duration {
	switch r.IntN(7) {
	case 0:
		return 0
	case 1:
		return time.Duration(r.Int64N(1000))
	case 2:
		return time.Duration(r.Int64N(int64(time.Minute)))
	case 3:
		return time.Duration(r.Int64N(int64(1000 * time.Hour)))
	case 4:
		return math.MaxInt64 - time.Duration(r.Int64N(1000))
	case 5:
		return time.Duration(1) << r.IntN(63)
	default:
		return time.Duration(r.Int64())
	}
}

// randPolicy builds a random valid policy tree at most depth wrappers deep.
func randPolicy(r *rand.Rand, depth int) backoff.Policy {
	kind := r.IntN(7)
	if depth <= 0 {
		kind = r.IntN(4)
	}
	switch kind {
	case 0:
		return backoff.Must(backoff.Fixed(randDuration(r)))
	case 1:
		base, cap := orderedPositive(r)
		return backoff.Must(backoff.Exponential(base, cap))
	case 2:
		base, cap := randDuration(r), randDuration(r)
		if cap < base {
			base, cap = cap, base
		}
		return backoff.Must(backoff.Linear(base, randDuration(r), cap))
	case 3:
		base, cap := orderedPositive(r)
		return backoff.Must(backoff.Decorrelated(base, cap))
	case 4:
		return backoff.Must(backoff.Jitter(randPolicy(r, depth-1)))
	case 5:
		return backoff.Must(backoff.EqualJitter(randPolicy(r, depth-1)))
	default:
		f := r.Float64()
		switch r.IntN(4) {
		case 0:
			f = 1
		case 1:
			f = math.SmallestNonzeroFloat64
		case 2:
			f = math.Nextafter(1, 0)
		}
		if f == 0 {
			f = 0.5
		}
		return backoff.Must(backoff.Proportional(f, randPolicy(r, depth-1)))
	}
}

// orderedPositive returns 0 < base <= cap.
func orderedPositive(r *rand.Rand) (base, cap time.Duration) {
	base, cap = max(randDuration(r), 1), max(randDuration(r), 1)
	if cap < base {
		base, cap = cap, base
	}
	return base, cap
}

// attemptsToProbe lists the attempt numbers every property is checked at:
// the start of every curve, the shift boundaries, the largest int and
// invalid numbers below 1, plus random ones.
func attemptsToProbe(r *rand.Rand) []int {
	as := []int{math.MinInt, -1, 0, 1, 2, 3, 4, 5, 31, 32, 33, 62, 63, 64, 65, 1000,
		math.MaxInt32, math.MaxInt - 1, math.MaxInt}
	for range 8 {
		as = append(as, 1+r.IntN(math.MaxInt-1))
	}
	return as
}
