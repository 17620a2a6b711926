package breaker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Store keeps one [Circuit] per dependency where every worker process sees
// it, and runs each of [Breaker]'s transitions on it atomically. The
// stores of this module are breaker/memstore (one process),
// breaker/redisstore and breaker/pgstore; all are safe for concurrent use
// by many goroutines and, for the shared ones, by many processes.
//
// An adapter asks before it runs a job bound to a dependency and reports
// after:
//
//	v, err := store.Allow(ctx, dep, breaker.Job{Kind: kind, ID: jobID})
//	if err != nil { run the job anyway: a store that is down must not stop the fleet }
//	if !v.Runs() { defer the job to v.Until without spending an attempt; return }
//	err = handler(ctx, job)
//	store.Record(ctx, dep, v.Ticket, outcome(err))
//
// A dependency the store has no [Breaker] for is not guarded: Allow says
// Run and Record does nothing.
type Store interface {
	// Allow asks whether a run of job, bound to dep, may start now, on
	// the store's clock.
	Allow(ctx context.Context, dep string, job Job) (Verdict, error)
	// Record reports what a run did: t is the Ticket of the verdict that
	// let it through, or the zero Ticket for a failure bound to dep by
	// its error alone.
	Record(ctx context.Context, dep string, t Ticket, o Outcome) (Transition, error)
	// Status returns dep's breaker as it stands now, on the store's clock.
	Status(ctx context.Context, dep string) (Status, error)
	// List returns the status of every dependency the store holds a
	// circuit for, sorted by name.
	List(ctx context.Context) ([]Status, error)
}

// Job is the run an adapter asks a [Store] about.
type Job struct {
	// Kind is what the run is to the budget, as far as the engine can
	// tell: Retry for a retry or a run the breaker deferred before.
	Kind Kind
	// ID is the job's identity in its engine, or "" for none. With it, a
	// store remembers the jobs it defers (for [Remember] after each
	// deferral ends) and counts a remembered job's next run as a Retry,
	// whatever Kind says. An engine that reruns a deferred job as if it
	// were new (asynq's uncounted retry keeps its retry count) still has
	// its backlog released at the budget's rate.
	ID string
}

// DefaultStoreTimeout is how long a call of the Redis or the PostgreSQL
// store may take, unless its Options say otherwise: past it the call
// returns an error, and the adapter runs the job anyway (a question) or
// drops the report (see docs/breaker.md).
const DefaultStoreTimeout = time.Second

// StoreTimeout is the bound a store's Options.Timeout of d sets on each
// call: d itself, [DefaultStoreTimeout] for 0, and 0 (no bound but the
// call's context) for a negative d.
func StoreTimeout(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return DefaultStoreTimeout
	case d < 0:
		return 0
	}
	return d
}

// Remember is how long after its deferral ends a store remembers a job it
// deferred, when the job does not come back.
const Remember = 24 * time.Hour

// MaxJobIDLen is the longest job ID a store remembers.
const MaxJobIDLen = 1024

// CheckJobID says what is wrong with a job ID, or returns nil: at most
// [MaxJobIDLen] bytes, no NUL byte (PostgreSQL text cannot hold one).
func CheckJobID(id string) error {
	if len(id) > MaxJobIDLen {
		return fmt.Errorf("breaker: job ID of %d bytes is too long, want at most %d", len(id), MaxJobIDLen)
	}
	if i := strings.IndexByte(id, 0); i >= 0 {
		return fmt.Errorf("breaker: job ID has a NUL byte at offset %d, want text without one", i)
	}
	return nil
}

// Rules says which [Breaker] guards each dependency. It is a value; the
// stores copy it when they are built.
type Rules struct {
	// Default guards every dependency Named does not list; the zero
	// Breaker guards none.
	Default Breaker
	// Named guards the dependencies it lists.
	Named map[string]Breaker
}

// For returns the breaker that guards dep, and whether there is one.
func (r Rules) For(dep string) (Breaker, bool) {
	if b, ok := r.Named[dep]; ok && !b.IsZero() {
		return b, true
	}
	return r.Default, !r.Default.IsZero()
}

// Clone returns a copy of r whose map the caller's later changes do not
// reach.
func (r Rules) Clone() Rules {
	c := Rules{Default: r.Default}
	if r.Named != nil {
		c.Named = make(map[string]Breaker, len(r.Named))
		for k, v := range r.Named {
			c.Named[k] = v
		}
	}
	return c
}

// Status is one dependency's breaker as it stands at a moment: what
// `rebound breaker` prints and what dashboards read.
type Status struct {
	// Dependency is the dependency's name.
	Dependency string
	// Rule is the text form of the breaker that last changed the circuit
	// (empty if unknown).
	Rule string
	// State is closed, open or half-open. An open breaker whose cool-down
	// is over shows as open until the next Allow turns it half-open.
	State State
	// Failures counts consecutive failures (closed).
	Failures int64
	// Calls and WindowFailures count the calls and the failures in the
	// failure-rate window (closed, with a rate trip).
	Calls, WindowFailures int64
	// Trips counts consecutive trips.
	Trips int64
	// NextProbe is when the next probe may run: the end of the
	// cool-down while open, the earliest end of the probes' leases while
	// half-open with every slot taken; zero otherwise.
	NextProbe time.Time
	// Probes counts probes running (half-open): let through, not yet
	// reported, and within their lease.
	Probes int64
	// Tokens is the budget's balance at the moment (closed; the budget is
	// empty while the breaker is not closed), -1 without a budget.
	Tokens float64
	// Gen is the circuit's generation.
	Gen int64
	// At is the moment the status describes, on the store's clock.
	At time.Time
}

// Status describes c at now for dependency dep.
func (b Breaker) Status(dep string, c Circuit, now time.Time) Status {
	ms := toMillis(now)
	s := Status{
		Dependency: dep,
		Rule:       safeString(b),
		State:      c.State,
		Failures:   c.Failures,
		Trips:      c.Trips,
		Probes:     c.Probes,
		Gen:        c.Gen,
		Tokens:     -1,
		At:         fromMillis(ms),
	}
	switch c.State {
	case Open:
		s.NextProbe = fromMillis(c.Until)
	case HalfOpen:
		// Probes whose lease has ended hold no slot.
		live := b.liveLeases(&c, ms)
		s.Probes = int64(len(live))
		if len(live) > 0 && s.Probes >= b.probes {
			s.NextProbe = fromMillis(slices.Min(live))
		}
	default:
		s.Calls, s.WindowFailures = b.window(&c, ms)
	}
	if !b.budget.IsZero() {
		s.Tokens = 0
		if c.State == Closed {
			s.Tokens = b.budget.Available(c.Budget, fromMillis(ms))
		}
	}
	return s
}

// safeString is b's text form, or "" for the zero Breaker and for one
// whose cool-down policy (the user's) panics when printed: a status must
// not take a process down.
func safeString(b Breaker) (s string) {
	if b.IsZero() {
		return ""
	}
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	return b.String()
}
