package backoff

import (
	"fmt"
	"time"
)

// A Policy maps the number of a failed attempt to the wait before the next
// one. Implementations are immutable values, safe for concurrent use.
//
// Delay must return a value in [0, Max()] for every attempt from 1 to
// math.MaxInt and must not panic; attempt numbers below 1 are treated as 1.
// The policies of this package also print in the text form that [Parse]
// reads back.
type Policy interface {
	// Delay returns the wait before the retry that follows failed attempt
	// number attempt (1-based), drawing any jitter from src.
	Delay(attempt int, src Source) time.Duration
	// Max returns the largest delay Delay can return for any attempt.
	Max() time.Duration
	// String returns the policy in its text form, such as
	// "jitter(exponential(100ms, 10s))".
	String() string
}

// Delay returns p's delay for the failed attempt, drawing any jitter from src.
// It is the pure heart of rebound: every adapter calls it, none computes a
// curve of its own. It guards against foreign Policy implementations too:
// the result is clamped to [0, p.Max()], and a nil policy gives 0.
func Delay(p Policy, attempt int, src Source) time.Duration {
	// A fixed delay is answered inline at the call site; everything else
	// takes one call.
	if q, ok := p.(FixedPolicy); ok {
		return q.d
	}
	return delayOf(p, attempt, src)
}

// delayOf is Delay. The package's own policies keep their range by
// construction (the tests prove it), so they are called directly, without an
// interface call and without re-clamping; anything else goes through the
// guard.
func delayOf(p Policy, attempt int, src Source) time.Duration {
	attempt = max(attempt, 1)
	// A chain of assertions compiles to one pointer compare each, cheaper
	// than a type switch's jump table for the few types that matter; the
	// most used come first. Delay answers a fixed policy inline, so here
	// it only serves one nested in a wrapper and comes after full jitter.
	if q, ok := p.(ExponentialPolicy); ok {
		return q.curve(attempt)
	}
	if q, ok := p.(FullJitterPolicy); ok {
		// FullJitterPolicy.Delay, written out here on purpose: full jitter
		// over an exponential is the policy most users run, and answering
		// it in this frame saves it a call (about 1ns, a tenth of its
		// cost). TestPropertyKeyedDeterminism keeps the two in step.
		var d time.Duration
		if e, ok := q.inner.(ExponentialPolicy); ok {
			d = e.curve(attempt)
		} else {
			d = delayOf(q.inner, attempt, src.sub())
		}
		var r uint64
		if src.keyed {
			r = src.keyedDraw(attempt)
		} else {
			r = fresh()
		}
		return q.apply(d, r)
	}
	if q, ok := p.(FixedPolicy); ok {
		return q.d
	}
	if q, ok := p.(ProportionalPolicy); ok {
		return q.Delay(attempt, src)
	}
	if q, ok := p.(LinearPolicy); ok {
		return q.Delay(attempt, src)
	}
	if q, ok := p.(EqualJitterPolicy); ok {
		return q.Delay(attempt, src)
	}
	if q, ok := p.(DecorrelatedPolicy); ok {
		return q.Delay(attempt, src)
	}
	if q, ok := p.(Spec); ok {
		return delayOf(q.Policy, attempt, src)
	}
	if p == nil {
		return 0
	}
	return guardedDelay(p, attempt, src)
}

// guardedDelay calls a policy this package does not know and clamps what it
// returns to [0, Max()].
func guardedDelay(p Policy, attempt int, src Source) time.Duration {
	if isNilPolicy(p) {
		return 0
	}
	d := p.Delay(attempt, src)
	if m := p.Max(); d > m {
		d = m
	}
	return max(d, 0)
}

// Must returns p, or panics if err is not nil. It is meant for package-level
// variables built from constant arguments, like regexp.MustCompile.
func Must[P any](p P, err error) P {
	if err != nil {
		panic(err)
	}
	return p
}

// FixedPolicy waits the same delay after every failed attempt.
// Build it with [Fixed].
type FixedPolicy struct {
	d time.Duration
}

// Fixed returns a policy that waits d after every failed attempt.
// d must not be negative.
func Fixed(d time.Duration) (FixedPolicy, error) {
	if d < 0 {
		return FixedPolicy{}, fmt.Errorf("backoff: fixed delay %s is negative, want >= 0", formatDuration(d))
	}
	return FixedPolicy{d: d}, nil
}

// Delay returns the fixed delay, whatever the attempt.
func (p FixedPolicy) Delay(int, Source) time.Duration { return p.d }

// Max returns the fixed delay.
func (p FixedPolicy) Max() time.Duration { return p.d }

// String returns "fixed(D)".
func (p FixedPolicy) String() string { return "fixed(" + formatDuration(p.d) + ")" }

// ExponentialPolicy doubles the delay after each failed attempt, from base up
// to cap: min(base * 2^(attempt-1), cap). Build it with [Exponential].
type ExponentialPolicy struct {
	base, cap time.Duration
}

// Exponential returns a policy that waits base after the first failed attempt
// and doubles the wait after each further one, never exceeding cap. The value
// is exact for every attempt: it is computed in integers and the doubling
// stops at the cap, so it cannot overflow. base must be positive and cap must
// be at least base.
func Exponential(base, cap time.Duration) (ExponentialPolicy, error) {
	if base <= 0 {
		return ExponentialPolicy{}, fmt.Errorf("backoff: exponential base %s is not positive, want > 0", formatDuration(base))
	}
	if cap < base {
		return ExponentialPolicy{}, fmt.Errorf("backoff: cap %s is below base %s", formatDuration(cap), formatDuration(base))
	}
	return ExponentialPolicy{base: base, cap: cap}, nil
}

// Delay returns min(base * 2^(attempt-1), cap).
func (p ExponentialPolicy) Delay(attempt int, _ Source) time.Duration { return p.curve(attempt) }

// curve is Delay, kept small enough to inline into [Delay].
func (p ExponentialPolicy) curve(attempt int) time.Duration {
	// attempt-1 as unsigned: attempts below 1 wrap to huge shifts, so clamp
	// them to shift 0 first. base << shift stays at or below cap exactly
	// when base <= cap >> shift; checking that first is what keeps the
	// shift from ever overflowing. A zero base (the zero value) gives 0
	// through the same test, since its cap is 0 too.
	shift := uint(max(attempt, 1) - 1)
	if shift >= 63 || p.base > p.cap>>shift {
		return p.cap
	}
	return p.base << shift
}

// Max returns the cap.
func (p ExponentialPolicy) Max() time.Duration { return max(p.cap, 0) }

// String returns "exponential(BASE, CAP)".
func (p ExponentialPolicy) String() string {
	return "exponential(" + formatDuration(p.base) + ", " + formatDuration(p.cap) + ")"
}

// LinearPolicy grows the delay by a fixed step after each failed attempt:
// min(base + step*(attempt-1), cap). Build it with [Linear].
type LinearPolicy struct {
	base, step, cap time.Duration
}

// Linear returns a policy that waits base after the first failed attempt and
// step longer after each further one, never exceeding cap. base and step must
// not be negative and cap must be at least base.
func Linear(base, step, cap time.Duration) (LinearPolicy, error) {
	switch {
	case base < 0:
		return LinearPolicy{}, fmt.Errorf("backoff: linear base %s is negative, want >= 0", formatDuration(base))
	case step < 0:
		return LinearPolicy{}, fmt.Errorf("backoff: linear step %s is negative, want >= 0", formatDuration(step))
	case cap < base:
		return LinearPolicy{}, fmt.Errorf("backoff: cap %s is below base %s", formatDuration(cap), formatDuration(base))
	}
	return LinearPolicy{base: base, step: step, cap: cap}, nil
}

// Delay returns min(base + step*(attempt-1), cap).
func (p LinearPolicy) Delay(attempt int, _ Source) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if p.step <= 0 || p.cap <= p.base {
		return min(max(p.base, 0), max(p.cap, 0))
	}
	// base + step*n <= cap exactly when n <= (cap-base)/step; past that the
	// product could overflow, and the answer is the cap anyway.
	n := int64(attempt - 1)
	if n > int64((p.cap-p.base)/p.step) {
		return p.cap
	}
	return p.base + p.step*time.Duration(n)
}

// Max returns the cap, or base when step is 0 and the curve stays flat.
func (p LinearPolicy) Max() time.Duration {
	if p.step <= 0 {
		return max(min(p.base, p.cap), 0)
	}
	return max(p.cap, 0)
}

// String returns "linear(BASE, STEP, CAP)".
func (p LinearPolicy) String() string {
	return "linear(" + formatDuration(p.base) + ", " + formatDuration(p.step) + ", " + formatDuration(p.cap) + ")"
}
