package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// A Harness connects one adapter, on one backend, to the suite. An adapter's
// own test implements it and calls [Run].
type Harness interface {
	// Name identifies the adapter and backend in output, e.g. "asynq/redis".
	Name() string
	// Limits states what the engine can honestly promise. The suite holds
	// the harness to these numbers and prints them.
	Limits() Limits
	// Start starts a worker that runs cfg.Handler under cfg.Rule, isolated
	// from every other Start (its own queue, key prefix, schema or server),
	// and returns the engine to enqueue on. The worker and everything it
	// created are torn down with t.Cleanup.
	Start(t testing.TB, cfg Config) Engine
	// HookDelay calls the adapter's own retry hook, the function the engine
	// really calls, for the job with the given ID after failed attempt
	// number attempt (1-based) with error err, and returns the delay it
	// schedules and whether it schedules a retry at all. It must not wait:
	// this is how the suite compares schedules without running them.
	HookDelay(cfg Config, id string, attempt int, err error) (delay time.Duration, retry bool)
}

// Limits is what an engine promises about when a retry runs.
type Limits struct {
	// Resolution is the granularity of the engine's stored fire times. The
	// hook may round a delay up by less than Resolution to stay never
	// early (asynq stores whole seconds); it may never round down.
	// Zero means exact.
	Resolution time.Duration
	// Lateness bounds how long after its computed time a retry may start
	// when the engine is idle: every gap between an attempt's end and the
	// next attempt's start lies in [delay, delay + Resolution + Lateness].
	Lateness time.Duration
}

// Config is what the suite asks a worker to run.
type Config struct {
	// Rule is the policy and attempts cap the adapter must apply.
	Rule backoff.Rule
	// Handler is the job body. The harness calls it once per attempt with
	// the job's ID, its payload and the 1-based attempt number the engine
	// reports, mapped to rebound's numbering. It may return an error marked
	// with backoff.Permanent or backoff.RetryAfter, or panic; the adapter
	// must handle each as its documentation says.
	Handler func(ctx context.Context, job Job) error
}

// Job is one attempt of one job, as the handler sees it.
type Job struct {
	// ID is the engine's ID for the job, as a string. The adapter keys the
	// job's jitter by it: backoff.Key(ID).
	ID string
	// Attempt is the 1-based number of this attempt.
	Attempt int
	// Payload is the payload passed to Enqueue, unchanged.
	Payload []byte
}

// An Engine is a running worker the suite enqueues jobs on.
type Engine interface {
	// Enqueue adds a job with the given payload, to run as soon as a worker
	// is free, and returns its ID (the same string Job.ID carries).
	Enqueue(ctx context.Context, payload []byte) (id string, err error)
	// State returns the job's current state.
	State(ctx context.Context, id string) (State, error)
}

// State is where a job is in its life.
type State int

const (
	// StatePending means the job is waiting, running or scheduled to retry.
	StatePending State = iota
	// StateCompleted means an attempt succeeded.
	StateCompleted
	// StateFailed means the job gave up for good: attempts exhausted or a
	// permanent error (asynq: archived; River: discarded or cancelled;
	// native: in the failed set).
	StateFailed
)

// String returns "pending", "completed" or "failed".
func (s State) String() string {
	switch s {
	case StatePending:
		return "pending"
	case StateCompleted:
		return "completed"
	case StateFailed:
		return "failed"
	}
	return "unknown"
}
