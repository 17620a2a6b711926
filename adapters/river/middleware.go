package reboundriver

import (
	"context"
	"errors"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/guard"
	"github.com/rebound-go/rebound/observe"
)

// Work runs one attempt of job and decides what follows a failure:
//
//   - a permanent error (backoff.Permanent) is returned as
//     river.JobCancel(err), so the job ends cancelled;
//   - an attempt at or past the cap ends the job: the running job's
//     MaxAttempts is lowered to its attempt number and River discards it;
//   - otherwise the retry time is recorded for NextRetry, which reports the
//     attempt when River asks for it.
//
// Before the worker runs, job.MaxAttempts is set to the rule's cap, so the
// worker and River both see the cap the rule sets. A cap above 32767 is
// applied as 32767: PostgreSQL stores attempt numbers in a smallint, and a
// retry after the 32767th run would stop the job's queue. Snoozes and the
// worker's own river.JobCancel keep River's meaning. A panic in the worker
// is decided like an error and then re-raised, or, when its value is an
// error marked permanent, returned as river.JobCancel.
//
// Two kinds of run are not attempts in River's eyes, and the observer hears
// them as such ([observe.Result.Counting]) rather than as failures: a
// snooze (river.JobSnooze, reported as [observe.Snoozed], firing when the
// snooze ends) and a run cut short by the client stopping (Stop's soft-stop
// timeout or StopAndCancel cancels the job's context and the worker returns
// the cancellation; reported as [observe.Interrupted], the job being put
// back to run at once). River reruns both without counting them or calling
// NextRetry.
//
// With a breaker ([WithBreaker]), a job bound to a dependency asks it
// first: a run the breaker holds back is snoozed without running the
// worker ([observe.Deferred]), and a run it lets through is reported to it
// when the worker returns.
func (r *Retrier) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) (err error) {
	if job == nil || ctx.Value(workingKey{}) == job {
		// Installed twice (as a plugin and as middleware): the outer
		// Work is already at it.
		return doInner(ctx)
	}
	rule := r.RuleFor(job.Kind)
	limit := attemptsCap(rule)
	job.MaxAttempts = limit
	carrier := newMetadataCarrier(ctx, job.Metadata)

	a := observe.Attempt{
		System:      System,
		Queue:       job.Queue,
		JobID:       strconv.FormatInt(job.ID, 10),
		Kind:        job.Kind,
		Number:      job.Attempt,
		MaxAttempts: limit,
		Carrier:     carrier,
	}
	octx := context.WithValue(r.notify.Started(ctx, a), workingKey{}, job)
	pass, snooze := r.ask(octx, job, a, carrier)
	if snooze != nil {
		return snooze
	}

	returned := false
	defer func() {
		if returned {
			return
		}
		carrier.seal()
		// The worker panicked (or called runtime.Goexit): decide as for an
		// error, report, and let the panic carry on to River, which records
		// it with its stack; a panic with an error marked permanent cancels
		// the job instead, which a panic cannot tell River.
		p := recover()
		var perr error
		if p != nil {
			perr = &observe.PanicError{Op: "handler", Value: p, Stack: debug.Stack()}
		} else {
			perr = errors.New("worker goroutine exited without returning")
		}
		if ret, permanent := r.settle(ctx, octx, job, rule, a, pass, perr); permanent {
			if _, ok := ret.(*rivertype.JobCancelError); !ok {
				ret = river.JobCancel(ret)
			}
			err = ret
			return
		}
		if p != nil {
			panic(p)
		}
	}()
	err = doInner(octx)
	returned = true
	carrier.seal()
	err, _ = r.settle(ctx, octx, job, rule, a, pass, err)
	return err
}

// settle turns an attempt's error into the error to hand back to River,
// reports the run to the breaker (pass is the breaker's answer before it),
// and reports the attempt: at once when River acts on the returned error alone,
// or, for a retry, when River asks NextRetry for its time (see
// [Retrier.NextRetry]). permanent says the job ends cancelled.
func (r *Retrier) settle(ctx, octx context.Context, job *rivertype.JobRow, rule backoff.Rule, a observe.Attempt, pass guard.Pass, raw error) (_ error, permanent bool) {
	res, err, retry := r.outcome(ctx, job, rule, raw)
	r.guard.Done(octx, pass, raw, neutral(res))
	if !retry {
		r.notify.Ended(octx, a, res)
		return err, res.Err != nil && res.Decision.Outcome == backoff.OutcomePermanent
	}
	r.store.put(job, &entry{id: job.ID, attempt: job.Attempt, fireAt: res.FireAt, ctx: ctx, octx: octx, a: a, res: res})
	return err, false
}

// outcome decides what follows an attempt that returned err: the result to
// report, the error to hand back to River, and whether River will ask
// NextRetry for a retry time.
func (r *Retrier) outcome(ctx context.Context, job *rivertype.JobRow, rule backoff.Rule, raw error) (observe.Result, error, bool) {
	if raw == nil {
		return observe.Result{}, nil, false
	}
	now := r.now()
	v, err := r.inspect(ctx, raw)

	if v.snooze != nil {
		// Not an attempt: River reruns the job after the snooze without
		// counting it, and does not call NextRetry.
		d := max(v.snooze.Duration, 0)
		return uncounted(err, observe.Snoozed, d, now), err, false
	}
	if cerr, ok := engineCancel(ctx); ok {
		// River stores the cause it cancelled the job's context with, not
		// what the worker returned: the observer hears that text.
		return observe.Result{Err: cerr, Decision: backoff.Decision{Outcome: backoff.OutcomePermanent}}, err, false
	}
	if v.cancelled {
		return observe.Result{Err: err, Decision: backoff.Decision{Outcome: backoff.OutcomePermanent}}, err, false
	}
	if v.stopping {
		// The client is stopping: River puts the job back as it was, to
		// run at once, without counting the attempt or calling NextRetry.
		return uncounted(err, observe.Interrupted, 0, now), err, false
	}

	d := r.decide(rule, job.Attempt, err, r.source(job))
	switch d.Outcome {
	case backoff.OutcomePermanent:
		return observe.Result{Err: err, Decision: d}, river.JobCancel(err), false
	case backoff.OutcomeRetry:
		return observe.Result{Err: err, Decision: d, FireAt: ceil(now.Add(d.Delay))}, err, true
	default:
		// Exhausted: River discards a job whose attempt has reached its
		// MaxAttempts, and this is the same *JobRow it checks.
		job.MaxAttempts = job.Attempt
		return observe.Result{Err: err, Decision: d}, err, false
	}
}

// uncounted is the result of a run River does not count as an attempt: it
// runs the job again after d, as River's own decision rather than the
// rule's.
func uncounted(err error, why observe.Counting, d time.Duration, now time.Time) observe.Result {
	return observe.Result{
		Err:      err,
		Decision: backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: d},
		FireAt:   now.Add(d),
		Counting: why,
	}
}

// stopping reports whether River takes err as its client stopping, which it
// does when the job's context was cancelled with the cause River's Stop and
// StopAndCancel use and the worker returned context.Canceled or that cause.
// River's cause is an unexported value, so any cause other than the ones
// River uses for something else (a remote cancellation, a timeout) or a
// plain cancellation is taken as River's: a plain cancellation of the
// context the client was started with reaches jobs as context.Canceled, and
// River counts that run as a failed attempt.
func stopping(ctx context.Context, err error) bool {
	if ctx.Err() == nil {
		return false
	}
	switch cause := context.Cause(ctx); {
	case cause == nil,
		errors.Is(cause, context.Canceled),
		errors.Is(cause, context.DeadlineExceeded),
		errors.Is(cause, rivertype.ErrJobCancelledRemotely):
		return false
	default:
		return errors.Is(err, context.Canceled) || errors.Is(err, cause)
	}
}

// engineCancel returns the error every adapter reports for the engine's
// cancel ([*observe.CancelledError], reading as the text River stores)
// when ctx was cancelled by a Client.JobCancel of the running job.
func engineCancel(ctx context.Context) (error, bool) {
	cause := context.Cause(ctx)
	if !errors.Is(cause, rivertype.ErrJobCancelledRemotely) {
		return nil, false
	}
	return &observe.CancelledError{Engine: cause.Error(), Cause: cause}, true
}

// workingKey marks a context the Retrier's Work runs the job with; its value
// is the job.
type workingKey struct{}
