package observe

import "errors"

// ErrCancelled is matched (errors.Is) by every [*CancelledError]: test for
// it to recognise the engine's cancel of a running attempt on any engine.
var ErrCancelled = errors.New("observe: cancelled by the engine")

// CancelledError is the error every adapter reports for an attempt the
// engine's own cancel cut short while it ran: the native queue's
// Queue.Cancel, River's Client.JobCancel, asynq's
// Inspector.CancelProcessing. It reads as the text the engine stored as
// the job's error, so that what observers and the give-up hook are told
// is what an operator reads in the engine's own tools, and it unwraps to
// the engine's own error for the cancel (native.ErrCancelled,
// rivertype.ErrJobCancelledRemotely, context.Canceled), so errors.Is with
// that still holds.
//
// What follows is the engine's: the native queue and River end the job
// (reported permanent, and the give-up hook is told, with this error);
// asynq's CancelProcessing cancels the run, not the task, and asynq
// retries it (reported as a retry under the rule).
type CancelledError struct {
	// Engine is the text the engine stored as the job's error.
	Engine string
	// Cause is the engine's own error for the cancel, or nil.
	Cause error
}

// Error returns the text the engine stored, or a stand-in when it is
// empty.
func (e *CancelledError) Error() string {
	switch {
	case e == nil:
		return "observe: <nil CancelledError>"
	case e.Engine == "":
		return "cancelled by the engine"
	}
	return e.Engine
}

// Unwrap returns the engine's own error for the cancel.
func (e *CancelledError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Cause
}

// Is reports whether target is [ErrCancelled].
func (e *CancelledError) Is(target error) bool { return target == ErrCancelled }
