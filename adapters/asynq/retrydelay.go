package reboundasynq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// margin is added to a delay aimed at a whole second S. asynq computes
// time.Now().Add(delay) a moment after RetryDelay returns and stores its
// Unix second; the margin keeps that second at S even if the wall clock
// steps back a little in between, and is far too small to reach S+1.
const margin = time.Millisecond

// RetryDelay is an asynq.RetryDelayFunc. Set it as Config.RetryDelayFunc.
//
// asynq calls it, on its own goroutine, for every failed run it retries.
// For a run the middleware decided it returns the time left until the fire
// time fixed there, so the decision the observer heard is the one applied,
// and stores what the attempt carries to the next one (the observer's
// carrier, precise mode's [HeaderRetryAt]) in the task's headers, just
// before asynq stores the task. For a run whose context ended before the
// handler returned (a timeout, a cancel), it waits for the handler to
// return (at most ten seconds: asynq's next attempt of the task cannot
// start meanwhile), then decides the run itself under the rule, keyed by
// the task ID, and reports it. For an error that did not
// come through the middleware at all it returns the rule's delay for
// attempt n+1 with fresh jitter, rounded up to a whole second.
//
// It never panics, never returns a negative delay, and never returns a
// delay that rounds a fire time down.
func (r *Retrier) RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	now := time.Now()
	var c *carrier
	found, perr := safe.Value("error text", false, func() bool { return errors.As(err, &c) })
	r.notify.Report(perr)
	var ru *run
	switch {
	case found && c.run != nil:
		ru, err = c.run, c.err
		r.checkCounted(c)
		ru.mu.Lock()
		ru.claimed = true // no look-alike's RetryDelay takes it now
		ru.mu.Unlock()
	case found:
		return 0 // a refused delivery asynq retries anyway: archive it soon
	default:
		ru = r.flight.take(t, max(n, 0), endedError(err))
	}
	if ru == nil {
		return r.unknownDelay(n, err, t, now)
	}
	res, exact, decided := ru.outcome()
	if !decided {
		return r.claim(ru, err)
	}
	if !res.Decision.Retry() || res.Counting == observe.Interrupted {
		// asynq retries a run rebound reported otherwise: its context ended
		// between the middleware's decision and asynq's, or a middleware
		// outside rebound's dropped the error.
		r.notify.Report(fmt.Errorf("reboundasynq: asynq retries task %s after attempt %d, which was reported as %s: a middleware outside rebound's must return rebound's error (wrapped with %%w is fine)",
			ru.id, ru.a.Number, res.Outcome()))
		if res.Err == nil || res.Counting == observe.Interrupted {
			res, exact = r.failure(ru, err, now, false, true)
			return until(res.FireAt, now, exact)
		}
		return 0
	}
	r.apply(ru, res, exact)
	return until(res.FireAt, now, exact)
}

// claimWait bounds how long RetryDelay waits for the handler of a run whose
// context ended to return. asynq has not stored the run's outcome yet, so
// while it waits the task's next attempt cannot start alongside a handler
// still running, and the worker slot stays taken, as it really is. The
// bound keeps a handler that never returns from holding asynq's goroutine
// (and its server's shutdown) for good, well within the lease asynq
// computed its write's deadline from.
const claimWait = 10 * time.Second

// claim decides a run whose context ended before the handler returned:
// asynq handled the run on its own path and hands the failure err here.
// It waits for the handler to return (at most claimWait), then decides
// under the rule as asynq will apply it and reports it.
func (r *Retrier) claim(ru *run, err error) time.Duration {
	timer := time.NewTimer(claimWait)
	returned := true
	select {
	case <-ru.returned:
	case <-timer.C:
		returned = false
	}
	timer.Stop()
	now := time.Now()
	if err == context.Canceled {
		// The engine's cancel (Inspector.CancelProcessing, a cancelled
		// BaseContext): told as every adapter tells it, reading as the
		// text asynq stores.
		err = &observe.CancelledError{Engine: err.Error(), Cause: err}
	}
	// Once the handler has returned, the headers are asynq's alone again:
	// precise mode's exact time can travel.
	res, exact := r.failure(ru, err, now, r.precise && ru.headers != nil && returned, true)
	if res, exact = r.decideRun(ru, res, exact); !res.Decision.Retry() {
		return 0 // the next delivery is past the cap and is archived
	}
	if returned {
		r.apply(ru, res, exact)
	}
	return until(res.FireAt, now, exact)
}

// until is the delay that makes asynq store fireAt: the time left, plus the
// margin when fireAt is a whole second. It never overflows and is never
// negative.
func until(fireAt, now time.Time, exact bool) time.Duration {
	d := max(fireAt.Sub(now), 0)
	if !exact && d <= MaxDelay {
		d += margin
	}
	return d
}

// apply stores in the task's headers what the run carries to the next
// attempt: what the observer set in its carrier, and in precise mode the
// exact fire time. It runs on asynq's goroutine after the handler
// returned, right before asynq stores the task: the one moment nothing
// else reads or writes asynq's header map.
func (r *Retrier) apply(ru *run, res observe.Result, exact bool) {
	if ru.headers == nil {
		return
	}
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if ru.applied {
		return
	}
	ru.applied = true
	for k, v := range ru.carrier.writes() {
		ru.headers[k] = v
	}
	// The next delivery's own token: from it on, a task enqueued twice
	// from one Task value, or built without NewTask, is told apart from
	// its look-alikes.
	ru.headers[HeaderTask] = newToken()
	if exact {
		ru.headers[HeaderRetryAt] = formatRetryAt(res.FireAt)
	}
}

// unknownDelay is the delay for a failure that did not come through the
// middleware (none registered, or the task was recovered from a crashed
// worker): the rule's delay for attempt n+1, carrying on past the cap so
// that a server without the middleware does not retry at once, with fresh
// jitter, rounded up.
func (r *Retrier) unknownDelay(n int, err error, t *asynq.Task, now time.Time) time.Duration {
	rule := r.rule
	if t != nil {
		rule = r.RuleFor(t.Type())
	}
	d := min(r.policyDelay(rule, max(n, 0)+1, err, backoff.Source{}), MaxDelay)
	at, _ := fireTime(now, d, false)
	return until(at, now, false)
}
