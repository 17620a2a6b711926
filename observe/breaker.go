package observe

import (
	"context"
	"fmt"
	"time"

	"github.com/rebound-go/rebound/breaker"
)

// DeferredError is the Err of a run a circuit breaker held back
// ([Deferred]): the job is bound to Dependency, whose breaker said not to
// run it now. It is information for observers, not a failure: the job
// runs again at Until (plus the adapter's spread), with the same attempt
// number.
type DeferredError struct {
	// Dependency is the dependency the job is bound to.
	Dependency string
	// Decision is why: breaker.DeferOpen (the breaker is open, or its
	// probes are all taken) or breaker.DeferBudget (the retry budget is
	// spent).
	Decision breaker.Decision
	// Until is the earliest time the breaker may answer otherwise, on the
	// store's clock.
	Until time.Time
}

// Error says which dependency held the run back and why.
func (e *DeferredError) Error() string {
	why := "its breaker is open"
	if e.Decision == breaker.DeferBudget {
		why = "its retry budget is spent"
	}
	return fmt.Sprintf("rebound: run deferred: dependency %q: %s until %s", e.Dependency, why, e.Until.UTC().Format(time.RFC3339Nano))
}

// BreakerChange is a change of a dependency's circuit breaker, as an
// adapter saw it.
type BreakerChange struct {
	// System names the engine whose adapter saw the change, as
	// [Attempt.System] does.
	System string
	// Dependency is the dependency's name.
	Dependency string
	// From and To are the breaker's state before and after.
	From, To breaker.State
	// At is when the adapter saw the change, on its own clock.
	At time.Time
	// NextProbe is, when To is open, when the next probe may run (the end
	// of the cool-down, on the store's clock); zero when unknown or when
	// the breaker is not open.
	NextProbe time.Time
	// Learned is false when this process's question or report made the
	// change (exactly one process makes each change), and true when
	// another process made it and this one learned of it from the store's
	// next answer, so that every process's view (a gauge of the state, say)
	// follows the shared breaker. Count transitions by the changes with
	// Learned false.
	Learned bool
}

// A BreakerObserver is an [Observer] that also wants to hear about circuit
// breakers. An adapter given an Observer that implements it calls
// BreakerChanged for every change it makes or learns of, with the context
// of the attempt whose question or report showed it (the one
// AttemptStarted returned). Observers that do not implement it are told
// nothing more than before. Implementations must be safe for concurrent
// use and must not panic; adapters recover if they do.
type BreakerObserver interface {
	Observer
	// BreakerChanged is told of one change of a dependency's breaker.
	BreakerChanged(ctx context.Context, c BreakerChange)
}
