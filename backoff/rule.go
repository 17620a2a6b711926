package backoff

import (
	"fmt"
	"time"
)

// Outcome is what a [Rule] decided about a failed attempt.
type Outcome uint8

const (
	// OutcomeRetry means run the job again after the decision's Delay.
	OutcomeRetry Outcome = iota + 1
	// OutcomeExhausted means the job has run MaxAttempts times; give up.
	OutcomeExhausted
	// OutcomePermanent means the error was marked [Permanent]; give up at
	// once, whatever attempts are left.
	OutcomePermanent
)

// String returns "retry", "exhausted" or "permanent".
func (o Outcome) String() string {
	switch o {
	case OutcomeRetry:
		return "retry"
	case OutcomeExhausted:
		return "exhausted"
	case OutcomePermanent:
		return "permanent"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Decision is a [Rule]'s verdict on one failed attempt.
type Decision struct {
	// Outcome says whether to retry or give up, and why.
	Outcome Outcome
	// Delay is the wait before the next attempt when Outcome is OutcomeRetry,
	// otherwise 0. It is the policy's delay, raised to the error's
	// [RetryAfter] hint when the hint is longer.
	Delay time.Duration
}

// Retry reports whether the decision is to run the job again.
func (d Decision) Retry() bool { return d.Outcome == OutcomeRetry }

// A Rule is a policy with an attempts cap: the whole retry behaviour a job
// system needs. The zero Rule is not valid; build one with [NewRule], or
// read one with [ParseRule].
//
// A Rule has a text form, "POLICY x MAX" as in "jitter(exponential(100ms,
// 10s)) x 5", and loads the way a policy in a [Spec] does: it implements
// encoding.TextMarshaler and TextUnmarshaler (so a rule loads from JSON,
// YAML or an environment variable) and, through a pointer, flag.Value and
// flag.Getter:
//
//	rule := backoff.Must(backoff.NewRule(def, 5))
//	flag.Var(&rule, "retry", "retry rule, e.g. 'jitter(exponential(100ms, 10s)) x 5'")
//
// The zero Rule marshals to "", which does not unmarshal (it names no
// policy), so leave an unset Rule out of JSON with the omitzero option.
type Rule struct {
	policy      Policy
	maxAttempts int
}

// NewRule combines a policy with MaxAttempts, the number of runs a job gets
// in total including the first (MaxAttempts 1 never retries). p must not be
// nil (nor an empty [Spec]) and maxAttempts must be at least 1.
func NewRule(p Policy, maxAttempts int) (Rule, error) {
	if isNilPolicy(p) {
		return Rule{}, fmt.Errorf("backoff: rule policy is nil, want a policy")
	}
	if maxAttempts < 1 {
		return Rule{}, fmt.Errorf("backoff: MaxAttempts %d is below 1, want the total number of runs (>= 1)", maxAttempts)
	}
	return Rule{policy: p, maxAttempts: maxAttempts}, nil
}

// Policy returns the rule's policy.
func (r Rule) Policy() Policy { return r.policy }

// MaxAttempts returns the total number of runs the rule allows.
func (r Rule) MaxAttempts() int { return r.maxAttempts }

// Decide turns a failed attempt into a decision. attempt is the 1-based number
// of the attempt that failed, err its error, src the job's jitter source.
//
// In order: an error marked [Permanent] gives up with OutcomePermanent; an attempt
// at or past MaxAttempts gives up with OutcomeExhausted; otherwise the job is retried
// after the policy's delay, or after the error's [RetryAfter] hint if that is
// longer. Attempt numbers below 1 count as 1. A zero Rule gives up with
// OutcomeExhausted rather than retrying without bound.
func (r Rule) Decide(attempt int, err error, src Source) Decision {
	if IsPermanent(err) {
		return Decision{Outcome: OutcomePermanent}
	}
	if attempt < 1 {
		attempt = 1
	}
	if r.policy == nil || attempt >= r.maxAttempts {
		return Decision{Outcome: OutcomeExhausted}
	}
	d := Delay(r.policy, attempt, src)
	if hint, ok := RetryAfterHint(err); ok && hint > d {
		d = hint
	}
	return Decision{Outcome: OutcomeRetry, Delay: d}
}

// String returns "POLICY x MAX", e.g. "exponential(1s, 1m) x 5".
func (r Rule) String() string {
	return fmt.Sprintf("%s x %d", stringOf(r.policy), r.maxAttempts)
}

// RetryDelayFunc is the framework-neutral form of a retry delay: the wait
// after failed attempt number attempt (1-based) with error err, jitter drawn
// from src. Adapters translate their engine's hook into this shape.
type RetryDelayFunc func(attempt int, err error, src Source) time.Duration

// DelayFunc returns the rule's delay as a [RetryDelayFunc]: the retry delay
// of [Rule.Decide], or 0 where the decision is to give up (the engine is
// expected to stop on its own count; use Decide to tell the cases apart).
func (r Rule) DelayFunc() RetryDelayFunc {
	return func(attempt int, err error, src Source) time.Duration {
		return r.Decide(attempt, err, src).Delay
	}
}

// Step is one row of a [Schedule].
type Step struct {
	// Attempt is the 1-based number of the failed attempt.
	Attempt int
	// Delay is the wait after it.
	Delay time.Duration
	// Total is the sum of the delays up to and including this one: how long
	// after the first failure this retry fires, ignoring run time. It
	// saturates at the largest Duration rather than overflowing.
	Total time.Duration
}

// Schedule tables the first n delays of p for src: attempts 1..n. With a
// keyed Source it is the exact schedule one job will follow. n below 1 gives
// an empty table, and n above MaxScheduleSteps gives MaxScheduleSteps rows.
func Schedule(p Policy, src Source, n int) []Step {
	if n < 1 {
		return nil
	}
	n = min(n, MaxScheduleSteps)
	steps := make([]Step, n)
	var total time.Duration
	for i := range steps {
		d := Delay(p, i+1, src)
		if total > maxDuration-d {
			total = maxDuration
		} else {
			total += d
		}
		steps[i] = Step{Attempt: i + 1, Delay: d, Total: total}
	}
	return steps
}

// MaxScheduleSteps is the most rows [Schedule] returns. It is far beyond
// any real attempts cap and keeps a mistaken n from allocating without bound.
const MaxScheduleSteps = 100_000

const maxDuration = time.Duration(1<<63 - 1)
