package reboundasynq

import (
	"context"
	"errors"
	"fmt"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/internal/guard"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// WithBreaker guards the tasks bound to a dependency ([WithDependency], or
// an error marked with breaker.Dependency) with the circuit breakers kept
// in store: breaker/redisstore on the Redis asynq uses, so that every
// server sees one breaker per dependency (breaker/memstore for a single
// process). Before a bound task's handler runs, the middleware asks the
// store; while the dependency's breaker is open, or its retry budget is
// spent, the handler does not run and the task is retried by asynq
// without counting the run: asynq's retry count stays, so no attempt is
// spent. It runs again once the breaker may answer otherwise, plus a
// spread of up to one first cool-down keyed by the task, so that the
// held-back tasks do not all come back at once. The observer hears the run
// as [observe.Deferred]. After a bound task's handler returned, the
// middleware reports what it did (see [WithDependency]). A store that
// fails lets the task run, and the error goes to the error handler. nil,
// the default, guards nothing.
//
// It needs the server's asynq.Config.IsFailure set to [Retrier.IsFailure],
// which tells asynq not to count a deferred run (and asks the function
// given [WithIsFailure] about every other error), and tasks with room for
// it: asynq archives any failure of a task's last allowed run (its retry
// count at MaxRetry) whatever IsFailure says, so such a run is not
// deferred but run. [Retrier.NewTask] and [Retrier.MaxRetryFor] give every
// attempt of the rule that room.
func WithBreaker(store breaker.Store) Option {
	return func(r *Retrier) error {
		r.brk.Store = store
		return nil
	}
}

// WithDependency binds tasks of taskType to dependency dep: they run only
// when dep's breaker lets them (see [WithBreaker], which it needs), and
// each run is reported to the breaker: a success; a failure for any error
// (a timeout and a panic included) but these, which say nothing about dep
// (neutral): an error marked [backoff.Permanent], asynq.SkipRetry or
// asynq.RevokeTask, a run cancelled (Inspector.CancelProcessing, a server
// shutting down). An error marked with breaker.Dependency for another
// dependency counts against that one instead; such a marked error counts
// against its dependency whatever the task's type, bound or not. A later
// binding of the same type replaces an earlier one.
func WithDependency(taskType, dep string) Option {
	return func(r *Retrier) error {
		return r.brk.Depend("reboundasynq: WithDependency", taskType, dep)
	}
}

// IsFailure is an asynq.Config.IsFailure; set it with [WithBreaker]. It
// answers false for a run the breaker deferred (asynq then retries the
// task without counting the run), for a run [WithIsFailure]'s function
// made a snooze, and otherwise what that function answers (true without
// one, as asynq does). It never panics.
func (r *Retrier) IsFailure(err error) bool {
	var c *carrier
	found, perr := safe.Value("error text", false, func() bool { return errors.As(err, &c) })
	r.notify.Report(perr)
	if found && c.run != nil {
		if res, _, decided := c.run.outcome(); decided {
			c.counted.Store(true)
			return res.Counting == observe.Counted
		}
	}
	if found {
		return true // a refused delivery: asynq archives it anyway
	}
	return r.counts(err)
}

// deferRun holds run ru back when the breaker says so: the handler does
// not run, and the middleware returns the error that makes asynq retry the
// task uncounted (with Retrier.IsFailure), at the deferral's fire time.
// held reports it; pass is the breaker's answer either way.
func (r *Retrier) deferRun(sctx context.Context, ru *run, n int) (pass guard.Pass, c *carrier, held bool) {
	if r.guard == nil || ru.last {
		// On the task's last allowed run asynq archives any failure: the
		// run cannot be deferred, so it runs, reported to the breaker with
		// no ticket (it counts while the breaker is closed).
		if dep, ok := r.guard.Bound(ru.task.Type()); ok {
			pass.Dep = dep
		}
		return pass, nil, false
	}
	pass = r.guard.Ask(sctx, ru.task.Type(), ru.id, n > 0)
	if !pass.Deferred() {
		return pass, nil, false
	}
	d, res := r.guard.Deferral(sctx, pass)
	var exact bool
	res.FireAt, exact = fireTime(pass.At, min(d, MaxDelay), r.precise && ru.headers != nil)
	res.Decision.Delay = res.FireAt.Sub(pass.At)
	close(ru.returned)
	r.decideRun(ru, res, exact)
	text := safe.Message(res.Err)
	return pass, &carrier{run: ru, err: res.Err, text: text, deferred: true}, true
}

// checkCounted reports a deferred run that asynq counted as a failed
// attempt: the server's IsFailure is not Retrier.IsFailure.
func (r *Retrier) checkCounted(c *carrier) {
	if c.deferred && !c.counted.Load() {
		r.notify.Report(fmt.Errorf("reboundasynq: asynq counted a run the breaker deferred (task %s, attempt %d) as a failed attempt: set asynq.Config.IsFailure to Retrier.IsFailure",
			c.run.id, c.run.a.Number))
	}
}

// breakerNeutral reports whether the handler's outcome c (nil for a
// success) of a run whose context is ctx says nothing about the
// dependency: asynq.SkipRetry or RevokeTask, or a cancelled run.
func breakerNeutral(ctx context.Context, c *carrier) bool {
	return c != nil && (c.skip || c.revoke || errors.Is(ctx.Err(), context.Canceled))
}

// breakerErr is what the breaker is told the run returned: the handler's
// error as the carrier holds it (a stand-in for a hostile one).
func breakerErr(c *carrier) error {
	if c == nil {
		return nil
	}
	return c.err
}
