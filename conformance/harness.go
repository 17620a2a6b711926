package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/observe"
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
	// On a busy machine the suite adds how far the process's own timers,
	// measured beside the check, fell behind over the same interval;
	// declare the engine's idle figure, not room for load.
	Lateness time.Duration
	// MaxDelay is the longest retry delay the engine can store. A longer
	// delay (a policy or retry-after hint near math.MaxInt64) is clamped
	// to it by the adapter: the job waits MaxDelay, never less, and never
	// runs at once by overflow. Zero means any time.Duration.
	MaxDelay time.Duration
	// MaxAttempts is the largest attempts cap the engine can honour (River
	// on PostgreSQL stores attempt numbers in a smallint: 32767). A rule
	// with a larger cap gives up at this many runs. Zero means any int.
	MaxAttempts int
	// MaxErrorBytes is the most bytes of an attempt's error message the
	// engine stores; a longer message is cut to at most this many bytes
	// of valid UTF-8. Zero means messages are stored whole.
	MaxErrorBytes int
	// TimeoutResolution is the granularity of the per-attempt timeout the
	// engine enforces ([Config.Timeout]); the suite uses timeouts of at
	// least twice this (asynq stores timeouts in whole seconds). Zero
	// means exact.
	TimeoutResolution time.Duration
}

// Config is what the suite asks a worker to run.
type Config struct {
	// Rule is the policy and attempts cap the adapter must apply.
	Rule backoff.Rule
	// Handler is the job body. The harness calls it once per attempt with
	// the context the adapter gives the job (the one Observer's
	// AttemptStarted returned, carrying the engine's deadline and
	// cancellation), the job's ID, its payload and the 1-based attempt
	// number the engine reports, mapped to rebound's numbering. It may
	// return an error marked with backoff.Permanent or backoff.RetryAfter,
	// a hostile error (one whose Error method panics, a typed nil, a
	// megabyte of text), or panic; the adapter must handle each as its
	// documentation says. It may block until its context is done, or
	// ignore its context and outlive the attempt's deadline.
	Handler func(ctx context.Context, job Job) error
	// Observer, when not nil, must be given to the adapter as its observer
	// (every adapter's WithObserver), unchanged: the suite checks that what
	// it is told equals what the engine did. The suite always sets
	// Observer, GiveUp and OnError when it starts a worker; a harness that
	// does not pass them on fails every check that runs jobs.
	Observer observe.Observer
	// GiveUp, when not nil, must be given to the adapter as its give-up
	// hook (every adapter's WithGiveUp).
	GiveUp observe.GiveUpFunc
	// OnError, when not nil, must be given to the adapter as its error
	// handler (every adapter's WithErrorHandler): the suite counts what
	// the adapter reports as internal errors, and a report where nothing
	// went wrong is a false alarm. A panicking policy must be reported
	// here, once per panic (*observe.PanicError{Op: "policy"}). A handler's
	// panic is the attempt's error (*observe.PanicError{Op: "handler"},
	// told to the observer); the adapter may also report it here, once.
	OnError func(error)
	// FallbackDelay, when positive, must be given to the adapter as the
	// delay it uses when the policy panics (WithFallbackDelay). The suite
	// always sets it, above the engine's Resolution.
	FallbackDelay time.Duration
	// Timeout, when positive, is the deadline the engine must set on each
	// attempt (asynq's Timeout option, River's JobTimeout, the native
	// worker's timeout). A handler that outlives it is one failed attempt.
	Timeout time.Duration
	// Key, when not nil, must be the adapter's jitter key function
	// (WithKey), called with the job's ID. It may panic: the adapter then
	// keys by backoff.Key(ID) and reports the panic. The suite sets it
	// only in the Config it passes to HookDelay.
	Key func(id string) backoff.Source
	// KindRules, when not empty, are rules for jobs of the named kinds
	// (every adapter's WithKindRule); other kinds run under Rule. Jobs
	// get a kind through [KindEngine].
	KindRules map[string]backoff.Rule
	// Breaker, when not nil, is the store of circuit breakers the adapter
	// must guard jobs with (every adapter's WithBreaker), and
	// Dependencies binds job kinds to the dependencies they need (every
	// adapter's WithDependency). The suite sets them in the Breaker check
	// only, with a store from [BreakerHarness]; every bound kind is a key
	// of KindRules too.
	Breaker      breaker.Store
	Dependencies map[string]string
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

// A KindEngine enqueues jobs of a named kind (asynq task type, River job
// kind, native job name), for the checks of per-kind rules. Every adapter's
// Engine implements it; Enqueue uses the harness's default kind.
//
// The suite passes EnqueueKind only kinds that are keys of the worker's
// Config.KindRules, so a harness knows every kind when Start is called
// (River registers a worker per kind); the kinds are made of lowercase
// letters and underscores. The harness's default kind is never one of
// them: jobs enqueued with Enqueue run under Config.Rule.
type KindEngine interface {
	Engine
	// EnqueueKind adds a job of the given kind, like Enqueue.
	EnqueueKind(ctx context.Context, kind string, payload []byte) (id string, err error)
}

// An ErrorEngine reads back the error message the engine stored for a
// job's last failed attempt (asynq's last_err, River's errors column, the
// native record's error), for the hostile-error checks. Every adapter's
// Engine implements it. The suite reads it once the job has failed for
// good; the message must be valid UTF-8 (a message that is not is stored
// with its invalid bytes replaced), at most [Limits.MaxErrorBytes] long
// when that is set, and recognisably the handler's error: its text, or,
// for an error whose Error method panics or a typed nil, its type name.
type ErrorEngine interface {
	Engine
	// LastError returns the stored message of the job's last failed
	// attempt, "" if none is stored.
	LastError(ctx context.Context, id string) (string, error)
}

// A CancelEngine cancels a job with the engine's own operator tool
// (asynq's Inspector: CancelProcessing for a running task, DeleteTask or
// ArchiveTask for a waiting one; River's Client.JobCancel from another
// client; the native queue's operator actions). The suite checks that what
// observers were told about the job equals the state the engine gave it,
// and that the job never runs again once it is terminal.
//
// Cancelling a running job must cancel its handler's context. After
// Cancel, State must still answer for the job: a harness whose tool
// deletes the job reports it as StateFailed.
type CancelEngine interface {
	Engine
	// Cancel cancels the job, running or waiting, as an operator would.
	Cancel(ctx context.Context, id string) error
}

// A RestartEngine stops its worker the way a deploy does (the engine's
// graceful shutdown, with a short shutdown timeout so that a running
// handler is cut short: its context is cancelled) and starts a fresh
// worker with the same Config on the same queue. A run cut short this way
// must be reported to observers as [observe.Interrupted], and the job must
// run again without using up an attempt: the next run gets the same
// attempt number. Jobs waiting for a retry keep their fire times.
type RestartEngine interface {
	Engine
	// Restart shuts the worker down and starts a new one; it returns once
	// the new worker is running.
	Restart(ctx context.Context) error
}

// A ReclaimEngine makes a running attempt's worker stale: the engine
// takes the job back as if the worker had died (the native queue's lease
// expiry and reclaim, River's rescuer, asynq's lease expiry), while the
// stale worker's handler is still running. The stale worker's outcome must
// not overwrite the newer state, and observers must not be told a success
// or a decision the engine did not apply. Engines whose reclaim cannot be
// forced in a test leave it out.
type ReclaimEngine interface {
	Engine
	// Reclaim takes the running job back from its worker now.
	Reclaim(ctx context.Context, id string) error
}

// A BookkeepingEngine reports how many per-job entries the adapter keeps
// in memory (River's pending decisions). Once every job is terminal it
// must return to zero: entries must not leak when a user's ErrorHandler or
// middleware ends or swallows an attempt, and must expire on their own on
// an idle system. The suite polls it after every check whose jobs all
// ended, for up to [BookkeepingGrace] plus the declared Resolution and
// Lateness. An adapter that keeps nothing per job returns 0. Engines that
// share one adapter value may each return the adapter's total.
type BookkeepingEngine interface {
	Engine
	// Pending returns the number of per-job entries the adapter holds.
	Pending() int
}

// A SharedHarness starts several engines (clients, servers or workers on
// different databases, schemas, key prefixes or queues) that share ONE
// adapter value (one Retrier, one Worker's options), as a user running
// several clients does. Job IDs may collide between the engines (River on
// two databases numbers jobs from 1 in each); a decision must never be
// applied to another engine's job. A harness whose engine lets it choose
// job IDs numbers them from 1 on each engine, so that they do collide.
type SharedHarness interface {
	Harness
	// StartShared is Start for n engines sharing one adapter value. Each
	// engine calls its own cfgs[i].Handler; the adapter-level fields
	// (Rule, Observer, GiveUp, OnError, FallbackDelay, Key, KindRules) are
	// taken from cfgs[0] and shared.
	StartShared(t testing.TB, cfgs []Config) []Engine
}

// BookkeepingGrace is how long after the last job of a check ended a
// [BookkeepingEngine] may still hold entries (besides the declared
// Resolution and Lateness).
const BookkeepingGrace = 5 * time.Second

// A Feature is one of the optional parts of the contract that every
// adapter is nonetheless expected to offer. A check that needs a feature
// the harness lacks fails with a violation that names what to implement,
// unless the harness declares the lack (see [LackingHarness]).
type Feature string

// The features the suite expects of every adapter. Each names the
// interface the harness or its Engine implements.
const (
	// FeatureKinds is [KindEngine], used by the KindRules check.
	FeatureKinds Feature = "KindEngine"
	// FeatureErrors is [ErrorEngine], used by the HostileErrors check.
	FeatureErrors Feature = "ErrorEngine"
	// FeatureCancel is [CancelEngine], used by the Cancel check.
	FeatureCancel Feature = "CancelEngine"
	// FeatureRestart is [RestartEngine], used by the Restart check.
	FeatureRestart Feature = "RestartEngine"
	// FeatureBookkeeping is [BookkeepingEngine], used by the Bookkeeping
	// check and, where present, after every check.
	FeatureBookkeeping Feature = "BookkeepingEngine"
	// FeatureShared is [SharedHarness], used by the Concurrency check.
	FeatureShared Feature = "SharedHarness"
)

// A LackingHarness declares the features its engine genuinely cannot
// offer, each with the reason (the suite logs it). A check that needs a
// declared feature is skipped instead of failed. Declare only what the
// engine lacks, not what the harness has not got round to: the default is
// that every feature is required. [ReclaimEngine] is optional and need not
// be declared.
type LackingHarness interface {
	Harness
	// Lacks maps each missing feature to why the engine cannot offer it.
	Lacks() map[Feature]string
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
