package native

import (
	"errors"
	"fmt"
)

var (
	// ErrJobExists is returned by [Queue.Enqueue] when a job with the
	// requested ID already exists in the queue, and wrapped by the
	// [EnqueueResult] of such a job of [Queue.EnqueueMany] (or of a job
	// repeating the ID of an earlier one of the same call).
	ErrJobExists = errors.New("native: a job with this ID already exists in the queue")
	// ErrNotFound is returned for a job ID the queue does not know (never
	// enqueued, or a completed job dropped by retention).
	ErrNotFound = errors.New("native: no such job in the queue")
	// ErrLeaseLost means a worker tried to finish or renew a job it no
	// longer holds: its lease expired and the job was reclaimed, so the
	// newer state stands and the call changed nothing.
	ErrLeaseLost = errors.New("native: lease lost: the job was reclaimed from this worker")
	// ErrLeaseExpired is the error recorded for an attempt whose worker
	// stopped renewing its lease (it crashed, hung or lost Redis). The
	// attempt counts, and the job waits its backoff like any failure.
	ErrLeaseExpired = errors.New("native: lease expired: the worker stopped renewing it (crashed, hung or cut off)")
	// ErrShutdown is the cause a handler's context is cancelled with when
	// [Worker.Shutdown]'s deadline passes while it runs, and the error
	// observers are told for such an interrupted attempt. The attempt does
	// not count: its job runs again.
	ErrShutdown = errors.New("native: worker shut down before the handler returned")
	// ErrTimeout is the cause a handler's context is cancelled with at the
	// attempt's deadline (see [WithTimeout]), and the error of an attempt
	// whose handler had not returned by then.
	ErrTimeout = errors.New("native: handler outlived its timeout")
	// ErrCancelled is the error stored with a job an operator cancelled
	// ([Queue.Cancel]); the cause a running handler's context is cancelled
	// with when its worker learns of the cancel; and, wrapped in an
	// [*observe.CancelledError] with its text, the error its observer and
	// give-up hook are told, with the outcome permanent (errors.Is with
	// ErrCancelled holds).
	ErrCancelled = errors.New("native: cancelled by an operator")
	// ErrWrongState is matched (errors.Is) by the [*StateError] of an
	// operator action on a job whose state the action does not apply to.
	ErrWrongState = errors.New("native: the job is not in a state this action applies to")
	// ErrCursorGone is returned by [Queue.List] for a page of waiting jobs
	// whose cursor's job has left the waiting lists since the page before
	// (a worker took it, or an operator moved it): where it stood is lost,
	// so list again from the first page. Pages of the other states do not
	// lose their place.
	ErrCursorGone = errors.New("native: the page cursor's job has left the waiting lists; list again from the first page")
	// ErrBadCursor is returned by [Queue.List] for a cursor that is not
	// one List returned for the same state and order.
	ErrBadCursor = errors.New("native: the page cursor is not one List returned for this state and order")
)

// A StateError is the error of an operator action on a job that is not in
// a state the action applies to: a retry of a job that is not failed, say,
// or a run-now of a delayed job that became due and started meanwhile.
// The action changed nothing. It matches [ErrWrongState] with errors.Is.
type StateError struct {
	// Queue and ID name the job.
	Queue, ID string
	// Action is what was asked: "retry", "run now", "delete" or "cancel".
	Action string
	// State is the state the job was found in.
	State State
	// Want says which states the action applies to.
	Want string
}

// Error says what the action was, the state the job was found in and the
// states the action applies to.
func (e *StateError) Error() string {
	what := fmt.Sprintf("%s job %q of queue %q", e.Action, e.ID, e.Queue)
	if e.Action == "run now" {
		what = fmt.Sprintf("run job %q of queue %q now", e.ID, e.Queue)
	}
	return fmt.Sprintf("native: cannot %s: it is %s, want %s", what, e.State, e.Want)
}

// Is reports whether target is [ErrWrongState].
func (e *StateError) Is(target error) bool { return target == ErrWrongState }

// PayloadTooLargeError is returned by [Queue.Enqueue] for a payload above
// the queue's limit (see [WithMaxPayload]), and wrapped by the error of a
// [Queue.EnqueueMany] call one of whose jobs has such a payload.
type PayloadTooLargeError struct {
	// Size is the payload's size in bytes.
	Size int
	// Limit is the queue's limit in bytes.
	Limit int
}

// Error says the payload's size and the queue's limit.
func (e *PayloadTooLargeError) Error() string {
	return fmt.Sprintf("native: payload is %d bytes, above the queue's limit of %d bytes (raise it with WithMaxPayload)", e.Size, e.Limit)
}
