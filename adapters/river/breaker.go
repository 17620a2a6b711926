package reboundriver

import (
	"context"
	"encoding/json"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/internal/guard"
	"github.com/rebound-go/rebound/observe"
)

// WithBreaker guards the jobs bound to a dependency ([WithDependency], or
// an error marked with breaker.Dependency) with the circuit breakers kept
// in store: breaker/pgstore on the database River uses, so that every
// client sees one breaker per dependency (or breaker/redisstore, or
// breaker/memstore for a single process). Before a bound job runs, the
// Retrier asks the store; while the dependency's breaker is open, or its
// retry budget is spent, the job is snoozed (river.JobSnooze) until the
// breaker may answer otherwise, plus a spread of up to one first
// cool-down keyed by the job, so the held-back jobs do not all come back
// at once. A snooze spends no attempt: the worker does not run, and the
// next run has the same attempt number. The observer hears the run as
// [observe.Deferred]. After a bound job ran, the Retrier reports what it
// did (see [WithDependency]). A store that fails lets the job run, and the
// error goes to the error handler. nil, the default, guards nothing.
func WithBreaker(store breaker.Store) Option {
	return func(r *Retrier) error {
		r.brk.Store = store
		return nil
	}
}

// WithDependency binds jobs of kind to dependency dep: they run only when
// dep's breaker lets them (see [WithBreaker], which it needs), and each
// run is reported to the breaker: a success; a failure for any error but
// these, which say nothing about dep (neutral): an error marked
// [backoff.Permanent], river.JobCancel or an operator's cancel, a
// river.JobSnooze of the worker's own, a run cut short by a stopping
// client. An error marked with breaker.Dependency for another dependency
// counts against that one instead; such a marked error counts against its
// dependency whatever the job's kind, bound or not. A later binding of the
// same kind replaces an earlier one.
func WithDependency(kind, dep string) Option {
	return func(r *Retrier) error {
		return r.brk.Depend("reboundriver: WithDependency", kind, dep)
	}
}

// rerun reports whether River runs job again: a retry (attempt above 1) or
// a run after a snooze (River counts snoozes in the job's metadata), so
// the breaker's budget meters it.
func rerun(job *rivertype.JobRow) bool {
	if job.Attempt > 1 {
		return true
	}
	var m struct {
		Snoozes int64 `json:"snoozes"`
	}
	return len(job.Metadata) > 0 && json.Unmarshal(job.Metadata, &m) == nil && m.Snoozes > 0
}

// ask asks the breaker before a run of job; when the answer is to hold the
// run back, it tells the observer and returns the snooze to hand River.
func (r *Retrier) ask(octx context.Context, job *rivertype.JobRow, a observe.Attempt, carrier *metadataCarrier) (guard.Pass, error) {
	if r.guard == nil {
		return guard.Pass{}, nil
	}
	p := r.guard.Ask(octx, job.Kind, a.JobID, rerun(job))
	if !p.Deferred() {
		return p, nil
	}
	d, res := r.guard.Deferral(octx, p)
	carrier.seal()
	// River schedules the snooze from its own clock a moment later: the
	// fire time told is never after the one River applies.
	r.notify.Ended(octx, a, res)
	return p, river.JobSnooze(d)
}

// neutral reports whether the attempt res reports says nothing about the
// job's dependency: a run that did not count (a snooze, a stopping
// client) or a job cancelled (by the worker or an operator).
func neutral(res observe.Result) bool {
	return res.Counting != observe.Counted || (res.Err != nil && res.Decision.Outcome == backoff.OutcomePermanent)
}
