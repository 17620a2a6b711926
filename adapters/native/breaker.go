package native

import (
	"context"
	"strconv"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/observe"
)

// WithBreaker guards the jobs bound to a dependency ([WithDependency], or
// an error marked with breaker.Dependency) with the circuit breakers kept
// in store: breaker/redisstore on the queue's Redis, so that every worker
// process sees one breaker per dependency (breaker/memstore for a single
// process). Before a bound job's handler runs, the worker asks the store;
// while the dependency's breaker is open, or its retry budget is spent,
// the attempt is put back without running the handler and without spending
// an attempt (the defer script: the attempts counter goes back by one, the
// job waits in the delayed set), until the breaker may answer otherwise
// plus a spread of up to one first cool-down keyed by the job, so that the
// held-back jobs do not all come back at once. The job's metadata counts
// its deferrals ([DeferralsKey]). The observer hears the run as
// [observe.Deferred]. After a bound job's handler returned, the worker
// reports what it did (see [WithDependency]). A store that fails lets the
// job run, and the error goes to the error handler. nil, the default,
// guards nothing.
func WithBreaker(store breaker.Store) WorkerOption {
	return func(w *Worker) error {
		w.brk.Store = store
		return nil
	}
}

// WithDependency binds jobs named name (see [WithName]) to dependency dep:
// they run only when dep's breaker lets them (see [WithBreaker], which it
// needs), and each run is reported to the breaker: a success; a failure
// for any error (a timeout and a panic included) but these, which say
// nothing about dep (neutral): an error marked [backoff.Permanent], a run
// cut short by [Worker.Shutdown], a run whose lease was lost. An error
// marked with breaker.Dependency for another dependency counts against that
// one instead; such a marked error counts against its dependency whatever
// the job's name, bound or not. A later binding of the same name replaces
// an earlier one.
func WithDependency(name, dep string) WorkerOption {
	return func(w *Worker) error {
		return w.brk.Depend("native: WithDependency", name, dep)
	}
}

// DeferralsKey is the metadata key under which a job counts the runs a
// breaker deferred (decimal).
const DeferralsKey = "rebound-deferrals"

// deferrals returns how many runs of j a breaker deferred.
func deferrals(j *Job) int {
	n, _ := strconv.Atoi(j.Metadata.Get(DeferralsKey))
	return max(n, 0)
}

// ask asks the breaker whether rj's handler may run. When it may not, the
// attempt is put back, uncounted, to run after the breaker's deferral and
// told to the observer as deferred (once the defer script applied it), and
// ask reports held.
func (w *Worker) ask(rj *runningJob, octx context.Context, a observe.Attempt) (held bool) {
	if w.guard == nil {
		return false
	}
	j := rj.job
	rj.pass = w.guard.Ask(octx, j.Name, j.ID, j.Attempt > 1 || deferrals(j) > 0)
	if !rj.pass.Deferred() {
		return false
	}
	if !rj.ended.CompareAndSwap(false, true) {
		return true // Shutdown put the job back meanwhile, and told the observer
	}
	if w.abandoned.Load() || rj.lost.Load() {
		w.letGo(rj, true)
		return true
	}
	d, res := w.guard.Deferral(octx, rj.pass)
	j.Metadata.Set(DeferralsKey, strconv.Itoa(deferrals(j)+1))
	args := []any{j.ID, rj.token, ceilMicros(d), encodeMeta(j.Metadata)}
	w.store(rj, scriptDefer, w.q.keys.deferKeys, args, res)
	return true
}

// breakerDone reports to the breaker what rj's run did, once: err is its
// error, neutral says it says nothing about the dependency.
func (w *Worker) breakerDone(rj *runningJob, err error, neutral bool) {
	if w.guard == nil || !rj.reported.CompareAndSwap(false, true) {
		return
	}
	w.guard.Done(rj.ctx, rj.pass, err, neutral)
}
