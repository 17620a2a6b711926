package backoff

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

var errNilInner = errors.New("backoff: inner policy is nil, want a policy to wrap")

// checkInner says why a wrapper cannot wrap inner, or returns nil: inner
// must be a policy, and wrapping it must not nest policies deeper than
// [Parse] reads back (32 levels, the wrapper included), so that what the
// package prints it also reads.
func checkInner(inner Policy) error {
	if isNilPolicy(inner) {
		return errNilInner
	}
	if d := depthOf(inner, maxNesting); d >= maxNesting {
		return fmt.Errorf("backoff: inner policy nests %d or more deep, want at most %d so that the wrapper's text, %d deep, still parses", d, maxNesting-1, maxNesting)
	}
	return nil
}

// depthOf returns how many levels of policies p's text nests, counting p,
// or limit when that is limit or more (a *Spec can be made to hold a
// policy that wraps it, which has no depth).
func depthOf(p Policy, limit int) int {
	d := 0
	// hops bounds the walk through Specs and guards too, which add no level.
	for hops := 0; d < limit && hops < 4*limit; hops++ {
		switch q := p.(type) {
		case nil:
			return d
		case guarded:
			p = q.p
			continue
		case Spec:
			p = q.Policy
			continue
		case *Spec:
			if q == nil {
				return d
			}
			p = q.Policy
			continue
		case FullJitterPolicy:
			p = q.inner.p
		case EqualJitterPolicy:
			p = q.inner.p
		case ProportionalPolicy:
			p = q.inner.p
		default:
			return d + 1
		}
		d++
	}
	return limit
}

// wrapped is the policy a jitter wrapper draws around, guarded as [guard]
// does, as the wrapper calls it. A capped exponential, what most jitter
// wraps, is called by its concrete type in the wrapper's own frame (through
// exponential, which inlines there with the exponential's body); the other
// two curves without jitter (fixed, linear) are called by theirs one call
// further in, in delay. None of the three draws, so none is handed a
// sub-Source. Any other policy is called through the interface, with the
// wrapper's sub-Source, and asked for its maximum each time (a *Spec inside
// may be Set to another policy).
type wrapped struct{ p Policy }

// exponential returns the wrapped policy if it is a capped exponential.
func (w wrapped) exponential() (ExponentialPolicy, bool) {
	q, ok := w.p.(ExponentialPolicy)
	return q, ok
}

// delay returns the wrapped policy's delay for attempt (at least 1), src
// being the wrapper's own Source. The wrappers ask exponential first.
func (w wrapped) delay(attempt int, src Source) time.Duration {
	switch q := w.p.(type) {
	case ExponentialPolicy:
		return q.Delay(attempt, src)
	case FixedPolicy:
		return q.Delay(attempt, src)
	case LinearPolicy:
		return q.Delay(attempt, src)
	case nil:
		return 0
	}
	return w.p.Delay(attempt, src.sub())
}

// max returns the wrapped policy's maximum.
func (w wrapped) max() time.Duration {
	if q, ok := w.exponential(); ok {
		return q.Max()
	}
	return w.maxOther()
}

// maxOther is max for any policy but an exponential one.
func (w wrapped) maxOther() time.Duration {
	switch q := w.p.(type) {
	case FixedPolicy:
		return q.Max()
	case LinearPolicy:
		return q.Max()
	case nil:
		return 0
	}
	return w.p.Max()
}

// FullJitterPolicy draws the delay uniformly from [0, d], where d is the
// delay of the policy it wraps (AWS's "full jitter"). Build it with [Jitter].
type FullJitterPolicy struct {
	inner wrapped
}

// Jitter wraps inner in full jitter: each delay is uniform in [0, d], d being
// inner's delay for the same attempt. It spreads a cohort of jobs that failed
// together across the whole window, so they do not re-fire as a herd.
// inner must not be 32 or more levels deep, the most [Parse] reads back
// with the wrapper on top.
func Jitter(inner Policy) (FullJitterPolicy, error) {
	if err := checkInner(inner); err != nil {
		return FullJitterPolicy{}, err
	}
	return FullJitterPolicy{inner: wrapped{guard(inner)}}, nil
}

// Delay returns a uniform draw in [0, inner delay].
func (p FullJitterPolicy) Delay(attempt int, src Source) time.Duration {
	attempt = max(attempt, 1)
	var d time.Duration
	if q, ok := p.inner.exponential(); ok {
		d = q.Delay(attempt, src)
	} else {
		d = p.inner.delay(attempt, src)
	}
	var r uint64
	if src.keyed {
		r = src.keyedDraw(attempt)
	} else {
		r = fresh()
	}
	return time.Duration(between(r, 0, int64(d)))
}

// Max returns the inner policy's maximum.
func (p FullJitterPolicy) Max() time.Duration { return p.inner.max() }

// Inner returns the wrapped policy.
func (p FullJitterPolicy) Inner() Policy { return unguarded(p.inner.p) }

// String returns "jitter(INNER)".
func (p FullJitterPolicy) String() string { return "jitter(" + stringOf(p.inner.p) + ")" }

// EqualJitterPolicy keeps half of the inner delay and draws the other half:
// d/2 + uniform[0, d/2] (AWS's "equal jitter"). Build it with [EqualJitter].
type EqualJitterPolicy struct {
	inner wrapped
}

// EqualJitter wraps inner in equal jitter: each delay is at least half of
// inner's delay and at most all of it. inner must not be 32 or more levels
// deep, the most [Parse] reads back with the wrapper on top.
func EqualJitter(inner Policy) (EqualJitterPolicy, error) {
	if err := checkInner(inner); err != nil {
		return EqualJitterPolicy{}, err
	}
	return EqualJitterPolicy{inner: wrapped{guard(inner)}}, nil
}

// Delay returns d/2 + uniform[0, d - d/2], d being the inner delay.
func (p EqualJitterPolicy) Delay(attempt int, src Source) time.Duration {
	attempt = max(attempt, 1)
	var d int64
	if q, ok := p.inner.exponential(); ok {
		d = int64(q.Delay(attempt, src))
	} else {
		d = int64(p.inner.delay(attempt, src))
	}
	half := d / 2
	var r uint64
	if src.keyed {
		r = src.keyedDraw(attempt)
	} else {
		r = fresh()
	}
	return time.Duration(half + between(r, 0, d-half))
}

// Max returns the inner policy's maximum.
func (p EqualJitterPolicy) Max() time.Duration { return p.inner.max() }

// Inner returns the wrapped policy.
func (p EqualJitterPolicy) Inner() Policy { return unguarded(p.inner.p) }

// String returns "equal(INNER)".
func (p EqualJitterPolicy) String() string { return "equal(" + stringOf(p.inner.p) + ")" }

// ProportionalPolicy spreads the inner delay by a fraction f either way:
// uniform in [d*(1-f), d*(1+f)], clipped to the inner policy's maximum so the
// wrapper never exceeds it. Build it with [Proportional].
type ProportionalPolicy struct {
	f     float64
	inner wrapped
}

// Proportional wraps inner in proportional jitter of fraction f, which must be
// in (0, 1]: with f = 0.2 a 4s delay lands in [3.2s, 4.8s]. Where d*(1+f)
// would pass inner's maximum, the upper end of the window is that maximum.
// inner must not be 32 or more levels deep, the most [Parse] reads back
// with the wrapper on top.
func Proportional(f float64, inner Policy) (ProportionalPolicy, error) {
	if !(f > 0 && f <= 1) { // also rejects NaN
		return ProportionalPolicy{}, fmt.Errorf("backoff: jitter fraction %v is outside (0, 1]", f)
	}
	if err := checkInner(inner); err != nil {
		return ProportionalPolicy{}, err
	}
	return ProportionalPolicy{f: f, inner: wrapped{guard(inner)}}, nil
}

// Delay returns a uniform draw in [d*(1-f), min(d*(1+f), inner.Max())].
func (p ProportionalPolicy) Delay(attempt int, src Source) time.Duration {
	attempt = max(attempt, 1)
	// The inner maximum is read on every call, not kept, unless the inner
	// policy is a curve: a *Spec inside may have been Set to another policy
	// since construction. d is clipped to it too, in case that happened
	// between the two calls.
	var m, d int64
	if q, ok := p.inner.exponential(); ok {
		m, d = int64(q.Max()), int64(q.Delay(attempt, src))
	} else {
		m = int64(p.inner.max())
		d = min(int64(p.inner.delay(attempt, src)), m)
	}
	spread := d
	if p.f < 1 {
		// d >= 0 and f < 1 make the product a float below 2^63 whose
		// truncation is at most d, so the conversion is exact and safe.
		spread = int64(float64(d) * p.f)
	}
	// The top of the window is d+spread, clipped to the inner maximum,
	// computed so that it cannot overflow.
	var r uint64
	if src.keyed {
		r = src.keyedDraw(attempt)
	} else {
		r = fresh()
	}
	return time.Duration(between(r, d-spread, d+min(spread, m-d)))
}

// Max returns the inner policy's maximum.
func (p ProportionalPolicy) Max() time.Duration { return p.inner.max() }

// Fraction returns the jitter fraction f.
func (p ProportionalPolicy) Fraction() float64 { return p.f }

// Inner returns the wrapped policy.
func (p ProportionalPolicy) Inner() Policy { return unguarded(p.inner.p) }

// String returns "proportional(F, INNER)".
func (p ProportionalPolicy) String() string {
	return "proportional(" + formatFloat(p.f) + ", " + stringOf(p.inner.p) + ")"
}

// DecorrelatedPolicy is AWS's "decorrelated jitter": each delay is drawn from
// [base, 3 * previous delay] and clamped at cap. Build it with [Decorrelated].
type DecorrelatedPolicy struct {
	base, cap time.Duration
}

// Decorrelated returns AWS's decorrelated jitter, min(cap, uniform(base,
// prev*3)), with prev = base before the first retry.
//
// Engines hand a retry policy an attempt number, not the previous delay, so
// the recurrence is computed statelessly, and exactly: Delay(n) is the value
// the stateful recurrence reaches at step n, step k drawing from the Source
// keyed by k (an unkeyed Source seeds the draws with one value from the
// runtime's generator). With a keyed Source one job's delays are one chain,
// the same in every process.
//
// The draw spans all of [base, 3*prev] even where 3*prev is larger than
// the largest Duration (it is computed in 65 bits), so a cap above a third
// of the largest Duration is reached as often as the recurrence says.
//
// Up to attempt 32 Delay replays the chain from the first step. A later
// attempt replays only a window of the last steps, starting from prev =
// base. A step is monotone in prev, so that replay stays at or below the
// true chain; once it reaches the cap the two are equal from there on,
// and Delay returns the true value. A window that never gets there is
// doubled, from 32 steps up to 4096; a window as long as the attempt
// number is the full replay. Only if 4096 steps prove nothing does Delay
// return that window's value: a chain of the same recurrence, in [base,
// cap], started from base 4096 steps back. No policy with cap/base up to
// 1e6 comes near that bound: of a million simulated chains, none needed
// 1000 steps. Even for the widest policy there is, decorrelated(1ns, max
// Duration), about one chain in 100,000 needed more than 2048 steps; of a
// million, two needed the window of 4096, and both were exact there. So
// a call costs at most 8160 steps of a few nanoseconds each, at any
// attempt number, and allocates nothing.
func Decorrelated(base, cap time.Duration) (DecorrelatedPolicy, error) {
	if base <= 0 {
		return DecorrelatedPolicy{}, fmt.Errorf("backoff: decorrelated base %s is not positive, want > 0", formatDuration(base))
	}
	if cap < base {
		return DecorrelatedPolicy{}, fmt.Errorf("backoff: cap %s is below base %s, want a cap of at least the base", formatDuration(cap), formatDuration(base))
	}
	return DecorrelatedPolicy{base: base, cap: cap}, nil
}

// The windows of the recurrence Delay replays: the first one, doubled up to
// the largest one.
const (
	decorrelatedWindow    = 32
	decorrelatedMaxWindow = 4096
)

// Delay returns the decorrelated recurrence's value at step attempt.
func (p DecorrelatedPolicy) Delay(attempt int, src Source) time.Duration {
	d, _ := p.replay(attempt, src)
	return d
}

// replay is Delay; it also returns how many steps it ran.
func (p DecorrelatedPolicy) replay(attempt int, src Source) (d time.Duration, steps int) {
	attempt = max(attempt, 1)
	if p.base <= 0 || p.cap <= p.base {
		return max(min(p.base, p.cap), 0), 0
	}
	if !src.keyed {
		// One draw from the runtime seeds the whole replay: each step's
		// draw then costs a mix, not a call into the runtime's generator.
		src = Source{seed: fresh(), keyed: true}
	}
	base, cp := int64(p.base), int64(p.cap)
	// A step maps prev to min(cp, uniform(base, 3*prev)), which is
	// monotone in prev. A replay that reaches the cap has caught up with
	// every chain at or below it, the true one included.
	for w := decorrelatedWindow; ; w *= 2 {
		start := 1
		if attempt > w {
			start = attempt - w + 1
		}
		prev, exact := base, start == 1
		for k := start; ; k++ {
			exact = exact || prev == cp
			// A step is min(cp, uniform(base, 3*prev)): between's draw
			// where 3*prev fits, the 65-bit one of wideStep above.
			if r := src.keyedDraw(k); prev <= math.MaxInt64/3 {
				prev = min(between(r, base, 3*prev), cp)
			} else {
				prev = wideStep(r, base, prev, cp)
			}
			if k == attempt { // not k <= attempt: attempt may be math.MaxInt
				break
			}
		}
		steps += attempt - start + 1
		if exact || prev == cp || w >= decorrelatedMaxWindow {
			return time.Duration(prev), steps
		}
	}
}

// wideStep is one step of the recurrence, min(cp, uniform(base, 3*prev))
// for the random word r with 0 < base <= prev <= cp, where 3*prev does not
// fit in 64 bits (replay takes between's draw itself where it does). The draw
// maps r onto the 3*prev-base+1 values of [base, 3*prev] by a multiply, as
// between does, but the span is held in 65 bits: 3*prev passes the largest
// Duration once prev is above a third of it, and a span cut to 64 bits
// there (3*prev saturated) would never reach a cap above it. The draw is
// monotone in r and in prev, and equals between's where the span fits.
func wideStep(r uint64, base, prev, cp int64) int64 {
	// span = 3*prev - (base-1), as hi:lo; hi is 0 or 1.
	hi3, lo3 := bits.Mul64(uint64(prev), 3)
	lo, borrow := bits.Sub64(lo3, uint64(base-1), 0)
	hi := hi3 - borrow
	// off = floor(r * span / 2^64) = floor(r*lo / 2^64) + r*hi.
	off, _ := bits.Mul64(r, lo)
	if hi != 0 {
		var carry uint64
		if off, carry = bits.Add64(off, r, 0); carry != 0 {
			return cp // off >= 2^64, far past any cap
		}
	}
	if off >= uint64(cp-base) {
		return cp
	}
	return base + int64(off)
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
