package reboundriver

import (
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/option"
	"github.com/rebound-go/rebound/observe"
)

// An Option configures a [Retrier].
type Option func(*Retrier) error

// WithKindRule applies rule, instead of the Retrier's default rule, to jobs of
// the given kind: their delays, their attempts cap and the max_attempts they
// are inserted with.
func WithKindRule(kind string, rule backoff.Rule) Option {
	return func(r *Retrier) error {
		if kind == "" {
			return errors.New("reboundriver: WithKindRule: kind is empty, want a River job kind")
		}
		if err := option.CheckRule(rule); err != nil {
			return fmt.Errorf("reboundriver: WithKindRule(%q): %w", kind, err)
		}
		if r.kinds == nil {
			r.kinds = make(map[string]backoff.Rule)
		}
		r.kinds[kind] = rule
		return nil
	}
}

// WithKey sets the function that picks a job's jitter source. The default,
// also used when key is nil, is backoff.Key(strconv.FormatInt(job.ID, 10)),
// which makes one job's schedule reproducible and identical on every
// rebound adapter. A key function that panics is recovered: the default key
// is used and the panic reported as an [*observe.PanicError] with Op "key".
func WithKey(key func(job *rivertype.JobRow) backoff.Source) Option {
	return func(r *Retrier) error {
		r.key = key
		return nil
	}
}

// WithObserver reports every attempt the middleware sees to o (nil: none):
// AttemptStarted before the worker runs (its context is passed down to the
// worker) and AttemptEnded once River has been handed the decision: when
// the middleware returns, or for a retry when River asks NextRetry for its
// time (snoozes and runs cut short by a stopping client are reported with
// [observe.Result.Counting] set; see [Retrier.Work]). The attempt's Carrier
// reads the job's metadata and, until the worker returns, writes with
// river.MetadataSet, so values set during one attempt are read back by the
// next. A panic in o is recovered and reported.
func WithObserver(o observe.Observer) Option {
	return func(r *Retrier) error {
		r.notify.Observer = o
		return nil
	}
}

// WithGiveUp sets the hook told about every job the rule gives up on (nil:
// none): once per job that ends exhausted (River discards it) or permanent
// (River cancels it, including a job cancelled with river.JobCancel, by an
// ErrorHandler or with Client.JobCancel while it runs), after the observer
// was told the same attempt, never for a job that later succeeds. See
// [observe.GiveUpFunc].
func WithGiveUp(hook observe.GiveUpFunc) Option {
	return func(r *Retrier) error {
		r.notify.GiveUp = hook
		return nil
	}
}

// WithErrorHandler sets where internal errors go: recovered panics of user
// code (policy, key function, observer, give-up hook, an error's own
// methods), each an [*observe.PanicError]. nil, the default, logs them with
// slog.Default at level Error. A panic in handle is logged.
func WithErrorHandler(handle func(error)) Option {
	return func(r *Retrier) error {
		r.notify.OnError = handle
		return nil
	}
}

// WithFallbackDelay sets the retry delay used when the policy panics (a
// foreign backoff.Policy with a bug, or an error whose methods panic while
// the rule reads it). d must be positive; the default is
// [DefaultFallbackDelay].
func WithFallbackDelay(d time.Duration) Option {
	return func(r *Retrier) error {
		if d <= 0 {
			return fmt.Errorf("reboundriver: WithFallbackDelay: %v is not positive, want > 0", d)
		}
		r.fallback = d
		return nil
	}
}
