package conformance

import (
	"github.com/rebound-go/rebound/backoff"
)

// The kinds the KindRules check enqueues with KindEngine.EnqueueKind.
const (
	kindFast = "conformance_fast"
	kindSlow = "conformance_slow"
)

// checkKindRules runs jobs of two kinds under two rules
// (Config.KindRules) with different policies and caps, and jobs of the
// harness's default kind, which has no rule of its own and runs under
// Config.Rule. Each keeps its own schedule and cap, and the observer is
// told each attempt's kind and cap.
func checkKindRules(e *env) {
	fast := e.rule(backoff.Must(backoff.Fixed(unit)), 2)
	slow := e.rule(backoff.Must(backoff.Fixed(3*unit)), 4)
	w := e.start("kind rules", e.rule(backoff.Must(backoff.Fixed(2*unit)), 3), func(c *Config) {
		c.KindRules = map[string]backoff.Rule{kindFast: fast, kindSlow: slow}
	})
	if _, ok := w.eng.(KindEngine); !e.need(FeatureKinds, ok, "EnqueueKind enqueues a job of a named kind") {
		return
	}
	w.enqueueKind(kindFast, script{Always: true})
	w.enqueueKind(kindSlow, script{Always: true})
	w.enqueueKind(kindSlow, script{Fail: 2})
	w.enqueue(script{Always: true})
	w.enqueue(script{Fail: 1})
	w.verify(w.settle())
}

// checkGiveUp runs jobs that end exhausted (by errors and by panics),
// permanent, and completed after retries. The give-up hook must be called
// exactly once for each job that failed for good, with its last attempt
// and outcome, and never for a job that completed, even after a quiet
// period. (Every check verifies this; this one exists so the property has
// a name.)
func checkGiveUp(e *env) {
	w := e.start("give-up", e.rule(backoff.Must(backoff.Fixed(unit)), 3))
	w.allow = w.allowUpTo(3, func(err error) bool {
		pe := panicError(err)
		return pe != nil && pe.Op == "handler"
	})
	w.enqueue(script{Always: true})
	w.enqueue(script{Permanent: true})
	w.enqueue(script{Always: true, Panic: true})
	w.enqueue(script{Fail: 2})
	w.enqueue(script{Fail: 1, After: unit})
	w.enqueue(script{})
	states := w.settle()
	w.quiet()
	w.verify(states)
	w.recheck(states)
}

// checkBookkeeping runs jobs through every ending (success, success after
// a retry, exhausted, permanent, panics) on a BookkeepingEngine: once all
// are terminal, Pending() returns to zero within BookkeepingGrace. (The
// suite polls Pending after every check whose jobs all ended; this check
// exists so the property has a name.)
func checkBookkeeping(e *env) {
	w := e.start("bookkeeping", e.rule(backoff.Must(backoff.Fixed(unit)), 2))
	if _, ok := w.eng.(BookkeepingEngine); !e.need(FeatureBookkeeping, ok, "Pending reports the per-job entries the adapter keeps in memory") {
		return
	}
	w.allow = w.allowUpTo(2, func(err error) bool {
		pe := panicError(err)
		return pe != nil && pe.Op == "handler"
	})
	w.enqueue(script{})
	w.enqueue(script{Fail: 1})
	w.enqueue(script{Always: true})
	w.enqueue(script{Permanent: true})
	w.enqueue(script{Always: true, Panic: true})
	w.verify(w.settle())
}
