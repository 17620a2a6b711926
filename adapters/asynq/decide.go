package reboundasynq

import (
	"errors"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
)

// conclude decides what follows the failed attempt of the task keyed by src
// that ended at end: the decision under rule, and the absolute fire time of
// a retry, exact when exact is set, otherwise rounded up to a whole second.
// last says that asynq archives the task after this run whatever the error
// (its retry count has reached the task's MaxRetry).
func (r *Retrier) conclude(rule backoff.Rule, src backoff.Source, attempt, maxAttempts int, last bool, err error, end time.Time, exact bool) *carrier {
	var dec backoff.Decision
	uncounted := false
	switch {
	case errors.Is(err, asynq.SkipRetry):
		dec = backoff.Decision{Outcome: backoff.OutcomePermanent}
	case !backoff.IsPermanent(err) && !last && !r.counts(err):
		// asynq retries without counting (a snooze): the cap does not
		// apply, and the wait is the rule's delay for this attempt.
		dec = backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: r.policyDelay(rule, attempt, err, src)}
		uncounted = true
	default:
		dec = r.decide(rule, attempt, maxAttempts, err, src)
	}
	c := &carrier{err: err, decision: dec, uncounted: uncounted}
	if dec.Retry() {
		c.fireAt = end.Add(dec.Delay)
		c.exact = exact
		if !exact {
			c.fireAt = roundUp(c.fireAt)
		}
	}
	return c
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
// panicking policy retries after the fallback delay while attempts are left.
func (r *Retrier) decide(rule backoff.Rule, attempt, maxAttempts int, err error, src backoff.Source) backoff.Decision {
	dec, perr := safe.Value("policy", backoff.Decision{}, func() backoff.Decision { return rule.Decide(attempt, err, src) })
	if perr != nil {
		r.notify.Report(perr)
		dec = backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: r.fallback}
		if backoff.IsPermanent(err) {
			dec = backoff.Decision{Outcome: backoff.OutcomePermanent}
		}
	}
	if dec.Retry() && attempt >= maxAttempts {
		dec = backoff.Decision{Outcome: backoff.OutcomeExhausted}
	}
	return dec
}
