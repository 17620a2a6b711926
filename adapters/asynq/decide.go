package reboundasynq

import (
	"math"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// MaxDelay is the longest delay a retry waits: a longer one (a policy or a
// retry-after hint near the time.Duration limit) is cut to it. It is the
// Duration limit, about 292 years, less the two seconds rounding a fire
// time up to a whole second may add, so that the delay asynq is handed
// never overflows into a retry at once. asynq stores the fire time as Unix
// seconds in a Redis sorted-set score, exact up to 2^53 seconds, which
// holds any time a Duration can reach.
const MaxDelay = math.MaxInt64 - 2*time.Second

// judge decides what follows the handler's outcome c (the middleware's
// error; nil for a success) of run ru, which ended at end while the task's
// context was live: the outcome asynq will apply when it gets c. It
// returns the result for observers, and whether its FireAt is exact (to
// be stored in HeaderRetryAt).
func (r *Retrier) judge(ru *run, c *carrier, end time.Time) (observe.Result, bool) {
	switch {
	case c == nil:
		return observe.Result{}, false
	case c.revoke, c.skip:
		return observe.Result{Err: c.err, Decision: backoff.Decision{Outcome: backoff.OutcomePermanent}}, false
	}
	exact := r.precise && ru.headers != nil
	return r.failure(ru, c.err, end, exact, !ru.last)
}

// failure decides a failed run of ru with error e at time from, under the
// rule, keyed by the task. snooze allows IsFailure to make it a run that
// does not count (asynq retries it uncounted, unless it is the task's last
// allowed run). A retry fires at from plus its delay, exactly when exact
// is set and the time can be carried, otherwise rounded up to a whole
// second.
func (r *Retrier) failure(ru *run, e error, from time.Time, exact, snooze bool) (observe.Result, bool) {
	src := r.source(ru.task, ru.id)
	res := observe.Result{Err: e}
	if snooze && !r.isPermanent(e) && !r.counts(e) {
		// asynq retries without counting: the cap does not apply, and the
		// wait is the rule's delay for this attempt.
		res.Decision = backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: r.policyDelay(ru.rule, ru.a.Number, e, src)}
		res.Counting = observe.Snoozed
	} else {
		res.Decision = r.decide(ru.rule, ru.a.Number, ru.a.MaxAttempts, e, src)
	}
	if !res.Decision.Retry() {
		return res, false
	}
	res.Decision.Delay = min(res.Decision.Delay, MaxDelay)
	res.FireAt, exact = fireTime(from, res.Decision.Delay, exact)
	return res, exact
}

// fireTime is the time a retry delayed by d from from fires: exact when
// asked for, otherwise rounded up to the whole second asynq stores.
func fireTime(from time.Time, d time.Duration, exact bool) (time.Time, bool) {
	at := from.Add(d)
	if exact {
		return at, true
	}
	return roundUp(at), false
}

// roundUp returns the first whole Unix second at or after t.
func roundUp(t time.Time) time.Time {
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}

// counts reports whether err counts as an attempt (asynq.Config.IsFailure).
// A panicking IsFailure function counts it, as asynq's would crash.
func (r *Retrier) counts(err error) bool {
	if r.isFailure == nil {
		return true
	}
	ok, perr := safe.Value("is-failure", true, func() bool { return r.isFailure(err) })
	r.notify.Report(perr)
	return ok
}

// isPermanent reports whether err is marked backoff.Permanent; an error
// whose methods panic while it is asked is not.
func (r *Retrier) isPermanent(err error) bool {
	ok, perr := safe.Value("policy", false, func() bool { return backoff.IsPermanent(err) })
	r.notify.Report(perr)
	return ok
}

// source returns the jitter source of task t with ID id: WithKey's choice,
// or backoff.Key(id).
func (r *Retrier) source(t *asynq.Task, id string) backoff.Source {
	if r.key == nil {
		return backoff.Key(id)
	}
	src, perr := safe.Value("key", backoff.Key(id), func() backoff.Source { return r.key(t, id) })
	r.notify.Report(perr)
	return src
}

// policyDelay is rule's delay after attempt, carrying on with the curve past
// the cap (asynq retries on its own count there). A panicking policy gives
// the fallback delay.
func (r *Retrier) policyDelay(rule backoff.Rule, attempt int, err error, src backoff.Source) time.Duration {
	d, perr := safe.Value("policy", r.fallback, func() time.Duration {
		if dec := rule.Decide(attempt, err, src); dec.Retry() {
			return dec.Delay
		}
		return backoff.Delay(rule.Policy(), attempt, src)
	})
	r.notify.Report(perr)
	return d
}

// decide is rule's decision after attempt for the task keyed by src, with
// maxAttempts possibly below the rule's (asynq's MaxRetry is lower). A
// panicking policy retries after the fallback delay while attempts are
// left; a permanent error stays permanent.
func (r *Retrier) decide(rule backoff.Rule, attempt, maxAttempts int, err error, src backoff.Source) backoff.Decision {
	dec, perr := safe.Value("policy", backoff.Decision{}, func() backoff.Decision { return rule.Decide(attempt, err, src) })
	if perr != nil {
		r.notify.Report(perr)
		dec = backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: r.fallback}
		if r.isPermanent(err) {
			dec = backoff.Decision{Outcome: backoff.OutcomePermanent}
		}
	}
	if dec.Retry() && attempt >= maxAttempts {
		dec = backoff.Decision{Outcome: backoff.OutcomeExhausted}
	}
	return dec
}
