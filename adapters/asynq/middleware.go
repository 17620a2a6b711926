package reboundasynq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

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

// maxStoredAttempts is the largest attempts cap asynq can honour: it
// stores MaxRetry and the retry count as int32, so a task runs at most
// math.MaxInt32+1 times.
const maxStoredAttempts = math.MaxInt32 + 1

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
	ru := r.newRun(t, id, queue, n, k, rule)
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
	err := call(sctx, next, t)
	end := time.Now()
	close(ru.returned)

	c := r.carrierFor(err)
	if c != nil {
		c.run = ru
	}
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

// newRun builds the run of task t with the given ID, delivered from queue
// with retry count n and MaxRetry k (k < 0: unknown).
func (r *Retrier) newRun(t *asynq.Task, id, queue string, n, k int, rule backoff.Rule) *run {
	maxAttempts := min(rule.MaxAttempts(), maxStoredAttempts)
	if k >= 0 && k < maxAttempts-1 {
		maxAttempts = k + 1 // asynq archives before the rule would.
	}
	ru := &run{
		key:      keyOf(t, n),
		pay:      unsafe.Pointer(unsafe.SliceData(t.Payload())),
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

// settle runs once asynq's context for the run has ended. After a run the
// middleware decided, that is asynq's own clean-up, and the run is done.
// Otherwise the context ended first and asynq handled the run itself:
//
//   - a timeout on the task's last allowed run: asynq archives it;
//   - any other timeout, cancel or lost lease: asynq hands the failure to
//     RetryDelay, which decides the run (see [Retrier.RetryDelay]);
//   - a server shutting down: asynq puts the task back without counting
//     the run, and asks nothing.
//
// So a run asynq has not handed to RetryDelay within the grace period was
// put back: it is reported as [observe.Interrupted].
func (r *Retrier) settle(ctx context.Context, ru *run) {
	ru.mu.Lock()
	decided := ru.decided
	ru.mu.Unlock()
	if decided {
		r.flight.remove(ru)
		return
	}
	cause := ctx.Err()
	if errors.Is(cause, context.DeadlineExceeded) && ru.last {
		r.decideRun(ru, observe.Result{Err: cause, Decision: backoff.Decision{Outcome: backoff.OutcomeExhausted}}, false)
		r.flight.remove(ru)
		return
	}
	time.AfterFunc(r.grace, func() {
		defer r.flight.remove(ru)
		ru.mu.Lock()
		claimed := ru.claimed
		ru.mu.Unlock()
		if claimed {
			return // RetryDelay decides it
		}
		r.decideRun(ru, observe.Result{
			Err:      cause,
			Decision: backoff.Decision{Outcome: backoff.OutcomeRetry},
			FireAt:   time.Now(),
			Counting: observe.Interrupted,
		}, false)
	})
}

// waitUntil blocks until the time stored in v (HeaderRetryAt), at most
// maxPreciseWait. It does not end early when the task's context does: an
// attempt never starts before its time, and a cancel or deadline that
// comes during the wait reaches the handler, at that time, as a context
// already done. asynq counts that run as failed, and the next retry is
// decided from then.
func waitUntil(v string) {
	if v == "" {
		return
	}
	at, ok := parseRetryAt(v)
	if !ok {
		return
	}
	if wait := time.Until(at); wait > 0 {
		time.Sleep(min(wait, maxPreciseWait))
	}
}

// formatRetryAt writes t as decimal Unix nanoseconds, for HeaderRetryAt.
// Times past 2262, beyond an int64 of nanoseconds, get more digits.
func formatRetryAt(t time.Time) string {
	return strconv.FormatInt(t.Unix(), 10) + fmt.Sprintf("%09d", t.Nanosecond())
}

// parseRetryAt reads a HeaderRetryAt value: decimal digits only.
func parseRetryAt(v string) (time.Time, bool) {
	if v == "" || strings.Trim(v, "0123456789") != "" {
		return time.Time{}, false
	}
	if len(v) <= 9 {
		ns, err := strconv.ParseInt(v, 10, 64)
		return time.Unix(0, ns), err == nil
	}
	sec, err := strconv.ParseInt(v[:len(v)-9], 10, 64)
	ns, _ := strconv.ParseInt(v[len(v)-9:], 10, 64) // nine digits always parse
	return time.Unix(sec, ns), err == nil
}
