package reboundasynq

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
)

// System is the value of [observe.Attempt.System] for asynq tasks.
const System = "asynq"

// HeaderRetryAt is the task header under which precise mode stores the exact
// time the next attempt is due, as decimal Unix nanoseconds.
const HeaderRetryAt = "rebound-retry-at"

// DefaultFallbackDelay is the delay used when the policy panics, unless
// [WithFallbackDelay] sets another.
const DefaultFallbackDelay = time.Minute

// maxPreciseWait bounds how long precise mode holds an early attempt. asynq
// delivers a task at most one second early (it truncates to whole seconds);
// a longer wait means clocks disagree or the header is bogus, and the
// attempt runs rather than holding a worker indefinitely.
const maxPreciseWait = time.Second

// A Retrier applies one [backoff.Rule] to asynq tasks. Its [Retrier.RetryDelay]
// method is an asynq.RetryDelayFunc and its [Retrier.Middleware] method an
// asynq.MiddlewareFunc; use both, from the same Retrier. A Retrier is
// immutable and safe for concurrent use.
type Retrier struct {
	rule      backoff.Rule
	precise   bool
	observer  observe.Observer
	onError   func(error)
	fallback  time.Duration
	isFailure func(error) bool
	key       func(t *asynq.Task, taskID string) backoff.Source
}

// An Option configures a [Retrier].
type Option func(*Retrier)

// WithPrecise makes retries fire at their exact computed time instead of the
// next whole second: the fire time is stored in the task header
// [HeaderRetryAt], and an attempt asynq delivers early waits in the
// middleware until it is due. The wait holds a worker slot and counts
// against the task's timeout. Tasks without headers are rounded up instead.
func WithPrecise() Option { return func(r *Retrier) { r.precise = true } }

// WithObserver reports every attempt the middleware runs to o: AttemptStarted
// before the handler, AttemptEnded with the decision once it is made. A nil o
// reports nothing. A panicking observer is recovered and reported to the
// error handler.
func WithObserver(o observe.Observer) Option { return func(r *Retrier) { r.observer = o } }

// WithErrorHandler sets the function told when a part of rebound fails while
// asynq runs: a panic of the policy, the observer or the IsFailure function
// (as a [*PanicError]). It must be safe for concurrent use and must not
// panic itself (such a panic is recovered and dropped).
func WithErrorHandler(f func(error)) Option { return func(r *Retrier) { r.onError = f } }

// WithFallbackDelay sets the delay used when the policy panics. It must not
// be negative; [DefaultFallbackDelay] applies otherwise.
func WithFallbackDelay(d time.Duration) Option { return func(r *Retrier) { r.fallback = d } }

// WithIsFailure tells the middleware about the function set as the server's
// asynq.Config.IsFailure. An error for which it returns false is retried by
// asynq without counting as an attempt; the middleware then neither counts
// it against MaxAttempts nor archives the task for it, waits the rule's
// delay for the attempt, and reports the run to the observer as
// [observe.Snoozed], not as a failure. On the task's last allowed run
// (asynq's retry count has reached MaxRetry) asynq archives the task
// whatever IsFailure says, and the middleware reports it exhausted.
func WithIsFailure(f func(error) bool) Option { return func(r *Retrier) { r.isFailure = f } }

// WithKey sets the function that picks a task's jitter source. The default
// is backoff.Key(taskID), which makes one task's schedule reproducible and
// identical on every rebound adapter; key by a business ID carried in the
// payload to give one logical job the same schedule on every engine. A key
// function that panics is recovered (and reported to the error handler) and
// the default key used. A nil f keeps the default.
func WithKey(f func(t *asynq.Task, taskID string) backoff.Source) Option {
	return func(r *Retrier) { r.key = f }
}

// New returns a Retrier for rule. The rule must come from [backoff.NewRule];
// a zero Rule or an invalid option is an error.
func New(rule backoff.Rule, opts ...Option) (*Retrier, error) {
	if rule.Policy() == nil || rule.MaxAttempts() < 1 {
		return nil, errors.New("reboundasynq: rule has no policy, want one built with backoff.NewRule")
	}
	r := &Retrier{rule: rule, fallback: DefaultFallbackDelay}
	for _, o := range opts {
		if o != nil {
			o(r)
		}
	}
	if r.fallback < 0 {
		return nil, fmt.Errorf("reboundasynq: fallback delay %v is negative, want 0 or more", r.fallback)
	}
	return r, nil
}

// Rule returns the rule the Retrier applies.
func (r *Retrier) Rule() backoff.Rule { return r.rule }

// MaxRetry returns the enqueue option asynq.MaxRetry(MaxAttempts-1), so that
// asynq's own retry counters and dashboards agree with the rule. The
// middleware enforces the cap without it.
func (r *Retrier) MaxRetry() asynq.Option { return asynq.MaxRetry(r.rule.MaxAttempts() - 1) }

// RetryDelay is an asynq.RetryDelayFunc. Set it as Config.RetryDelayFunc.
//
// For an error returned through [Retrier.Middleware] it returns the time left
// until the fire time the middleware fixed, so the decision made there is
// the one applied. For any other error (no middleware, lease expired,
// deadline exceeded) it returns the rule's delay for attempt n+1 with fresh
// jitter, rounded up so the retry fires on a whole second. It never panics
// and never returns a negative delay.
func (r *Retrier) RetryDelay(n int, err error, _ *asynq.Task) time.Duration {
	now := time.Now()
	var c *carrier
	if errors.As(err, &c) && c.decision.Retry() {
		if c.exact {
			return max(c.fireAt.Sub(now), 0)
		}
		return max(c.fireAt.Sub(now), 0) + margin
	}
	attempt := max(n, 0) + 1
	delay := r.policyDelay(attempt, err, backoff.Source{})
	return max(roundUp(now.Add(delay)).Sub(now), 0) + margin
}

// source returns the jitter source of task t with ID id: WithKey's choice,
// or backoff.Key(id).
func (r *Retrier) source(t *asynq.Task, id string) (src backoff.Source) {
	if r.key == nil {
		return backoff.Key(id)
	}
	defer func() {
		if p := recover(); p != nil {
			r.report(&PanicError{Op: "key", Value: p, Stack: debug.Stack()})
			src = backoff.Key(id)
		}
	}()
	return r.key(t, id)
}

// margin is added to a delay aimed at a whole second S. asynq computes
// time.Now().Add(delay) a moment after RetryDelay returns and stores its
// Unix second; the margin keeps that second at S even if the wall clock
// steps back a little in between, and is far too small to reach S+1.
const margin = time.Millisecond

// policyDelay is the rule's delay after attempt, carrying on with the curve
// past the cap (asynq retries on its own count there). A panicking policy
// gives the fallback delay.
func (r *Retrier) policyDelay(attempt int, err error, src backoff.Source) (d time.Duration) {
	defer func() {
		if p := recover(); p != nil {
			r.report(&PanicError{Op: "policy", Value: p, Stack: debug.Stack()})
			d = r.fallback
		}
	}()
	dec := r.rule.Decide(attempt, err, src)
	if dec.Retry() {
		return dec.Delay
	}
	return backoff.Delay(r.rule.Policy(), attempt, src)
}

// decide is the rule's decision after attempt for the task keyed by src,
// with maxAttempts possibly below the rule's (asynq's MaxRetry is lower). A
// panicking policy retries after the fallback delay while attempts are left.
func (r *Retrier) decide(attempt, maxAttempts int, err error, src backoff.Source) (dec backoff.Decision) {
	defer func() {
		if p := recover(); p != nil {
			r.report(&PanicError{Op: "policy", Value: p, Stack: debug.Stack()})
			dec = backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: r.fallback}
			if backoff.IsPermanent(err) {
				dec = backoff.Decision{Outcome: backoff.OutcomePermanent}
			} else if attempt >= maxAttempts {
				dec = backoff.Decision{Outcome: backoff.OutcomeExhausted}
			}
		}
	}()
	dec = r.rule.Decide(attempt, err, src)
	if dec.Retry() && attempt >= maxAttempts {
		dec = backoff.Decision{Outcome: backoff.OutcomeExhausted}
	}
	return dec
}

// report hands err to the error handler, if any, surviving its panics.
func (r *Retrier) report(err error) {
	if r.onError == nil {
		return
	}
	defer func() { _ = recover() }()
	r.onError(err)
}

// roundUp returns the first whole Unix second at or after t.
func roundUp(t time.Time) time.Time {
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}

// PanicError is a recovered panic: of a task handler (the middleware turns
// it into a failed attempt), or of a policy, observer, key or IsFailure
// function (reported to [WithErrorHandler]).
type PanicError struct {
	// Op names what panicked: "handler", "policy", "observer", "key" or
	// "is-failure".
	Op string
	// Value is the value passed to panic.
	Value any
	// Stack is the panicking goroutine's stack.
	Stack []byte
}

// Error returns "reboundasynq: OP panicked: VALUE".
func (e *PanicError) Error() string {
	return fmt.Sprintf("reboundasynq: %s panicked: %v", e.Op, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
