package reboundasynq

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
)

// carrier takes the middleware's decision to RetryDelay through asynq, which
// passes the handler's error value on unchanged. It reads as the handler's
// error; when the rule gives up it also matches asynq.SkipRetry.
type carrier struct {
	err      error
	decision backoff.Decision
	fireAt   time.Time
	exact    bool // fireAt is exact (precise mode), not a whole second
	// uncounted: asynq retries without counting the attempt, because
	// Config.IsFailure returned false for err.
	uncounted bool
}

// result is the observer's view of the attempt c concludes.
func (c *carrier) result() observe.Result {
	r := observe.Result{Err: c.err, Decision: c.decision, FireAt: c.fireAt}
	if c.uncounted {
		r.Counting = observe.Snoozed
	}
	return r
}

func (c *carrier) Error() string { return c.err.Error() }

func (c *carrier) Unwrap() []error {
	if c.decision.Retry() {
		return []error{c.err}
	}
	return []error{c.err, asynq.SkipRetry}
}

// Decision returns the decision the middleware made for err, the error a
// task's handler chain returned through [Retrier.Middleware], and the time
// the retry fires when the decision is to retry. ok is false when err did
// not pass through the middleware (see the package docs for what applies
// then). It is meant for an asynq ErrorHandler.
func Decision(err error) (d backoff.Decision, fireAt time.Time, ok bool) {
	var c *carrier
	if !errors.As(err, &c) {
		return backoff.Decision{}, time.Time{}, false
	}
	return c.decision, c.fireAt, true
}

// ExhaustedError is returned, wrapped so that it also matches
// asynq.SkipRetry, for an attempt that asynq delivers after the rule's last
// one. That happens when asynq itself used up attempts the handler never
// finished (lease expired, deadline exceeded) and the task was enqueued with
// a MaxRetry larger than the rule allows. The handler is not run.
type ExhaustedError struct {
	// TaskID is the task's ID.
	TaskID string
	// Attempt is the 1-based number of the attempt asynq delivered.
	Attempt int
	// MaxAttempts is the rule's cap.
	MaxAttempts int
}

// Error says which attempt was refused and why.
func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("reboundasynq: task %s delivered for attempt %d, past MaxAttempts %d; archived without running",
		e.TaskID, e.Attempt, e.MaxAttempts)
}

// Middleware is an asynq.MiddlewareFunc; register it with mux.Use. It numbers
// each attempt, enforces the rule's attempts cap, turns handler panics into
// [*PanicError] failures, decides the retry under the rule keyed by the task
// ID, and reports the attempt to the observer. See the package docs.
//
// Outside a task run by an asynq server (no task metadata in the context),
// it calls next and changes nothing.
func (r *Retrier) Middleware(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		return r.process(ctx, t, next)
	})
}

func (r *Retrier) process(ctx context.Context, t *asynq.Task, next asynq.Handler) error {
	id, okID := asynq.GetTaskID(ctx)
	n, okN := asynq.GetRetryCount(ctx)
	if !okID || !okN {
		return next.ProcessTask(ctx, t)
	}
	queue, _ := asynq.GetQueueName(ctx)
	attempt := max(n, 0) + 1
	maxAttempts := r.rule.MaxAttempts()
	k, okK := asynq.GetMaxRetry(ctx)
	if okK && k >= 0 && k+1 < maxAttempts {
		maxAttempts = k + 1 // asynq archives before the rule would.
	}
	// On asynq's last allowed run it archives a failed task whatever
	// IsFailure says.
	last := okK && n >= k
	headers := t.Headers()
	a := observe.Attempt{
		System:      System,
		Queue:       queue,
		JobID:       id,
		Kind:        t.Type(),
		Number:      attempt,
		MaxAttempts: maxAttempts,
	}
	if headers != nil {
		a.Carrier = observe.MapCarrier(headers)
	}

	if attempt > r.rule.MaxAttempts() {
		err := &ExhaustedError{TaskID: id, Attempt: attempt, MaxAttempts: r.rule.MaxAttempts()}
		c := &carrier{err: err, decision: backoff.Decision{Outcome: backoff.OutcomeExhausted}}
		ctx = r.started(ctx, a)
		r.ended(ctx, a, observe.Result{Err: err, Decision: c.decision})
		return c
	}

	var err error
	if r.precise && headers != nil {
		err = waitUntil(ctx, headers[HeaderRetryAt])
	}
	ctx = r.started(ctx, a)
	if err == nil {
		err = run(ctx, next, t)
	}
	end := time.Now()
	if err == nil {
		r.ended(ctx, a, observe.Result{})
		return nil
	}

	if errors.Is(err, asynq.RevokeTask) {
		r.ended(ctx, a, observe.Result{Err: err, Decision: backoff.Decision{Outcome: backoff.OutcomePermanent}})
		return err
	}
	// In precise mode the exact fire time travels in the headers. Once the
	// context is done asynq's own goroutine may already be reading them:
	// never write to them then, and round up instead.
	exact := r.precise && headers != nil && ctx.Err() == nil
	c := r.conclude(r.source(t, id), attempt, maxAttempts, last, err, end, exact)
	if exact && c.decision.Retry() {
		headers[HeaderRetryAt] = strconv.FormatInt(c.fireAt.UnixNano(), 10)
	}
	r.ended(ctx, a, c.result())
	return c
}

// conclude decides what follows the failed attempt of the task keyed by src
// that ended at end: the decision under the rule, and the absolute
// fire time of a retry, exact when exact is set, otherwise rounded up to a
// whole second. last says that asynq archives the task after this run
// whatever the error (its retry count has reached the task's MaxRetry).
func (r *Retrier) conclude(src backoff.Source, attempt, maxAttempts int, last bool, err error, end time.Time, exact bool) *carrier {
	var dec backoff.Decision
	uncounted := false
	switch {
	case errors.Is(err, asynq.SkipRetry):
		dec = backoff.Decision{Outcome: backoff.OutcomePermanent}
	case !backoff.IsPermanent(err) && !last && !r.counts(err):
		// asynq retries without counting (a snooze): the cap does not
		// apply, and the wait is the rule's delay for this attempt.
		dec = backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: r.policyDelay(attempt, err, src)}
		uncounted = true
	default:
		dec = r.decide(attempt, maxAttempts, err, src)
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
func (r *Retrier) counts(err error) (ok bool) {
	if r.isFailure == nil {
		return true
	}
	defer func() {
		if p := recover(); p != nil {
			r.report(&PanicError{Op: "is-failure", Value: p, Stack: debug.Stack()})
			ok = true
		}
	}()
	return r.isFailure(err)
}

// run calls the handler, turning a panic into a *PanicError.
func run(ctx context.Context, next asynq.Handler, t *asynq.Task) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Op: "handler", Value: p, Stack: debug.Stack()}
		}
	}()
	return next.ProcessTask(ctx, t)
}

// waitUntil blocks until the time stored in v (Unix nanoseconds), at most
// maxPreciseWait, or until ctx is done, whose error it then returns.
func waitUntil(ctx context.Context, v string) error {
	if v == "" {
		return nil
	}
	ns, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	wait := time.Until(time.Unix(0, ns))
	if wait <= 0 {
		return nil
	}
	timer := time.NewTimer(min(wait, maxPreciseWait))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Retrier) started(ctx context.Context, a observe.Attempt) (out context.Context) {
	if r.observer == nil {
		return ctx
	}
	defer func() {
		if p := recover(); p != nil {
			r.report(&PanicError{Op: "observer", Value: p, Stack: debug.Stack()})
			out = ctx
		}
	}()
	if c := r.observer.AttemptStarted(ctx, a); c != nil {
		return c
	}
	return ctx
}

func (r *Retrier) ended(ctx context.Context, a observe.Attempt, res observe.Result) {
	if r.observer == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.report(&PanicError{Op: "observer", Value: p, Stack: debug.Stack()})
		}
	}()
	r.observer.AttemptEnded(ctx, a, res)
}
