package breaker

import (
	"fmt"
	"math"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// Limits every value of this package keeps to. Times and counts live as
// whole numbers below 2^53, so that the Redis store's Lua (whose numbers
// are doubles) computes exactly what the Go core computes.
const (
	// MaxCount is where every counter saturates (consecutive failures,
	// trips, window counts, the generation).
	MaxCount = 1<<53 - 1
	// Buckets is how many slices the failure-rate window is cut into: the
	// window slides one slice at a time.
	Buckets = 10
	// MinWindow is the shortest failure-rate window, one millisecond per
	// slice.
	MinWindow = Buckets * time.Millisecond
)

// maxMillis is the latest time the breaker represents, in Unix
// milliseconds (about the year 285,000). Deadlines saturate there.
const maxMillis = MaxCount

// Breaker is a circuit breaker's rule: when to trip, how long to stay
// open, how to probe and close, and the retry budget that releases a
// backlog after recovery. It is an immutable value, safe to copy and to
// share; the state it rules lives in a [Circuit] the caller owns (or a
// store keeps). The zero Breaker is not valid; build one with [New] or
// [Parse].
type Breaker struct {
	failures  int64 // consecutive failures that trip; 0: off
	rate      int64 // failure rate that trips, in parts per million; 0: off
	minCalls  int64 // calls the window must hold before the rate counts
	bucket    int64 // width of one window slice, ms
	cooldown  backoff.Policy
	probes    int64 // probes let through at once while half-open
	successes int64 // probe successes that close the breaker
	lease     int64 // ms a probe may take before its slot is presumed lost
	budget    Budget
}

// Config lists a [Breaker]'s settings, for [New]. A zero field takes the
// default its comment names, when it has one.
type Config struct {
	// Failures is how many failures in a row trip the breaker; 0 turns
	// the consecutive-failure trip off.
	Failures int
	// Rate is the share of failed calls in the window, in (0, 1], that
	// trips the breaker once the window holds MinCalls calls; 0 turns the
	// rate trip off. It is kept to a millionth (0.0001%).
	Rate float64
	// MinCalls is how many calls (successes and failures) the window must
	// hold before Rate is judged. Required with Rate.
	MinCalls int
	// Window is how far back the rate looks, at least [MinWindow]; it
	// slides in [Buckets] slices of Window/Buckets (rounded up to a whole
	// millisecond). Required with Rate.
	Window time.Duration
	// Cooldown is the curve of the open breaker's cool-down: the n-th
	// consecutive trip (n = 1 for the first, reset when the breaker
	// closes) stays open for backoff.Delay(Cooldown, n, ...), jittered by
	// the dependency's name. Required.
	Cooldown backoff.Policy
	// Probes is how many probe runs a half-open breaker lets through at
	// once; default 1.
	Probes int
	// Successes is how many probe successes close the breaker; default 1.
	Successes int
	// Lease is how long a probe may run before its slot is presumed lost
	// (its worker died) and given to another; default 1m. It is also how
	// long, at most, a run that finds every probe slot taken is deferred:
	// set it near the job's timeout.
	Lease time.Duration
	// Budget bounds retries while the breaker is closed; the zero Budget
	// bounds nothing.
	Budget Budget
}

// Defaults of the optional settings.
const (
	DefaultProbes    = 1
	DefaultSuccesses = 1
	DefaultLease     = time.Minute
)

// New builds a Breaker from c, or says which setting is wrong and what it
// should be.
func New(c Config) (Breaker, error) {
	return build(settings{
		failures: int64(c.Failures), rate: c.Rate, minCalls: int64(c.MinCalls), window: c.Window,
		cooldown: c.Cooldown, probes: int64(c.Probes), successes: int64(c.Successes), lease: c.Lease,
		budget: c.Budget,
	})
}

// settings is a Config with its counts in int64, so that [Parse] reads the
// same breaker from the same text on every GOARCH (an int has 32 bits on
// 386).
type settings struct {
	failures, minCalls, probes, successes int64
	rate                                  float64
	window, lease                         time.Duration
	cooldown                              backoff.Policy
	budget                                Budget
}

// build is New for settings.
func build(c settings) (Breaker, error) {
	b := Breaker{
		failures:  c.failures,
		probes:    c.probes,
		successes: c.successes,
		minCalls:  c.minCalls,
		cooldown:  c.cooldown,
		budget:    c.budget,
	}
	if b.probes == 0 {
		b.probes = DefaultProbes
	}
	if b.successes == 0 {
		b.successes = DefaultSuccesses
	}
	lease := c.lease
	if lease == 0 {
		lease = DefaultLease
	}
	switch {
	case c.failures < 0:
		return Breaker{}, fmt.Errorf("breaker: failures %d is negative, want >= 1 (or 0 for no consecutive-failure trip)", c.failures)
	case math.IsNaN(c.rate) || c.rate < 0 || c.rate > 1:
		return Breaker{}, fmt.Errorf("breaker: rate %v is outside [0, 1], want a share of failed calls such as 0.5", c.rate)
	case c.probes < 0:
		return Breaker{}, fmt.Errorf("breaker: probes %d is negative, want >= 1", c.probes)
	case c.successes < 0:
		return Breaker{}, fmt.Errorf("breaker: successes %d is negative, want >= 1", c.successes)
	case lease < time.Millisecond:
		return Breaker{}, fmt.Errorf("breaker: lease %s is below 1ms, want how long a probe may run", formatDuration(lease))
	case isNilPolicy(c.cooldown):
		return Breaker{}, fmt.Errorf("breaker: no cooldown policy, want one such as exponential(5s, 5m)")
	}
	b.lease = min(millisCeil(lease), maxDurationMillis)
	if c.rate > 0 {
		b.rate = int64(math.Round(c.rate * 1e6))
		switch {
		case b.rate == 0:
			return Breaker{}, fmt.Errorf("breaker: rate %v is below 0.0001%%, want 0 (off) or at least 0.000001", c.rate)
		case c.minCalls < 1:
			return Breaker{}, fmt.Errorf("breaker: min calls %d is below 1, want how many calls the window must hold before the rate is judged", c.minCalls)
		case c.window < MinWindow:
			return Breaker{}, fmt.Errorf("breaker: window %s is below %s, want how far back the rate looks", formatDuration(c.window), formatDuration(MinWindow))
		}
		b.bucket = min((millisCeil(c.window)+Buckets-1)/Buckets, maxDurationMillis/Buckets)
	} else if c.minCalls != 0 || c.window != 0 {
		return Breaker{}, fmt.Errorf("breaker: min calls %d and window %s are set without a rate, want a rate too (or neither)", c.minCalls, formatDuration(c.window))
	}
	if b.failures == 0 && b.rate == 0 {
		return Breaker{}, fmt.Errorf("breaker: no trip condition, want failures >= 1 or a rate")
	}
	return b, nil
}

// Must returns b, or panics if err is not nil. It is meant for
// package-level variables built from constant arguments.
func Must(b Breaker, err error) Breaker {
	if err != nil {
		panic(err)
	}
	return b
}

// Config returns the settings b was built from, with every default filled
// in and every value as b keeps it (Window and Lease rounded up to whole
// milliseconds, Rate to a millionth). Where an int has 32 bits (GOARCH=386)
// a count above the largest int reads as the largest int; b itself keeps
// and uses the count it was built with.
func (b Breaker) Config() Config {
	c := Config{
		Failures:  clampInt(b.failures),
		Cooldown:  b.cooldown,
		Probes:    clampInt(b.probes),
		Successes: clampInt(b.successes),
		Lease:     millisDuration(b.lease),
		Budget:    b.budget,
	}
	if b.rate > 0 {
		c.Rate = float64(b.rate) / 1e6
		c.MinCalls = clampInt(b.minCalls)
		c.Window = millisDuration(b.bucket * Buckets)
	}
	return c
}

// IsZero reports whether b is the zero Breaker, which guards nothing.
// Every Breaker [New] builds has a trip condition, the zero one has none.
func (b Breaker) IsZero() bool { return b.failures == 0 && b.rate == 0 }

// Budget returns the retry budget of b (the zero Budget if it has none).
func (b Breaker) Budget() Budget { return b.budget }

// Cooldown returns how long the breaker stays open after its trip-th
// consecutive trip (1-based) when it guards dependency dep: the cool-down
// policy's delay for attempt trip, its jitter keyed by dep, so every
// process computes the same value. It is rounded up to a whole
// millisecond, the breaker's resolution, so a cool-down never ends early
// (and saturates at the largest Duration).
func (b Breaker) Cooldown(dep string, trip int64) time.Duration {
	return millisDuration(b.cooldownMillis(dep, trip))
}

func (b Breaker) cooldownMillis(dep string, trip int64) int64 {
	if b.cooldown == nil {
		return 0
	}
	n := int(min(max(trip, 1), MaxCooldownTrip))
	return millisCeil(backoff.Delay(b.cooldown, n, backoff.Key(dep)))
}

// MaxCooldownTrip is the largest trip number a cool-down policy is asked
// with: a breaker that has tripped more often in a row is asked with this
// one. It is the largest int32, so that the policy sees the same attempt
// number, and a keyed jitter draws the same value, on every GOARCH (an int
// has 32 bits on 386).
const MaxCooldownTrip = math.MaxInt32

// clampInt is n as an int, the largest int where it does not fit.
func clampInt(n int64) int { return int(min(n, int64(math.MaxInt))) }

// isNilPolicy reports whether p holds no policy: nil, or an empty Spec.
func isNilPolicy(p backoff.Policy) bool {
	if p == nil {
		return true
	}
	if s, ok := p.(backoff.Spec); ok {
		return isNilPolicy(s.Policy)
	}
	if s, ok := p.(*backoff.Spec); ok {
		return s == nil || isNilPolicy(s.Policy)
	}
	return false
}

// millisCeil converts d to whole milliseconds, rounding up; negative
// durations give 0.
func millisCeil(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++
	}
	return ms
}

// maxDurationMillis is the most whole milliseconds a time.Duration holds.
const maxDurationMillis = math.MaxInt64 / int64(time.Millisecond)

// millisDuration converts whole milliseconds to a Duration, saturating at
// the largest Duration.
func millisDuration(ms int64) time.Duration {
	if ms > maxDurationMillis {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// toMillis converts t to Unix milliseconds within [0, maxMillis].
func toMillis(t time.Time) int64 {
	ms := t.UnixMilli()
	return min(max(ms, 0), maxMillis)
}

// fromMillis is the Time of Unix millisecond ms.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms) }

// addMillis returns t+d saturated at maxMillis; both are in range.
func addMillis(t, d int64) int64 {
	if d >= maxMillis-t {
		return maxMillis
	}
	return t + d
}

// inc adds one to a counter, saturating at MaxCount.
func inc(n int64) int64 { return min(n+1, MaxCount) }

// Units is a [Breaker] in the whole-number units of a [Circuit]: what a
// store that runs the transitions itself (the Redis store's scripts) is
// handed. Times are milliseconds, tokens millionths of a token.
type Units struct {
	// Failures is the consecutive-failure trip; 0 is off.
	Failures int64
	// Rate is the failure-rate trip in parts per million; 0 is off.
	Rate int64
	// MinCalls is the calls the window must hold before Rate is judged.
	MinCalls int64
	// Slice is the width of one window slice, in ms (0 without a rate).
	Slice int64
	// Probes is the probes let through at once while half-open.
	Probes int64
	// Successes is the probe successes that close the breaker.
	Successes int64
	// Lease is how long a probe holds its slot, in ms.
	Lease int64
	// Ratio is the budget's earnings per success, in millionths of a token.
	Ratio int64
	// Floor is the budget's earnings per ms, in millionths of a token.
	Floor int64
	// Burst is the budget's capacity in millionths of a token; 0 means no
	// budget.
	Burst int64
}

// Units returns b's settings in a Circuit's units.
func (b Breaker) Units() Units {
	return Units{
		Failures: b.failures, Rate: b.rate, MinCalls: b.minCalls, Slice: b.bucket,
		Probes: b.probes, Successes: b.successes, Lease: b.lease,
		Ratio: b.budget.ratio, Floor: b.budget.floor, Burst: b.budget.burst,
	}
}
