package reboundasynq

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
)

// A run is one delivery of one task to the middleware, from the moment the
// middleware takes it until asynq is done with it.
//
// Most runs end the plain way: the handler returns while the task's
// context is live, the middleware decides what follows, and asynq hands
// that decision to RetryDelay inside the returned error. But asynq stops
// waiting for the handler when the task's context ends (its deadline, an
// Inspector.CancelProcessing, the lease running out) or the server shuts
// down; it then handles the run on its own goroutine, and the handler's
// return goes nowhere. A run is how the two sides find each other then:
// RetryDelay, called by asynq with the context's error, looks the run up
// (see [flight]) and decides it under the rule, keyed by the task ID, so
// that what the observer hears is what asynq applies.
type run struct {
	// key finds the run from RetryDelay, which sees only a copy of the task.
	key  flightKey
	actx context.Context // asynq's context of the run
	task *asynq.Task
	id   string
	rule backoff.Rule
	// last: asynq archives any failure of this run (its retry count has
	// reached the task's MaxRetry) without asking RetryDelay.
	last bool
	// headers is asynq's own header map of the task, nil when it has none.
	// Only RetryDelay writes it, on asynq's goroutine, right before asynq
	// stores the task; the handler's goroutine never does.
	headers map[string]string
	carrier *headerCarrier // the observer's view of headers; nil when none
	// returned is closed once the handler has returned (or will not run):
	// no user code of this run touches the task any more.
	returned chan struct{}

	mu       sync.Mutex
	a        observe.Attempt
	ctx      context.Context // the observer's context, once started
	started  bool            // AttemptStarted was called
	claimed  bool            // RetryDelay took the run from the flight (see [flight.take])
	decided  bool
	reported bool
	res      observe.Result
	exact    bool // res.FireAt is exact: RetryDelay stores it in HeaderRetryAt
	applied  bool // RetryDelay has stored the decision's headers
}

// decide fixes the run's outcome, unless it was fixed already, and reports
// it once the attempt has started. It returns the outcome in force.
func (r *Retrier) decideRun(ru *run, res observe.Result, exact bool) (observe.Result, bool) {
	ru.mu.Lock()
	if !ru.decided {
		ru.decided, ru.res, ru.exact = true, res, exact
	}
	res, exact = ru.res, ru.exact
	ru.mu.Unlock()
	r.report(ru)
	return res, exact
}

// report tells the observer and the give-up hook how the run ended, once,
// when it has both started and been decided.
func (r *Retrier) report(ru *run) {
	ru.mu.Lock()
	if !ru.started || !ru.decided || ru.reported {
		ru.mu.Unlock()
		return
	}
	ru.reported = true
	ctx, a, res := ru.ctx, ru.a, ru.res
	ru.mu.Unlock()
	r.notify.Ended(ctx, a, res)
}

// outcome returns the run's decision, and whether it has one.
func (ru *run) outcome() (observe.Result, bool, bool) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	return ru.res, ru.exact, ru.decided
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
