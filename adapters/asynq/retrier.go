package reboundasynq

import (
	"fmt"
	"math"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/guard"
	"github.com/rebound-go/rebound/internal/notify"
	"github.com/rebound-go/rebound/internal/option"
)

// System is the value of [observe.Attempt.System] for asynq tasks.
const System = "asynq"

// DefaultFallbackDelay is the delay a retry waits when the policy panics,
// unless [WithFallbackDelay] sets another.
const DefaultFallbackDelay = time.Minute

// A Retrier applies [backoff.Rule]s to asynq tasks: one default rule, and
// one per task type given with [WithKindRule]. Its [Retrier.RetryDelay]
// method is an asynq.RetryDelayFunc and its [Retrier.Middleware] method an
// asynq.MiddlewareFunc; use both, from the same Retrier. A Retrier is safe
// for concurrent use, by any number of servers.
type Retrier struct {
	rule      backoff.Rule
	kinds     map[string]backoff.Rule
	precise   bool
	notify    notify.Notifier
	fallback  time.Duration
	isFailure func(error) bool
	key       func(t *asynq.Task, taskID string) backoff.Source
	flight    flight
	// grace is how long after a run's context ended without the
	// middleware deciding it rebound waits for asynq to hand the failure
	// to RetryDelay before it concludes that asynq put the task back.
	grace time.Duration
	brk   guard.Config // WithBreaker's store and WithDependency's bindings
	guard *guard.Guard // built from brk; nil guards nothing
}

// interruptGrace is the default grace: asynq hands a failure to RetryDelay
// within microseconds of the context ending, after the server's own
// ErrorHandler returns.
const interruptGrace = 2 * time.Second

// New returns a Retrier that applies rule to every task type not given its
// own rule with [WithKindRule]. The rule must come from [backoff.NewRule].
// A zero Rule or an invalid option is an error.
func New(rule backoff.Rule, opts ...Option) (*Retrier, error) {
	if err := option.CheckRule(rule); err != nil {
		return nil, fmt.Errorf("reboundasynq: %w", err)
	}
	r := &Retrier{
		rule:     rule,
		fallback: DefaultFallbackDelay,
		notify:   notify.Notifier{Prefix: "reboundasynq"},
		grace:    interruptGrace,
	}
	if err := option.Apply(r, opts); err != nil {
		return nil, err
	}
	if err := r.brk.Validate("reboundasynq"); err != nil {
		return nil, err
	}
	r.guard = guard.New(r.brk, &r.notify, System)
	return r, nil
}

// Rule returns the default rule: the one applied to task types without a
// rule of their own.
func (r *Retrier) Rule() backoff.Rule { return r.rule }

// RuleFor returns the rule applied to tasks of the given type.
func (r *Retrier) RuleFor(taskType string) backoff.Rule {
	if rule, ok := r.kinds[taskType]; ok {
		return rule
	}
	return r.rule
}

// MaxRetry returns the enqueue option asynq.MaxRetry for the default rule;
// see [Retrier.MaxRetryFor].
func (r *Retrier) MaxRetry() asynq.Option { return r.maxRetry(r.rule) }

// MaxRetryFor returns the enqueue option asynq.MaxRetry for the rule of the
// given task type: MaxAttempts, one retry more than the rule allows, so
// that asynq hands rebound every failure of the rule's last attempt, even
// one whose context ended before the handler returned (the middleware
// archives the task after that attempt either way). It is capped at
// math.MaxInt32, the most asynq stores. [Retrier.NewTask] sets it.
func (r *Retrier) MaxRetryFor(taskType string) asynq.Option { return r.maxRetry(r.RuleFor(taskType)) }

func (r *Retrier) maxRetry(rule backoff.Rule) asynq.Option {
	return asynq.MaxRetry(min(rule.MaxAttempts(), math.MaxInt32))
}

// maxStoredAttempts is the largest attempts cap asynq can honour: it
// stores MaxRetry and the retry count as int32, so a task runs at most
// math.MaxInt32+1 times.
const maxStoredAttempts = math.MaxInt32 + 1
