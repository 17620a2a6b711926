package backoff

import (
	"errors"
	"fmt"
	"math"
	"time"
)

var errNilInner = errors.New("backoff: inner policy is nil, want a policy to wrap")

// FullJitterPolicy draws the delay uniformly from [0, d], where d is the
// delay of the policy it wraps (AWS's "full jitter"). Build it with [Jitter].
type FullJitterPolicy struct {
	inner Policy
}

// Jitter wraps inner in full jitter: each delay is uniform in [0, d], d being
// inner's delay for the same attempt. It spreads a cohort of jobs that failed
// together across the whole window, so they do not re-fire as a herd.
func Jitter(inner Policy) (FullJitterPolicy, error) {
	if isNilPolicy(inner) {
		return FullJitterPolicy{}, errNilInner
	}
	return FullJitterPolicy{inner: inner}, nil
}

// Delay returns a uniform draw in [0, inner delay].
func (p FullJitterPolicy) Delay(attempt int, src Source) time.Duration {
	attempt = max(attempt, 1)
	var d time.Duration
	if e, ok := p.inner.(ExponentialPolicy); ok {
		d = e.curve(attempt)
	} else {
		d = delayOf(p.inner, attempt, src.sub())
	}
	var r uint64
	if src.keyed {
		r = src.keyedDraw(attempt)
	} else {
		r = fresh()
	}
	return p.apply(d, r)
}

// apply maps the random word r onto [0, d].
func (FullJitterPolicy) apply(d time.Duration, r uint64) time.Duration {
	return time.Duration(between(r, 0, int64(d)))
}

// Max returns the inner policy's maximum.
func (p FullJitterPolicy) Max() time.Duration { return maxOf(p.inner) }

// Inner returns the wrapped policy.
func (p FullJitterPolicy) Inner() Policy { return p.inner }

// String returns "jitter(INNER)".
func (p FullJitterPolicy) String() string { return "jitter(" + stringOf(p.inner) + ")" }

// EqualJitterPolicy keeps half of the inner delay and draws the other half:
// d/2 + uniform[0, d/2] (AWS's "equal jitter"). Build it with [EqualJitter].
type EqualJitterPolicy struct {
	inner Policy
}

// EqualJitter wraps inner in equal jitter: each delay is at least half of
// inner's delay and at most all of it.
func EqualJitter(inner Policy) (EqualJitterPolicy, error) {
	if isNilPolicy(inner) {
		return EqualJitterPolicy{}, errNilInner
	}
	return EqualJitterPolicy{inner: inner}, nil
}

// Delay returns d/2 + uniform[0, d - d/2], d being the inner delay.
func (p EqualJitterPolicy) Delay(attempt int, src Source) time.Duration {
	attempt = max(attempt, 1)
	var d time.Duration
	if e, ok := p.inner.(ExponentialPolicy); ok {
		d = e.curve(attempt)
	} else {
		d = delayOf(p.inner, attempt, src.sub())
	}
	var r uint64
	if src.keyed {
		r = src.keyedDraw(attempt)
	} else {
		r = fresh()
	}
	return p.apply(d, r)
}

// apply maps the random word r onto [d/2, d].
func (EqualJitterPolicy) apply(d time.Duration, r uint64) time.Duration {
	half := int64(d) / 2
	return time.Duration(half + between(r, 0, int64(d)-half))
}

// Max returns the inner policy's maximum.
func (p EqualJitterPolicy) Max() time.Duration { return maxOf(p.inner) }

// Inner returns the wrapped policy.
func (p EqualJitterPolicy) Inner() Policy { return p.inner }

// String returns "equal(INNER)".
func (p EqualJitterPolicy) String() string { return "equal(" + stringOf(p.inner) + ")" }

// ProportionalPolicy spreads the inner delay by a fraction f either way:
// uniform in [d*(1-f), d*(1+f)], clipped to the inner policy's maximum so the
// wrapper never exceeds it. Build it with [Proportional].
type ProportionalPolicy struct {
	f     float64
	inner Policy
}

// Proportional wraps inner in proportional jitter of fraction f, which must be
// in (0, 1]: with f = 0.2 a 4s delay lands in [3.2s, 4.8s]. Where d*(1+f)
// would pass inner's maximum, the upper end of the window is that maximum.
func Proportional(f float64, inner Policy) (ProportionalPolicy, error) {
	if !(f > 0 && f <= 1) { // also rejects NaN
		return ProportionalPolicy{}, fmt.Errorf("backoff: jitter fraction %v is outside (0, 1]", f)
	}
	if isNilPolicy(inner) {
		return ProportionalPolicy{}, errNilInner
	}
	return ProportionalPolicy{f: f, inner: inner}, nil
}

// Delay returns a uniform draw in [d*(1-f), min(d*(1+f), inner.Max())].
func (p ProportionalPolicy) Delay(attempt int, src Source) time.Duration {
	attempt = max(attempt, 1)
	var d time.Duration
	if e, ok := p.inner.(ExponentialPolicy); ok {
		d = e.curve(attempt)
	} else {
		d = delayOf(p.inner, attempt, src.sub())
	}
	var r uint64
	if src.keyed {
		r = src.keyedDraw(attempt)
	} else {
		r = fresh()
	}
	return p.apply(d, maxOf(p.inner), r)
}

// apply maps the random word r onto [d - d*f, min(d + d*f, m)], m being the
// inner maximum. The inner policy's maximum is read on every call, not kept:
// a *Spec inside may have been Set to another policy since construction.
func (p ProportionalPolicy) apply(delay, m time.Duration, r uint64) time.Duration {
	d := int64(min(delay, m)) // d <= m even if the inner policy changed mid-call
	spread := d
	if p.f < 1 {
		// d >= 0 and f < 1 make the product a float below 2^63 whose
		// truncation is at most d, so the conversion is exact and safe.
		spread = int64(float64(d) * p.f)
	}
	// The top of the window is d+spread, clipped to the inner maximum
	// (which is at least d), computed so that it cannot overflow.
	return time.Duration(between(r, d-spread, d+min(spread, int64(m)-d)))
}

// Max returns the inner policy's maximum.
func (p ProportionalPolicy) Max() time.Duration { return maxOf(p.inner) }

// Fraction returns the jitter fraction f.
func (p ProportionalPolicy) Fraction() float64 { return p.f }

// Inner returns the wrapped policy.
func (p ProportionalPolicy) Inner() Policy { return p.inner }

// String returns "proportional(F, INNER)".
func (p ProportionalPolicy) String() string {
	return "proportional(" + formatFloat(p.f) + ", " + stringOf(p.inner) + ")"
}

// DecorrelatedPolicy is AWS's "decorrelated jitter": each delay is drawn from
// [base, 3 * previous delay] and clamped at cap. Build it with [Decorrelated].
type DecorrelatedPolicy struct {
	base, cap time.Duration
}

// decorrelatedWindow is how many steps of the recurrence Delay replays.
const decorrelatedWindow = 32

// Decorrelated returns AWS's decorrelated jitter, min(cap, uniform(base,
// prev*3)), with prev = base before the first retry.
//
// Engines hand a retry policy an attempt number, not the previous delay, so
// the recurrence is computed statelessly: Delay(n) replays the draws of
// attempts 1..n from the Source, each draw keyed by its own attempt (an
// unkeyed Source seeds the replay with one draw from the runtime's
// generator). With a keyed Source the chain is reproducible, and for n up to 32 Delay(n) is
// exactly the value that follows Delay(n-1) in one chain. To bound the cost
// (at most 32 draws a call), a later attempt replays only its last 32 steps,
// starting from prev = cap. The replay is monotone in prev, so it meets the
// full chain the first time that chain reaches the cap within those steps;
// after that the two are equal. Whatever the start, every draw follows the
// recurrence and every delay lies in [base, cap].
func Decorrelated(base, cap time.Duration) (DecorrelatedPolicy, error) {
	if base <= 0 {
		return DecorrelatedPolicy{}, fmt.Errorf("backoff: decorrelated base %s is not positive, want > 0", formatDuration(base))
	}
	if cap < base {
		return DecorrelatedPolicy{}, fmt.Errorf("backoff: cap %s is below base %s", formatDuration(cap), formatDuration(base))
	}
	return DecorrelatedPolicy{base: base, cap: cap}, nil
}

// Delay replays the decorrelated recurrence up to attempt.
func (p DecorrelatedPolicy) Delay(attempt int, src Source) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if p.base <= 0 || p.cap < p.base {
		return max(min(p.base, p.cap), 0)
	}
	start, prev := 1, int64(p.base)
	if attempt > decorrelatedWindow {
		start, prev = attempt-decorrelatedWindow+1, int64(p.cap)
	}
	base, cp := int64(p.base), int64(p.cap)
	if !src.keyed {
		// One draw from the runtime seeds the whole replay: each step's
		// draw then costs a mix, not a call into the runtime's generator.
		src = Source{seed: fresh(), keyed: true}
	}
	for k := start; ; k++ {
		hi := int64(math.MaxInt64)
		if prev <= math.MaxInt64/3 {
			hi = prev * 3
		}
		prev = min(between(src.keyedDraw(k), base, hi), cp)
		if k == attempt {
			return time.Duration(prev)
		}
	}
}

// Max returns the cap.
func (p DecorrelatedPolicy) Max() time.Duration { return max(p.cap, 0) }

// String returns "decorrelated(BASE, CAP)".
func (p DecorrelatedPolicy) String() string {
	return "decorrelated(" + formatDuration(p.base) + ", " + formatDuration(p.cap) + ")"
}

// isNilPolicy reports whether p holds no policy: nil itself, or a [Spec]
// (or *Spec) that holds none.
func isNilPolicy(p Policy) bool {
	switch s := p.(type) {
	case nil:
		return true
	case Spec:
		return isNilPolicy(s.Policy)
	case *Spec:
		return s == nil || isNilPolicy(s.Policy)
	}
	return false
}

func maxOf(p Policy) time.Duration {
	if isNilPolicy(p) {
		return 0
	}
	return max(p.Max(), 0)
}

func stringOf(p Policy) string {
	if p == nil {
		return "<nil>"
	}
	return p.String()
}
