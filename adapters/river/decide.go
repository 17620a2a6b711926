package reboundriver

import (
	"math"
	"strconv"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
)

// maxStoredAttempts is the largest attempt number River's PostgreSQL schema
// can hold (attempt and max_attempts are smallint columns). River numbers a
// job's next run when it fetches it, so a job that failed its 32767th run
// must not be retried: its next fetch would fail with "smallint out of
// range", and with it every fetch of its queue.
const maxStoredAttempts = math.MaxInt16

// attemptsCap is the number of runs a job under rule gets: the rule's
// MaxAttempts, at most maxStoredAttempts.
func attemptsCap(rule backoff.Rule) int {
	return min(rule.MaxAttempts(), maxStoredAttempts)
}

// decide is rule.Decide with the attempts cap River can store, guarded: a
// panic (a foreign policy, or an error whose methods panic while the rule
// reads it) is reported as an *observe.PanicError with Op "policy", and the
// permanent mark and the cap still apply; otherwise the job retries after
// the fallback delay.
func (r *Retrier) decide(rule backoff.Rule, attempt int, err error, src backoff.Source) backoff.Decision {
	d, perr := safe.Value("policy", backoff.Decision{}, func() backoff.Decision { return rule.Decide(attempt, err, src) })
	if perr != nil {
		r.notify.Report(perr)
		d = r.fallbackDecision(rule, attempt, err)
	}
	if d.Retry() && attempt >= attemptsCap(rule) {
		d = backoff.Decision{Outcome: backoff.OutcomeExhausted}
	}
	return d
}

// fallbackDecision is the decision after the policy panicked.
func (r *Retrier) fallbackDecision(rule backoff.Rule, attempt int, err error) backoff.Decision {
	permanent, perr := safe.Value("error text", false, func() bool { return backoff.IsPermanent(err) })
	r.notify.Report(perr)
	switch {
	case permanent:
		return backoff.Decision{Outcome: backoff.OutcomePermanent}
	case attempt >= attemptsCap(rule):
		return backoff.Decision{Outcome: backoff.OutcomeExhausted}
	}
	return backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: r.fallback}
}

// delay is the policy's delay for attempt, or the fallback delay if it
// panics (reported as for decide).
func (r *Retrier) delay(rule backoff.Rule, attempt int, src backoff.Source) time.Duration {
	d, perr := safe.Value("policy", r.fallback, func() time.Duration { return backoff.Delay(rule.Policy(), attempt, src) })
	r.notify.Report(perr)
	return d
}

// source returns job's jitter source: WithKey's function, or
// backoff.Key(job ID) when there is none or it panics (reported as an
// *observe.PanicError with Op "key").
func (r *Retrier) source(job *rivertype.JobRow) backoff.Source {
	def := backoff.Key(strconv.FormatInt(job.ID, 10))
	if r.key == nil {
		return def
	}
	src, perr := safe.Value("key", def, func() backoff.Source { return r.key(job) })
	r.notify.Report(perr)
	return src
}
