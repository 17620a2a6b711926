// Package observe is the seam between rebound's adapters and whatever watches
// them. Every adapter reports each attempt of each job to an [Observer]: when
// it starts, and how it ended with the retry decision that followed. The otel
// package implements Observer with OpenTelemetry spans and metrics; tests and
// users can implement it too.
//
// The package holds types only and imports nothing outside the standard
// library and rebound's core.
package observe

import (
	"context"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// A Carrier is the job's own persisted metadata, which travels with the job
// from one attempt to the next (asynq task headers, River job metadata, a
// field of the native job hash). An observer uses it to link an attempt to
// the one before. Its method set matches OpenTelemetry's
// propagation.TextMapCarrier, so it can be passed to a propagator as is.
type Carrier interface {
	// Get returns the value stored under key, or "".
	Get(key string) string
	// Set stores value under key, to be seen by the job's next attempt.
	Set(key, value string)
	// Keys lists the stored keys.
	Keys() []string
}

// Attempt describes one run of one job.
type Attempt struct {
	// System names the engine: "asynq", "river" or "rebound" (the native
	// path).
	System string
	// Queue is the queue the job runs on.
	Queue string
	// JobID is the engine's ID for the job.
	JobID string
	// Kind is the job's type (asynq task type, River job kind, native
	// job name); "" if the engine has none.
	Kind string
	// Number is the 1-based number of this attempt.
	Number int
	// MaxAttempts is the total number of runs the job may have.
	MaxAttempts int
	// Carrier is the job's persisted metadata; nil when the engine cannot
	// carry any.
	Carrier Carrier
}

// Result is how an attempt ended.
type Result struct {
	// Err is the attempt's error; nil means it succeeded.
	Err error
	// Decision is the retry decision rebound made for a failed attempt:
	// retry after a delay, exhausted, or permanent. Zero on success.
	Decision backoff.Decision
	// FireAt is when the retry is scheduled to run, by the adapter's best
	// knowledge; zero unless Decision is a retry.
	FireAt time.Time
}

// An Observer watches attempts. Adapters call AttemptStarted before running
// the job's handler and AttemptEnded after the retry decision is made, with
// the context AttemptStarted returned. Implementations must be safe for
// concurrent use and must not panic; adapters recover if they do.
type Observer interface {
	// AttemptStarted is called when an attempt begins. The returned context
	// is passed to the job's handler (for example carrying a span).
	AttemptStarted(ctx context.Context, a Attempt) context.Context
	// AttemptEnded is called once the attempt has ended and its retry
	// decision is known.
	AttemptEnded(ctx context.Context, a Attempt, r Result)
}

// Outcome names how an attempt ended, for labels: "success", or the
// decision's outcome ("retry", "exhausted", "permanent").
func (r Result) Outcome() string {
	if r.Err == nil {
		return "success"
	}
	return r.Decision.Outcome.String()
}

// MapCarrier is a Carrier over a plain map, for engines whose metadata is a
// map[string]string (asynq task headers) and for tests.
type MapCarrier map[string]string

// Get returns m[key].
func (m MapCarrier) Get(key string) string { return m[key] }

// Set stores value under key; it does nothing on a nil map.
func (m MapCarrier) Set(key, value string) {
	if m != nil {
		m[key] = value
	}
}

// Keys lists the keys of m.
func (m MapCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
