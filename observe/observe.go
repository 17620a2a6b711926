// Package observe is the seam between rebound's adapters and whatever watches
// them. Every adapter reports each attempt of each job to an [Observer]: when
// it starts, and how it ended with the retry decision that followed. The otel
// package implements Observer with OpenTelemetry spans and metrics; tests and
// users can implement it too.
//
// The OpenTelemetry guide shows an observer at work: https://github.com/rebound-go/rebound/blob/main/docs/tracing.md
//
// Adapters guarding jobs with a circuit breaker (package breaker) also tell
// an observer that implements [BreakerObserver] when a dependency's breaker
// changes state, and report the runs the breaker held back as
// [Deferred].
//
// The package holds types only and imports nothing outside the standard
// library and rebound's pure packages (backoff, breaker).
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
//
// The zero Result is a success. A failed attempt has Err set and the retry
// decision rebound made for it. An attempt that ended without counting as
// one (a snooze, an interrupted run) has Counting set to say so: see
// [Counting].
type Result struct {
	// Err is the attempt's error; nil means it succeeded. When Counting is
	// not Counted, Err is what the handler or engine returned
	// (river.JobSnooze's error, the context's cancellation, the
	// [*DeferredError] of a run a breaker held back), kept for
	// information: it is not a failure.
	Err error
	// Decision is the retry decision rebound made for a failed attempt:
	// retry after a delay, exhausted, or permanent. Zero on success, and
	// zero for a failed attempt whose follow-up the engine decided without
	// asking rebound (see [Result.EngineDecided]). For an
	// attempt that did not count, the decision is the engine's, not the
	// rule's: a retry whose Delay is the time until FireAt, so that an
	// observer that ignores Counting still sees the job run again.
	Decision backoff.Decision
	// FireAt is when the job runs again, by the adapter's best knowledge:
	// the scheduled retry when Decision is a retry, the engine's rerun time
	// for an attempt that did not count; zero otherwise.
	FireAt time.Time
	// Counting says whether the attempt counted against the attempts cap
	// (Counted, the zero value) or, if not, why not (Snoozed, Interrupted,
	// Deferred).
	// Observers should not treat an attempt that did not count as a
	// failure, nor its delay as a retry delay.
	Counting Counting
}

// Counting says whether an attempt counted against the job's attempts cap,
// and if not, why not. The zero value, Counted, is an ordinary attempt: it
// succeeded, or it failed and used up one of the job's attempts. The other
// values are runs the engine repeats later without using up an attempt: the
// cap does not apply, the rule was not asked, and the next run may carry
// the same attempt number.
type Counting uint8

const (
	// Counted is an ordinary attempt: it succeeded, or it failed and
	// counts against the attempts cap.
	Counted Counting = iota
	// Snoozed is an attempt whose job asked to run again later without
	// counting the attempt: River's river.JobSnooze, or an asynq handler
	// error for which the server's Config.IsFailure returns false. FireAt
	// is when the engine runs it again.
	Snoozed
	// Interrupted is an attempt cut short because the worker was stopping
	// (a River client or asynq server shutting down, a native worker's
	// Shutdown): the engine puts the job back as it was, to run again
	// without counting this run. It says nothing about the job itself, so
	// it is not a failure. FireAt is when the job is available again,
	// usually at once.
	Interrupted
	// Deferred is a run a circuit breaker held back: the job is bound to a
	// dependency whose breaker is open (or whose retry budget is spent),
	// so the handler did not run and no attempt was spent. Err is a
	// [*DeferredError] naming the dependency; FireAt is when the engine
	// runs the job again, with the same attempt number.
	Deferred
)

// String returns "counted", "snoozed", "interrupted", "deferred", or
// "uncounted" for a value this package does not define.
func (c Counting) String() string {
	switch c {
	case Counted:
		return "counted"
	case Snoozed:
		return "snoozed"
	case Interrupted:
		return "interrupted"
	case Deferred:
		return "deferred"
	}
	return "uncounted"
}

// EngineDecided reports whether the attempt failed and the engine decided
// what follows without asking rebound: River retrying a job at the time
// its worker's own NextRetry returned, or acting on what a middleware
// outside rebound's made of the error (a snooze, a success), or an
// ErrorHandler's cancel. rebound then knows neither the engine's decision
// nor whether the run counted: Decision is zero, FireAt is zero, and the
// job is not given up (the give-up hook is told only of rebound's own
// decisions). [Result.Outcome] names it "engine".
func (r Result) EngineDecided() bool {
	return r.Counting == Counted && r.Err != nil && r.Decision.Outcome == 0
}

// Counts reports whether the attempt counted against the attempts cap.
func (r Result) Counts() bool { return r.Counting == Counted }

// GaveUp reports whether rebound stopped retrying the job after this
// attempt: a counted failure whose decision is exhausted or permanent.
func (r Result) GaveUp() bool {
	return r.Counting == Counted && r.Err != nil && !r.Decision.Retry() && r.Decision.Outcome != 0
}

// OutcomeEngine is [Result.Outcome]'s name for a failed attempt whose
// follow-up the engine decided without asking rebound.
const OutcomeEngine = "engine"

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

// Outcome names how an attempt ended, for labels: "success", the decision's
// outcome ("retry", "exhausted", "permanent"), "engine" for a failure
// whose follow-up the engine decided without rebound
// ([Result.EngineDecided]), or, for an attempt that did not count, its
// [Counting] name ("snoozed", "interrupted", "deferred").
func (r Result) Outcome() string {
	switch {
	case r.Counting != Counted:
		return r.Counting.String()
	case r.Err == nil:
		return "success"
	case r.Decision.Outcome == 0:
		return OutcomeEngine
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
