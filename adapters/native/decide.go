package native

import (
	"fmt"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
)

// DefaultFallbackDelay is the retry delay used when the worker's policy
// panics, unless [WithFallbackDelay] sets another.
const DefaultFallbackDelay = time.Minute

// decide is the worker's retry hook: the rule (with the job's own cap) for
// the failed attempt j.Attempt, jitter keyed by [Worker.source]. It never
// panics: a panic while deciding (a policy's Delay, or errors.As walking a
// hostile error) is reported and the attempt decided by fallbackDecision.
// A retry's delay is clamped to MaxDelay, as the fail script applies it.
func (w *Worker) decide(j *Job, err error) backoff.Decision {
	rule := w.RuleFor(j.Name)
	if j.MaxAttempts > 0 && j.MaxAttempts != rule.MaxAttempts() {
		if r, rerr := backoff.NewRule(rule.Policy(), j.MaxAttempts); rerr == nil {
			rule = r
		}
	}
	src := w.source(j)
	d, perr := safe.Value("policy", backoff.Decision{}, func() backoff.Decision { return rule.Decide(j.Attempt, err, src) })
	if perr != nil {
		w.report(fmt.Errorf("native: deciding attempt %d of job %q on queue %q panicked, deciding with the fallback delay %s: %w",
			j.Attempt, j.ID, j.Queue, w.fallback, perr))
		d = w.fallbackDecision(j, rule, err)
	}
	if d.Retry() {
		// What the fail script applies, and so what observers are told.
		d.Delay = clampDelay(d.Delay)
	}
	return d
}

// fallbackDecision decides failed attempt j.Attempt without the policy:
// permanent if err can be told to be, exhausted at the rule's cap, else a
// retry after the fallback delay.
func (w *Worker) fallbackDecision(j *Job, rule backoff.Rule, err error) backoff.Decision {
	if perm, perr := safe.Value("policy", false, func() bool { return backoff.IsPermanent(err) }); perr == nil && perm {
		return backoff.Decision{Outcome: backoff.OutcomePermanent}
	}
	if j.Attempt >= rule.MaxAttempts() {
		return backoff.Decision{Outcome: backoff.OutcomeExhausted}
	}
	return backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: w.fallback}
}

// Rule returns the worker's default rule: the one applied to job names
// without a rule of their own ([WithKindRule]).
func (w *Worker) Rule() backoff.Rule { return w.rule }

// RuleFor returns the rule applied to jobs of the given name ([WithName]):
// its [WithKindRule] rule, or the default.
func (w *Worker) RuleFor(name string) backoff.Rule {
	if r, ok := w.kinds[name]; ok {
		return r
	}
	return w.rule
}

// source returns j's jitter source: WithKey's choice, or backoff.Key(j.ID).
func (w *Worker) source(j *Job) backoff.Source {
	if w.key == nil {
		return backoff.Key(j.ID)
	}
	src, err := safe.Value("key", backoff.Source{}, func() backoff.Source { return w.key(j) })
	if err != nil {
		w.report(fmt.Errorf("native: key function panicked on job %q of queue %q, keying by job ID: %w", j.ID, j.Queue, err))
		return backoff.Key(j.ID)
	}
	return src
}
