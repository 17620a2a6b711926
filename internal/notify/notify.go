// Package notify tells the user's observer (and, when it listens, of
// circuit breaker changes), give-up hook and error handler what an adapter
// did, the same way on every adapter: each call recovered
// by one guard, a panic reported rather than fatal, and the give-up hook
// derived from the very result the observer is told, so the two cannot
// disagree.
package notify

import (
	"context"
	"log/slog"

	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// Notifier holds what an adapter reports to. The zero Notifier reports
// internal errors to slog.Default and nothing else. A Notifier is not
// changed after the adapter is built, so it is safe for concurrent use.
type Notifier struct {
	// Observer is told about every attempt; nil for none.
	Observer observe.Observer
	// GiveUp is told about every job that ends exhausted or permanent;
	// nil for none.
	GiveUp observe.GiveUpFunc
	// OnError is told about internal errors: recovered panics of user code
	// and failures of the adapter's own bookkeeping. nil logs them with
	// slog.Default at level Error.
	OnError func(error)
	// Prefix starts the log message of an error logged by default, e.g.
	// "reboundasynq".
	Prefix string
}

// Started calls Observer.AttemptStarted and returns the context it gave, or
// ctx when there is no observer, it panicked or it returned nil.
func (n *Notifier) Started(ctx context.Context, a observe.Attempt) context.Context {
	if n.Observer == nil {
		return ctx
	}
	out, err := safe.Value("observer", ctx, func() context.Context { return n.Observer.AttemptStarted(ctx, a) })
	if err != nil {
		n.Report(err)
		return ctx
	}
	if out == nil {
		return ctx
	}
	return out
}

// Ended calls Observer.AttemptEnded, then, when r says rebound gave the job
// up (see [observe.Result.GaveUp]), the give-up hook. Call it once per
// attempt, after the engine has been handed the decision r carries.
func (n *Notifier) Ended(ctx context.Context, a observe.Attempt, r observe.Result) {
	if n.Observer != nil {
		if err := safe.Call("observer", func() { n.Observer.AttemptEnded(ctx, a, r) }); err != nil {
			n.Report(err)
		}
	}
	if n.GiveUp != nil && r.GaveUp() {
		g := observe.GiveUp{Attempt: a, Err: r.Err, Outcome: r.Decision.Outcome}
		if err := safe.Call("give-up hook", func() { n.GiveUp(ctx, g) }); err != nil {
			n.Report(err)
		}
	}
}

// BreakerChanged tells the observer of a change of a dependency's
// circuit breaker, when the observer implements observe.BreakerObserver;
// ctx is the context of the attempt whose question or report showed it.
func (n *Notifier) BreakerChanged(ctx context.Context, c observe.BreakerChange) {
	bo, ok := n.Observer.(observe.BreakerObserver)
	if !ok {
		return
	}
	if err := safe.Call("observer", func() { bo.BreakerChanged(ctx, c) }); err != nil {
		n.Report(err)
	}
}

// Report hands err to OnError, or logs it when OnError is nil. A panicking
// OnError is logged, never propagated.
func (n *Notifier) Report(err error) {
	if err == nil {
		return
	}
	if n.OnError != nil {
		perr := safe.Call("error handler", func() { n.OnError(err) })
		if perr == nil {
			return
		}
		n.log(perr)
	}
	n.log(err)
}

func (n *Notifier) log(err error) {
	prefix := n.Prefix
	if prefix == "" {
		prefix = "rebound"
	}
	slog.Default().Error(prefix+": internal error", "err", safe.Message(err))
}
