package reboundasynq

import (
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/option"
	"github.com/rebound-go/rebound/observe"
)

// An Option configures a [Retrier]. [New] skips a nil Option and returns the
// error of an invalid one.
type Option func(*Retrier) error

// WithPrecise makes retries fire at their exact computed time instead of the
// next whole second: the fire time travels in the task header
// [HeaderRetryAt], and an attempt asynq delivers early waits in the
// middleware until it is due. The wait holds a worker slot and counts
// against the task's timeout. Tasks without headers are rounded up instead
// (build tasks with [Retrier.NewTask] to give them one).
//
// asynq's own tools then read differently from what rebound does: the
// Inspector (and asynqmon) show a retry's NextProcessAt as the whole
// second asynq stores, up to one second before the retry runs, and show a
// task the middleware holds as active before its handler starts. Read the
// due time from the task's [HeaderRetryAt] header (the Inspector's
// TaskInfo.Headers), or from what observers were told.
func WithPrecise() Option {
	return func(r *Retrier) error {
		r.precise = true
		return nil
	}
}

// WithObserver reports every attempt the middleware runs to o:
// AttemptStarted before the handler (its context is passed to the handler)
// and AttemptEnded once asynq has been handed what follows. The package
// docs say when each is called. A nil o reports nothing. A panicking
// observer is recovered and reported to the error handler.
func WithObserver(o observe.Observer) Option {
	return func(r *Retrier) error {
		r.notify.Observer = o
		return nil
	}
}

// WithGiveUp sets the hook told, once, about every task rebound stops
// retrying: its attempts exhausted, or its error permanent
// ([backoff.Permanent], asynq.SkipRetry, asynq.RevokeTask). It is never
// called for a task that later succeeds. A nil f sets none. See
// [observe.GiveUpFunc] for when it runs and what it may do.
func WithGiveUp(f observe.GiveUpFunc) Option {
	return func(r *Retrier) error {
		r.notify.GiveUp = f
		return nil
	}
}

// WithErrorHandler sets the function told about internal errors: recovered
// panics of user code (policy, key function, observer, give-up hook,
// IsFailure function, an error's Error method) as [*observe.PanicError],
// and decisions asynq could not apply as rebound made them. It must be
// safe for concurrent use. A nil f, the default, logs them with
// slog.Default at level Error.
func WithErrorHandler(f func(error)) Option {
	return func(r *Retrier) error {
		r.notify.OnError = f
		return nil
	}
}

// WithFallbackDelay sets the delay a retry waits when the policy (or the
// key function, or the error's own methods while the rule decides) panics.
// d must be positive; the default is [DefaultFallbackDelay].
func WithFallbackDelay(d time.Duration) Option {
	return func(r *Retrier) error {
		switch {
		case d < 0:
			return fmt.Errorf("reboundasynq: WithFallbackDelay: %v is negative, want > 0", d)
		case d == 0:
			return errors.New("reboundasynq: WithFallbackDelay: 0s is zero, want > 0")
		}
		r.fallback = d
		return nil
	}
}

// WithKindRule applies rule, instead of the Retrier's default rule, to
// tasks of the given type: their delays, their attempts cap, and the
// MaxRetry of [Retrier.NewTask] and [Retrier.MaxRetryFor].
func WithKindRule(taskType string, rule backoff.Rule) Option {
	return func(r *Retrier) error {
		if taskType == "" {
			return errors.New("reboundasynq: WithKindRule: task type is empty, want an asynq task type")
		}
		if err := option.CheckRule(rule); err != nil {
			return fmt.Errorf("reboundasynq: WithKindRule(%q): %w", taskType, err)
		}
		if r.kinds == nil {
			r.kinds = make(map[string]backoff.Rule)
		}
		r.kinds[taskType] = rule
		return nil
	}
}

// WithIsFailure tells the middleware about the function set as the server's
// asynq.Config.IsFailure. An error for which it returns false is retried by
// asynq without counting as an attempt; the middleware then neither counts
// it against MaxAttempts nor archives the task for it, waits the rule's
// delay for the attempt, and reports the run to the observer as
// [observe.Snoozed], not as a failure. On the task's last allowed run
// (asynq's retry count has reached MaxRetry) asynq archives the task
// whatever IsFailure says, and the middleware reports it exhausted. A nil f
// counts every error, as asynq does without one.
func WithIsFailure(f func(error) bool) Option {
	return func(r *Retrier) error {
		r.isFailure = f
		return nil
	}
}

// WithKey sets the function that picks a task's jitter source. The default
// is backoff.Key(taskID), which makes one task's schedule reproducible and
// identical on every rebound adapter; key by a business ID carried in the
// payload to give one logical job the same schedule on every engine. A key
// function that panics is recovered (and reported to the error handler) and
// the default key used. A nil f keeps the default.
func WithKey(f func(t *asynq.Task, taskID string) backoff.Source) Option {
	return func(r *Retrier) error {
		r.key = f
		return nil
	}
}
