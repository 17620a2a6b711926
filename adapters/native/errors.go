package native

import (
	"errors"
	"fmt"
)

var (
	// ErrJobExists is returned by [Queue.Enqueue] when a job with the
	// requested ID already exists in the queue.
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
)

// PayloadTooLargeError is returned by [Queue.Enqueue] for a payload above
// the queue's limit (see [WithMaxPayload]).
type PayloadTooLargeError struct {
	// Size is the payload's size in bytes.
	Size int
	// Limit is the queue's limit in bytes.
	Limit int
}

func (e *PayloadTooLargeError) Error() string {
	return fmt.Sprintf("native: payload is %d bytes, above the queue's limit of %d bytes (raise it with WithMaxPayload)", e.Size, e.Limit)
}
