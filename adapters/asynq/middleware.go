package reboundasynq

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// maxPreciseWait bounds how long precise mode holds an early attempt. asynq
// delivers a task at most one second early (it truncates to whole seconds);
// a longer wait means clocks disagree or the header is bogus, and the
// attempt runs rather than holding a worker indefinitely.
const maxPreciseWait = time.Second

// Middleware is an asynq.MiddlewareFunc; register it with mux.Use. It numbers
// each attempt, enforces the rule's attempts cap, turns handler panics into
// [*observe.PanicError] failures, decides the retry under the rule keyed by
// the task ID, and reports the attempt to the observer. See the package
// docs.
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
	rule := r.RuleFor(t.Type())
	attempt := max(n, 0) + 1
	maxAttempts := rule.MaxAttempts()
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

	if attempt > rule.MaxAttempts() {
		err := &ExhaustedError{TaskID: id, Attempt: attempt, MaxAttempts: rule.MaxAttempts()}
		c := &carrier{err: err, decision: backoff.Decision{Outcome: backoff.OutcomeExhausted}}
		ctx = r.notify.Started(ctx, a)
		r.notify.Ended(ctx, a, observe.Result{Err: err, Decision: c.decision})
		return c
	}

	var err error
	if r.precise && headers != nil {
		err = waitUntil(ctx, headers[HeaderRetryAt])
	}
	ctx = r.notify.Started(ctx, a)
	if err == nil {
		err = run(ctx, next, t)
	}
	end := time.Now()
	if err == nil {
		r.notify.Ended(ctx, a, observe.Result{})
		return nil
	}

	if errors.Is(err, asynq.RevokeTask) {
		r.notify.Ended(ctx, a, observe.Result{Err: err, Decision: backoff.Decision{Outcome: backoff.OutcomePermanent}})
		return err
	}
	// In precise mode the exact fire time travels in the headers. Once the
	// context is done asynq's own goroutine may already be reading them:
	// never write to them then, and round up instead.
	exact := r.precise && headers != nil && ctx.Err() == nil
	c := r.conclude(rule, r.source(t, id), attempt, maxAttempts, last, err, end, exact)
	if exact && c.decision.Retry() {
		headers[HeaderRetryAt] = strconv.FormatInt(c.fireAt.UnixNano(), 10)
	}
	r.notify.Ended(ctx, a, c.result())
	return c
}

// run calls the handler, turning a panic into a *observe.PanicError.
func run(ctx context.Context, next asynq.Handler, t *asynq.Task) (err error) {
	if perr := safe.Call("handler", func() { err = next.ProcessTask(ctx, t) }); perr != nil {
		return perr
	}
	return err
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
