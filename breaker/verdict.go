package breaker

import (
	"fmt"
	"time"
)

// State is where a breaker stands: closed, open or half-open.
type State uint8

const (
	// Closed lets every run through and counts failures. Its zero value
	// is what a dependency never seen before starts in.
	Closed State = iota
	// Open defers every run until its cool-down ends.
	Open
	// HalfOpen lets a few probe runs through; enough successes close the
	// breaker, one failure opens it again with a longer cool-down.
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Kind says what a run is to the budget.
type Kind uint8

const (
	// Fresh is a job's first run, never deferred by a breaker. It is
	// never held back by the budget: the budget bounds extra load, and a
	// fresh run is the load itself.
	Fresh Kind = iota
	// Retry is a retry, or a run a breaker deferred before. While the
	// breaker is closed it spends one token of the budget, or is deferred
	// until the budget has one.
	Retry
)

// String returns "fresh" or "retry".
func (k Kind) String() string {
	switch k {
	case Fresh:
		return "fresh"
	case Retry:
		return "retry"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Decision is what [Breaker.Allow] tells the caller to do with a run.
type Decision uint8

const (
	// Run means run the job now.
	Run Decision = iota + 1
	// Probe means run the job now as one of the half-open breaker's
	// probes: its outcome decides whether the breaker closes.
	Probe
	// DeferOpen means the breaker is open (or its probes are all taken):
	// do not run the job, and ask again no earlier than the verdict's
	// Until. The run must not spend one of the job's attempts.
	DeferOpen
	// DeferBudget means the breaker is closed but the retry budget is
	// empty: do not run the job, and ask again no earlier than Until,
	// when the next token is due. The run must not spend an attempt.
	DeferBudget
)

// String returns "run", "probe", "defer-open" or "defer-budget".
func (d Decision) String() string {
	switch d {
	case Run:
		return "run"
	case Probe:
		return "probe"
	case DeferOpen:
		return "defer-open"
	case DeferBudget:
		return "defer-budget"
	}
	return fmt.Sprintf("Decision(%d)", uint8(d))
}

// Outcome is what a run that [Breaker.Allow] let through did.
type Outcome uint8

const (
	// Success means the dependency answered.
	Success Outcome = iota + 1
	// Failure means the run failed because of the dependency.
	Failure
	// Neutral means the run says nothing about the dependency: it was
	// cancelled, never started, or failed for a reason of its own (a
	// permanent error, say). It counts for nothing, but it frees the
	// probe slot a probe held.
	Neutral
)

// String returns "success", "failure" or "neutral".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Neutral:
		return "neutral"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Ticket ties the report of a run to the verdict that let it through:
// pass the Verdict's Ticket to [Breaker.Record]. A report whose ticket is
// from an earlier generation of the breaker (it was let through before
// the breaker last changed state) changes nothing, so a slow job that
// started before a trip cannot close or re-open the breaker. The zero
// Ticket stands for a run no Allow let through, such as a failure bound to
// the dependency by its error alone: it counts while the breaker is
// closed, and only then.
type Ticket struct {
	// Gen is the breaker's generation when the run was let through.
	Gen int64
	// Probe reports whether the run was a half-open probe.
	Probe bool
	// Admitted reports whether an Allow let the run through.
	Admitted bool
	// Lease is, for a probe, when its lease ends (Unix ms): its report
	// frees its own slot, and finds none once the lease has ended and
	// the slot was presumed lost.
	Lease int64
}

// Transition is the breaker's state before and after one event.
type Transition struct {
	From, To State
}

// Changed reports whether the event moved the breaker to another state.
func (t Transition) Changed() bool { return t.From != t.To }

// String returns "closed", or "closed -> open" when the state changed.
func (t Transition) String() string {
	if !t.Changed() {
		return t.To.String()
	}
	return t.From.String() + " -> " + t.To.String()
}

// Verdict is the answer of [Breaker.Allow] for one run.
type Verdict struct {
	// Decision says whether to run the job now, and if not, why.
	Decision Decision
	// Until is, for DeferOpen and DeferBudget, the earliest time at which
	// asking again can give another answer; it is always after the time
	// of the question. It is the zero Time for Run and Probe.
	Until time.Time
	// Ticket is what the run's report must carry to [Breaker.Record].
	Ticket Ticket
	// Transition is the breaker's state before and after the question
	// (an open breaker whose cool-down is over turns half-open here).
	Transition Transition
}

// Runs reports whether the verdict is to run the job now (Run or Probe).
func (v Verdict) Runs() bool { return v.Decision == Run || v.Decision == Probe }

// Wait returns how long after now the verdict defers the run: 0 for Run
// and Probe, and never negative.
func (v Verdict) Wait(now time.Time) time.Duration {
	if v.Runs() || v.Until.IsZero() {
		return 0
	}
	return max(v.Until.Sub(now), 0)
}
