package reboundasynq

import (
	"context"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

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
	n = max(n, 0)
	rule := r.RuleFor(t.Type())
	if n >= rule.MaxAttempts() {
		return refuse(id, n+1, rule.MaxAttempts())
	}
	queue, _ := asynq.GetQueueName(ctx)
	k, okK := asynq.GetMaxRetry(ctx)
	if !okK {
		k = -1
	}
	ru := r.newRun(ctx, t, id, queue, n, k, rule)
	r.flight.add(ru)

	if r.precise && ru.carrier != nil {
		waitUntil(ru.carrier.base[HeaderRetryAt])
	}
	sctx := r.notify.Started(ctx, ru.a)
	ru.mu.Lock()
	ru.ctx, ru.started = sctx, true
	ru.mu.Unlock()
	r.report(ru) // RetryDelay may have decided the run during the wait
	// When asynq is done with the run, or its context ends first, settle
	// what it did.
	context.AfterFunc(ctx, func() { r.settle(ctx, ru) })
	pass, held, deferred := r.deferRun(sctx, ru, n)
	if deferred {
		return held
	}
	err := call(sctx, next, t)
	end := time.Now()
	close(ru.returned)

	c := r.carrierFor(err)
	if c != nil {
		c.run = ru
	}
	r.guard.Done(sctx, pass, breakerErr(c), breakerNeutral(ctx, c))
	if ctx.Err() != nil {
		// asynq stopped waiting for this return when the context ended and
		// handles the run on its own goroutine; settle and RetryDelay
		// learn what it did.
		if c == nil {
			return nil
		}
		return c
	}
	res, exact := r.judge(ru, c, end)
	res, _ = r.decideRun(ru, res, exact)
	if c == nil {
		return nil
	}
	c.gaveUp = !res.Decision.Retry()
	return c
}

// newRun builds the run of task t with the given ID, delivered in asynq's
// context ctx from queue with retry count n and MaxRetry k (k < 0:
// unknown).
func (r *Retrier) newRun(ctx context.Context, t *asynq.Task, id, queue string, n, k int, rule backoff.Rule) *run {
	maxAttempts := min(rule.MaxAttempts(), maxStoredAttempts)
	if k >= 0 && k < maxAttempts-1 {
		maxAttempts = k + 1 // asynq archives before the rule would.
	}
	ru := &run{
		key:      keyOf(t, n),
		actx:     ctx,
		task:     t,
		id:       id,
		rule:     rule,
		last:     k >= 0 && n >= k,
		returned: make(chan struct{}),
		a: observe.Attempt{
			System:      System,
			Queue:       queue,
			JobID:       id,
			Kind:        t.Type(),
			Number:      n + 1,
			MaxAttempts: maxAttempts,
		},
	}
	if h := t.Headers(); h != nil {
		ru.headers, ru.carrier = h, newHeaderCarrier(h)
		ru.a.Carrier = ru.carrier
	}
	return ru
}

// refuse is the middleware's answer to a delivery past the rule's cap: the
// handler does not run, nothing is reported (the last attempt was), and
// asynq archives the task.
func refuse(id string, attempt, maxAttempts int) error {
	err := &ExhaustedError{TaskID: id, Attempt: attempt, MaxAttempts: maxAttempts}
	return &carrier{err: err, text: err.Error(), gaveUp: true}
}

// call calls the handler, turning a panic into a *observe.PanicError.
func call(ctx context.Context, next asynq.Handler, t *asynq.Task) (err error) {
	if perr := safe.Call("handler", func() { err = next.ProcessTask(ctx, t) }); perr != nil {
		return perr
	}
	return err
}
