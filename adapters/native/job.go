package native

import (
	"context"

	"github.com/rebound-go/rebound/observe"
)

// Job is one attempt of one job, as a [Handler] sees it.
type Job struct {
	// ID is the job's ID. Its retry jitter is keyed by it, backoff.Key(ID),
	// unless the worker was built with [WithKey].
	ID string
	// Queue is the queue's name.
	Queue string
	// Name is the job's name, "" if it has none.
	Name string
	// Payload is the payload given to Enqueue.
	Payload []byte
	// Attempt is the 1-based number of this attempt.
	Attempt int
	// MaxAttempts is the total number of runs the job may have.
	MaxAttempts int
	// Metadata travels with the job from attempt to attempt: what a handler
	// or observer sets here is stored when the attempt ends and seen by the
	// next one.
	Metadata observe.MapCarrier

	storedMeta string // the metadata as stored, to tell whether it changed
}

// A Handler runs one attempt of a job. Returning nil completes the job. Any
// other error fails the attempt: the worker's rule decides whether and when
// to retry. Wrap an error with backoff.Permanent to fail the job at once,
// or with backoff.RetryAfter to wait at least a given time. A panic is
// recovered and counts as a failed attempt, whose error is an
// *observe.PanicError with Op "handler".
type Handler func(ctx context.Context, job *Job) error

// newJob builds attempt number attempt of job id from its record.
func (w *Worker) newJob(id string, attempt int, r record) *Job {
	maxAtt := r.max
	if maxAtt < 1 {
		maxAtt = w.RuleFor(r.name).MaxAttempts()
	}
	return &Job{ID: id, Queue: w.q.name, Name: r.name, Payload: r.payload,
		Attempt: attempt, MaxAttempts: maxAtt, Metadata: observe.MapCarrier(decodeMeta(r.meta)), storedMeta: r.meta}
}
