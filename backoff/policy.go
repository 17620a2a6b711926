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
// curve of its own. It calls p's own Delay method, and guards a Policy this
// package does not know: its result is clamped to [0, p.Max()], and a nil
// policy gives 0. A foreign policy that panics is not recovered here; the
// adapters recover.
func Delay(p Policy, attempt int, src Source) time.Duration {
	// A fixed delay is a field read, answered here because Delay is small
	// enough to inline into its caller: behind a call it would cost more
	// than the peers' constant backoffs, a field read behind one interface
	// call.
	if q, ok := p.(FixedPolicy); ok {
		return q.d
	}
	return delay(p, attempt, src)
}

// delay is Delay past its inline part. The package's own policies are
// called by their concrete type: a static call, which the compiler inlines
// for the small ones and which skips the method wrapper an interface call
// to a value method goes through. Anything else goes through the guard.
func delay(p Policy, attempt int, src Source) time.Duration {
	// A capped exponential, the most common policy, is asked for first: a
	// comparison of the type word, where the switch below hashes it first.
	if q, ok := p.(ExponentialPolicy); ok {
		return q.Delay(attempt, src)
	}
	switch q := p.(type) {
	case FixedPolicy:
		return q.Delay(attempt, src)
	case LinearPolicy:
		return q.Delay(attempt, src)
	case DecorrelatedPolicy:
		return q.Delay(attempt, src)
	case FullJitterPolicy:
		return q.Delay(attempt, src)
	case EqualJitterPolicy:
		return q.Delay(attempt, src)
	case ProportionalPolicy:
		return q.Delay(attempt, src)
	case Spec:
		return q.Delay(attempt, src)
	}
	return guarded{p}.Delay(attempt, src)
}

// trusted reports whether p is one of this package's own policies, the
// types delay calls directly. They keep their range by construction (the
// property tests prove it), so they need no guard; a Spec guards the policy
// it holds. Types are named, rather than asked for an unexported method, so
// that a foreign type embedding one of them (and overriding Delay) is still
// guarded.
func trusted(p Policy) bool {
	switch p.(type) {
	case FixedPolicy, ExponentialPolicy, LinearPolicy, DecorrelatedPolicy,
		FullJitterPolicy, EqualJitterPolicy, ProportionalPolicy, Spec:
		return true
	}
	return false
}

// guarded is the guard around a Policy this package does not know: its
// delay is clamped to [0, Max()], and a nil policy (a nil *Spec, or a *Spec
// holding none) gives 0.
type guarded struct{ p Policy }

func (g guarded) Delay(attempt int, src Source) time.Duration {
	if isNilPolicy(g.p) {
		return 0
	}
	return min(max(g.p.Delay(attempt, src), 0), g.Max())
}

func (g guarded) Max() time.Duration { return maxOf(g.p) }

func (g guarded) String() string { return stringOf(g.p) }

// guard returns p, behind the guard unless it is trusted. The wrappers guard
// the policy they wrap once, when they are built, and then call it directly.
func guard(p Policy) Policy {
	if trusted(p) {
		return p
	}
	return guarded{p}
}

// unguarded returns the policy behind p's guard, if it has one.
func unguarded(p Policy) Policy {
	if g, ok := p.(guarded); ok {
		return g.p
	}
	return p
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
		return ExponentialPolicy{}, fmt.Errorf("backoff: cap %s is below base %s, want a cap of at least the base", formatDuration(cap), formatDuration(base))
	}
	return ExponentialPolicy{base: base, cap: cap}, nil
}

// Delay returns min(base * 2^(attempt-1), cap).
func (p ExponentialPolicy) Delay(attempt int, _ Source) time.Duration {
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
		return LinearPolicy{}, fmt.Errorf("backoff: cap %s is below base %s, want a cap of at least the base", formatDuration(cap), formatDuration(base))
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
