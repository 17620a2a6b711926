package reboundasynq

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// MaxErrorBytes is the most bytes of a handler's error message that asynq
// is given to store as the task's last error. asynq keeps that message in
// the task message itself, which it rewrites on every retry; a longer
// message is cut, on a UTF-8 boundary, and ends with
// "... [N bytes truncated]". Observers and an ErrorHandler still get the
// whole error.
const MaxErrorBytes = 4096

// carrier is the error the middleware returns: asynq hands it on unchanged
// to RetryDelay, which finds the run it belongs to and applies the decision
// made there. It reads as the handler's error, cut to MaxErrorBytes; it
// matches asynq.SkipRetry when rebound gives the task up, and
// asynq.RevokeTask when the handler returned that.
//
// asynq itself calls Error, and errors.Is with SkipRetry and RevokeTask, on
// its own goroutine, where a panic kills the process: so the carrier
// answers those from what it worked out, under a recover, on the handler's
// goroutine, and unwraps only to an error that survived that.
type carrier struct {
	run    *run  // nil for a delivery refused past the cap
	err    error // the handler's error, or a stand-in (see hostileError)
	text   string
	gaveUp bool // the decision is not a retry: asynq archives the task
	skip   bool // err matches asynq.SkipRetry
	revoke bool // err matches asynq.RevokeTask
	// deferred: a breaker held the run back (err is its
	// *observe.DeferredError); asynq must retry it uncounted.
	deferred bool
	// counted is set once Retrier.IsFailure answered for the carrier.
	counted atomic.Bool
}

func (c *carrier) Error() string { return c.text }

func (c *carrier) Unwrap() error { return c.err }

// Is answers asynq's own questions about the error without walking it.
func (c *carrier) Is(target error) bool {
	switch target {
	case asynq.SkipRetry:
		return c.gaveUp || c.skip
	case asynq.RevokeTask:
		return c.revoke
	}
	return false
}

// hostileError stands in for a handler error that cannot be used safely:
// a typed nil (`var e *MyErr; return e`), or one whose Error, Is or Unwrap
// method panics. It keeps the text rebound could get, naming the type.
type hostileError struct{ text string }

func (e *hostileError) Error() string { return e.text }

// carrierFor returns the middleware's error for the handler's error err,
// not yet tied to a run: err itself when its text and asynq's questions
// about it can be had safely, a hostileError otherwise (a panic is
// reported as *observe.PanicError{Op: "error text"}), with the text asynq
// will store and the answers to asynq's questions. It returns nil for a
// nil err.
func (r *Retrier) carrierFor(err error) *carrier {
	if err == nil {
		return nil
	}
	if safe.IsNil(err) {
		text := fmt.Sprintf("(%T)(nil)", err)
		return &carrier{err: &hostileError{text}, text: text}
	}
	text, perr := safe.Value("error text", "", err.Error)
	type answers struct{ skip, revoke bool }
	var a answers
	if perr == nil {
		a, perr = safe.Value("error text", answers{}, func() answers {
			return answers{errors.Is(err, asynq.SkipRetry), errors.Is(err, asynq.RevokeTask)}
		})
	}
	if perr != nil {
		r.notify.Report(perr)
		var pe *observe.PanicError
		errors.As(perr, &pe)
		if text == "" {
			text = fmt.Sprintf("%T (its Error method panicked: %v)", err, pe.Value)
		}
		text = safe.Truncate(text, MaxErrorBytes)
		return &carrier{err: &hostileError{text}, text: text}
	}
	return &carrier{err: err, text: safe.Truncate(text, MaxErrorBytes), skip: a.skip, revoke: a.revoke}
}

// Decision returns the decision rebound made for err, the error a task's
// handler chain returned through [Retrier.Middleware], and the time the
// retry fires when the decision is to retry. ok is false when err did not
// pass through the middleware, or when the task's context had already
// ended when it did (asynq then decides on its own path; the package docs
// say what rebound reports then). It is meant for an asynq ErrorHandler.
func Decision(err error) (d backoff.Decision, fireAt time.Time, ok bool) {
	var c *carrier
	if !errors.As(err, &c) {
		return backoff.Decision{}, time.Time{}, false
	}
	if c.run == nil {
		return backoff.Decision{Outcome: backoff.OutcomeExhausted}, time.Time{}, true
	}
	res, _, decided := c.run.outcome()
	if !decided {
		return backoff.Decision{}, time.Time{}, false
	}
	return res.Decision, res.FireAt, true
}

// ExhaustedError is returned, matching asynq.SkipRetry, for a delivery past
// the rule's last attempt; the handler is not run and asynq archives the
// task. It happens when the last attempt's context ended before the
// handler returned (a timeout, a cancel): asynq then retries the task on
// its own, and rebound, having already reported that attempt as the last,
// archives the delivery that follows without running it or reporting it
// again.
type ExhaustedError struct {
	// TaskID is the task's ID.
	TaskID string
	// Attempt is the 1-based number of the delivery refused.
	Attempt int
	// MaxAttempts is the rule's cap.
	MaxAttempts int
}

// Error says which delivery was refused and why.
func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("reboundasynq: task %s delivered for attempt %d after its last attempt (%d of %d) failed; archived without running",
		e.TaskID, e.Attempt, e.Attempt-1, e.MaxAttempts)
}
