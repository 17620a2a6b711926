package breaker

import (
	"math/bits"
	"slices"
	"time"
)

// Circuit is the state one [Breaker] rules for one dependency: what a
// store keeps, and all [Breaker.Allow] and [Breaker.Record] read and
// change. The zero Circuit is a dependency never seen before: closed, no
// failures, a full budget. Times are Unix milliseconds; the fields are
// exported so that stores can persist them, and only this package's
// transitions should change them.
type Circuit struct {
	// State is closed, open or half-open.
	State State
	// Gen counts the changes of State; reports with tickets of an older
	// generation are ignored.
	Gen int64
	// Trips counts consecutive trips: 1 after the first, one more each
	// time a half-open breaker re-opens, 0 once it closes.
	Trips int64
	// Failures counts consecutive failures while closed.
	Failures int64
	// Until is, while open, when the cool-down ends and the next probe
	// may run.
	Until int64
	// Probes counts the probes let through and not yet reported while
	// half-open: the length of Leases.
	Probes int64
	// Successes counts the probe successes of this half-open spell.
	Successes int64
	// Lease is, while half-open, the earliest end of the probes' leases
	// (0 with none): when the first slot held by an unreported probe is
	// presumed lost and given again.
	Lease int64
	// Leases holds, while half-open, the lease end of each probe let
	// through and not yet reported, one per probe, in the order they
	// were let through: a probe whose lease has ended (its worker is
	// presumed dead) frees its own slot, whatever the others' leases.
	// The transitions never change the slice in place, so a copy of a
	// Circuit is a snapshot.
	Leases []int64
	// Budget is the retry budget's balance.
	Budget Tokens
	// Window holds the failure-rate window's slices.
	Window [Buckets]Bucket
}

// Equal reports whether c and d hold the same state.
func (c Circuit) Equal(d Circuit) bool {
	return c.State == d.State && c.Gen == d.Gen && c.Trips == d.Trips && c.Failures == d.Failures &&
		c.Until == d.Until && c.Probes == d.Probes && c.Successes == d.Successes && c.Lease == d.Lease &&
		c.Budget == d.Budget && c.Window == d.Window && slices.Equal(c.Leases, d.Leases)
}

// Bucket is one slice of the failure-rate window.
type Bucket struct {
	// Epoch is the slice's number: Unix millisecond / slice width.
	Epoch int64
	// Successes and Failures count the calls reported in the slice.
	Successes, Failures int64
}

// Allow answers whether a run of kind k may start at now, and changes c
// accordingly: an open breaker whose cool-down is over turns half-open and
// lets the run through as a probe, a half-open one lets through at most
// its Probes at once, and a closed one lets everything through except
// retries the budget has no token for.
func (b Breaker) Allow(c *Circuit, now time.Time, k Kind) Verdict {
	v := b.allow(c, toMillis(now), k)
	out := Verdict{Decision: v.decision, Ticket: v.ticket, Transition: v.tr}
	if v.decision == DeferOpen || v.decision == DeferBudget {
		out.Until = fromMillis(v.until)
	}
	return out
}

// Record takes the report of a run at now: t is the Ticket of the verdict
// that let it through (the zero Ticket for a failure bound to the
// dependency by its error alone), o what it did, dep the dependency's name
// (it keys the jitter of the cool-down). It returns the breaker's state
// before and after.
func (b Breaker) Record(c *Circuit, dep string, now time.Time, t Ticket, o Outcome) Transition {
	return b.record(c, toMillis(now), t, o, func(trip int64) int64 { return b.cooldownMillis(dep, trip) })
}

// verdict is Verdict in the core's own units.
type verdict struct {
	decision Decision
	until    int64
	ticket   Ticket
	tr       Transition
}

func (b *Breaker) allow(c *Circuit, now int64, k Kind) verdict {
	from := c.State
	if b.IsZero() {
		// Not a breaker New built: it guards nothing.
		return verdict{decision: Run, ticket: Ticket{Gen: c.Gen, Admitted: true}, tr: Transition{from, from}}
	}
	switch c.State {
	case Open, HalfOpen:
		if c.State == Open {
			if now < c.Until {
				return verdict{decision: DeferOpen, until: c.Until, tr: Transition{from, Open}}
			}
			c.State = HalfOpen
			c.Gen = inc(c.Gen)
			c.Probes, c.Successes, c.Lease, c.Leases = 0, 0, 0, nil
		}
		// A probe whose lease has ended is presumed lost (its worker
		// died): its slot is free again, and its late report, if any,
		// finds no lease of its own and changes nothing.
		leases := b.liveLeases(c, now)
		if int64(len(leases)) < b.probes {
			end := addMillis(now, b.lease)
			setLeases(c, append(leases, end))
			return verdict{decision: Probe, ticket: Ticket{Gen: c.Gen, Probe: true, Admitted: true, Lease: end}, tr: Transition{from, HalfOpen}}
		}
		setLeases(c, leases)
		return verdict{decision: DeferOpen, until: c.Lease, tr: Transition{from, HalfOpen}}
	}
	if k == Retry {
		if ok, next := b.budget.take(&c.Budget, now); !ok {
			return verdict{decision: DeferBudget, until: next, tr: Transition{from, Closed}}
		}
	}
	return verdict{decision: Run, ticket: Ticket{Gen: c.Gen, Admitted: true}, tr: Transition{from, Closed}}
}

// record is Record with the cool-down of the next trip supplied by the
// caller: the Redis store's scripts get it as a literal.
func (b *Breaker) record(c *Circuit, now int64, t Ticket, o Outcome, cooldown func(trip int64) int64) Transition {
	from := c.State
	if b.IsZero() {
		return Transition{from, from}
	}
	switch c.State {
	case Open:
		return Transition{from, from}
	case HalfOpen:
		if !t.Admitted || !t.Probe || t.Gen != c.Gen {
			return Transition{from, from}
		}
		leases, ok := release(b.leasesOf(c), t.Lease)
		if !ok {
			// The probe's lease ended and its slot went to another.
			return Transition{from, from}
		}
		setLeases(c, leases)
		switch o {
		case Success:
			c.Successes = inc(c.Successes)
			if c.Successes >= b.successes {
				b.close(c, now)
			}
		case Failure:
			b.trip(c, now, cooldown)
		}
		return Transition{from, c.State}
	}
	if t.Admitted && t.Gen != c.Gen {
		return Transition{from, from}
	}
	switch o {
	case Success:
		c.Failures = 0
		b.count(c, now, false)
		b.budget.deposit(&c.Budget, now)
	case Failure:
		c.Failures = inc(c.Failures)
		b.count(c, now, true)
		if b.tripped(c, now) {
			b.trip(c, now, cooldown)
		}
	}
	return Transition{from, c.State}
}

// count adds one call to the window slice of now.
func (b *Breaker) count(c *Circuit, now int64, failed bool) {
	if b.rate == 0 {
		return
	}
	e := now / b.bucket
	w := &c.Window[e%Buckets]
	switch {
	case w.Epoch > e:
		// The slice has moved on past now (a clock that stepped back):
		// the call is too old for the window.
		return
	case w.Epoch < e:
		*w = Bucket{Epoch: e}
	}
	if failed {
		w.Failures = inc(w.Failures)
	} else {
		w.Successes = inc(w.Successes)
	}
}

// window sums the calls and failures of the window ending at now.
func (b *Breaker) window(c *Circuit, now int64) (calls, failures int64) {
	if b.rate == 0 {
		return 0, 0
	}
	e := now / b.bucket
	for _, w := range c.Window {
		if w.Epoch > e-Buckets && w.Epoch <= e {
			calls += w.Successes + w.Failures
			failures += w.Failures
		}
	}
	return min(calls, MaxCount), min(failures, MaxCount)
}

// tripped reports whether c, just after a failure at now, meets a trip
// condition.
func (b *Breaker) tripped(c *Circuit, now int64) bool {
	if b.failures > 0 && c.Failures >= b.failures {
		return true
	}
	if b.rate == 0 {
		return false
	}
	calls, failures := b.window(c, now)
	if calls < b.minCalls {
		return false
	}
	// failures/calls >= rate/1e6, compared in 128 bits.
	hi1, lo1 := bits.Mul64(uint64(failures), unit)
	hi2, lo2 := bits.Mul64(uint64(b.rate), uint64(calls))
	return hi1 > hi2 || hi1 == hi2 && lo1 >= lo2
}

// trip opens the breaker for the cool-down of its next consecutive trip.
func (b *Breaker) trip(c *Circuit, now int64, cooldown func(trip int64) int64) {
	trips := inc(c.Trips)
	// Asked before c changes, so a policy that panics leaves c as it was.
	d := min(max(cooldown(trips), 0), maxMillis)
	c.State = Open
	c.Gen = inc(c.Gen)
	c.Trips = trips
	c.Until = addMillis(now, d)
	b.reset(c, now)
}

// close closes the breaker after enough probe successes. The budget starts
// empty, so the backlog the outage built is released at the budget's rate.
func (b *Breaker) close(c *Circuit, now int64) {
	c.State = Closed
	c.Gen = inc(c.Gen)
	c.Trips = 0
	c.Until = 0
	b.reset(c, now)
}

// maxLegacyLeases bounds the leases leasesOf gives a circuit stored
// before each probe had one.
const maxLegacyLeases = 64

// leasesOf returns the leases of c's probes. A circuit stored before each
// probe had a lease of its own counts Probes probes sharing Lease (at most
// maxLegacyLeases of them, and no more than b lets through).
func (b *Breaker) leasesOf(c *Circuit) []int64 {
	if len(c.Leases) > 0 || c.Probes <= 0 {
		return c.Leases
	}
	n := min(c.Probes, b.probes, maxLegacyLeases)
	out := make([]int64, n)
	for i := range out {
		out[i] = c.Lease
	}
	return out
}

// liveLeases returns a new slice of the leases of c's probes that have
// not ended at now.
func (b *Breaker) liveLeases(c *Circuit, now int64) []int64 {
	all := b.leasesOf(c)
	out := make([]int64, 0, len(all)+1)
	for _, l := range all {
		if l > now {
			out = append(out, l)
		}
	}
	return out
}

// release returns a new slice of leases without one lease equal to l, and
// whether there was one.
func release(leases []int64, l int64) ([]int64, bool) {
	i := slices.Index(leases, l)
	if i < 0 {
		return leases, false
	}
	out := make([]int64, 0, len(leases)-1)
	out = append(out, leases[:i]...)
	return append(out, leases[i+1:]...), true
}

// setLeases makes leases c's probes: Probes counts them and Lease is the
// earliest. An empty list is stored as nil.
func setLeases(c *Circuit, leases []int64) {
	if len(leases) == 0 {
		leases = nil
	}
	c.Leases, c.Probes, c.Lease = leases, int64(len(leases)), 0
	if len(leases) > 0 {
		c.Lease = slices.Min(leases)
	}
}

// reset clears what a change of state starts afresh.
func (b *Breaker) reset(c *Circuit, now int64) {
	c.Failures, c.Probes, c.Successes, c.Lease, c.Leases = 0, 0, 0, 0, nil
	c.Window = [Buckets]Bucket{}
	// Empty, brought up to date now; At 0 would read as never used.
	c.Budget = Tokens{At: max(now, 1)}
}
