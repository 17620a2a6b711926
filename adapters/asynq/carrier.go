package reboundasynq

import (
	"errors"
	"fmt"
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
