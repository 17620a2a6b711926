package reboundriver

import (
	"fmt"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
)

// NextRetry implements river.ClientRetryPolicy. It returns the time the
// middleware decided for the attempt that just failed. For a job the
// middleware did not see (it is not installed, the job's row could not be
// decoded, or River's rescuer is retrying a stuck job) it applies the kind's
// rule to the attempt number without an error. The result is never zero and
// never before now.
func (r *Retrier) NextRetry(job *rivertype.JobRow) (t time.Time) {
	now := r.now()
	defer func() {
		if p := recover(); p != nil { // a bug of the Retrier's own: River must still get a time
			r.notify.Report(fmt.Errorf("reboundriver: NextRetry panicked, retrying after the fallback delay: %v", p))
			t = now.Add(r.fallback)
		}
	}()
	if job == nil {
		return now.Add(r.fallback)
	}
	if t := r.WorkerNextRetry(job); !t.IsZero() {
		return t
	}
	rule := r.RuleFor(job.Kind)
	src := r.source(job)
	d := r.decide(rule, job.Attempt, nil, src)
	delay := d.Delay
	if !d.Retry() {
		// River retries a job the rule calls exhausted only when the
		// middleware did not run; wait the policy's delay for the attempt.
		delay = r.delay(rule, job.Attempt, src)
	}
	return later(now.Add(delay), now)
}

// WorkerNextRetry returns the retry time the middleware decided for job's
// failed attempt, or the zero time ("no opinion") when it has none, so River
// goes on to the client's retry policy. Use it from a worker that overrides
// river.Worker's NextRetry, typically for a kind given its own rule with
// [WithKindRule]:
//
//	func (w *SyncWorker) NextRetry(job *river.Job[SyncArgs]) time.Time {
//		return w.retrier.WorkerNextRetry(job.JobRow)
//	}
//
// A non-zero result is never before now. Handing it out reports the
// attempt to the observer, with the time River is given.
func (r *Retrier) WorkerNextRetry(job *rivertype.JobRow) time.Time {
	if job == nil {
		return time.Time{}
	}
	e, ok := r.store.take(job)
	if !ok {
		return time.Time{}
	}
	res := e.res
	res.FireAt = later(e.fireAt, r.now())
	if cerr, ok := engineCancel(e.ctx); ok {
		// Cancelled remotely after the attempt ended: River stores the
		// job cancelled whatever time it is given.
		res.Err, res.Decision, res.FireAt = cerr, backoff.Decision{Outcome: backoff.OutcomePermanent}, time.Time{}
		r.notify.Ended(e.octx, e.a, res)
		return later(e.fireAt, r.now())
	}
	r.notify.Ended(e.octx, e.a, res)
	return res.FireAt
}

// forgotten reports an attempt whose retry River never asked for. River
// then decided what follows on its own: the job was cancelled remotely as
// the attempt ended (reported permanent, as River stores it cancelled),
// or River acted without the Retrier: a worker's NextRetry answered
// without WorkerNextRetry, a middleware outside the Retrier turned the
// error into something else (a snooze, a success, a cancel), or an
// ErrorHandler cancelled the job. rebound knows none of those decisions,
// so it reports none: the attempt is told as the engine's
// ([observe.Result.EngineDecided]), with no decision or fire time, and
// the job is not given up.
func (r *Retrier) forgotten(e *entry) {
	res := e.res
	res.FireAt = time.Time{}
	if cerr, ok := engineCancel(e.ctx); ok {
		res.Err, res.Decision = cerr, backoff.Decision{Outcome: backoff.OutcomePermanent}
	} else {
		res.Decision = backoff.Decision{}
	}
	r.notify.Ended(e.octx, e.a, res)
}

// Resolution is the precision of the fire times a Retrier hands River: they
// are rounded up to whole milliseconds, the coarsest precision River's
// drivers store (SQLite rounds to the nearest millisecond, PostgreSQL to
// the microsecond), so the stored time is never before the computed one.
const Resolution = time.Millisecond

// later returns t, or now when t is zero or before now, rounded up to a
// whole [Resolution].
func later(t, now time.Time) time.Time {
	if t.Before(now) {
		t = now
	}
	return ceil(t)
}

// ceil rounds t up to a whole Resolution.
func ceil(t time.Time) time.Time {
	r := t.Truncate(Resolution)
	if r.Before(t) {
		r = r.Add(Resolution)
	}
	return r
}
