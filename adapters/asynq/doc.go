// Package reboundasynq runs asynq tasks under a rebound retry rule: the same
// backoff curve, keyed jitter and attempts cap as every other rebound adapter.
//
// # Integration
//
// Build one [Retrier] from a [backoff.Rule] and plug it into the server's
// config and mux:
//
//	r, err := reboundasynq.New(rule)
//	srv := asynq.NewServer(redisOpt, asynq.Config{RetryDelayFunc: r.RetryDelay})
//	mux.Use(r.Middleware)
//
// and, optionally, enqueue with [Retrier.MaxRetry] so asynq's own counters
// agree with the rule.
//
// # How the two halves meet
//
// asynq calls its RetryDelayFunc with the retry count, the error and a copy
// of the task's type, payload and headers only: no task ID, no queue, no
// MaxRetry. The middleware runs inside the task's context, where all of those
// are known. It numbers the attempt (asynq's retry count n is rebound's
// attempt n+1), runs the handler, asks the rule for a decision keyed by the
// task ID (backoff.Key(taskID)), fixes the absolute time the retry fires, and
// returns the handler's error wrapped in a carrier that holds that decision.
// asynq hands the very same error value to RetryDelay, which finds the
// carrier with errors.As and returns the time left until the fixed fire time.
// The delay is computed once, in the middleware; RetryDelay never recomputes
// it, so the decision an observer sees is the one asynq applies.
//
// The carrier keeps the handler's error message (asynq stores it as the
// task's last error) and unwraps to the handler's error, so errors.Is and
// errors.As in an ErrorHandler see through it.
//
// # Attempts cap
//
// The rule's MaxAttempts is the truth. When the rule gives up (attempts
// exhausted, or an error marked [backoff.Permanent]) the middleware's error
// also matches [asynq.SkipRetry], and asynq archives the task at once,
// whatever MaxRetry it was enqueued with. A task enqueued with a smaller
// MaxRetry stops earlier, as asynq decides; the middleware reports the
// smaller cap. If asynq itself used up an attempt without the handler
// returning (lease expired, deadline exceeded), an attempt can arrive past
// the cap: the middleware archives it without running the handler, so the
// handler never runs more than MaxAttempts times.
//
// # Never early
//
// asynq stores retry times in whole Unix seconds, truncated, and promotes a
// retry once the current second reaches that value, so a retry can run up to
// a second before asynq's own time.Now().Add(delay). By default the
// middleware rounds the fire time up to the next whole second: a retry never
// runs before its computed time, at the cost of up to one second of
// lateness. With [WithPrecise] the fire time is exact and stored in the task
// header [HeaderRetryAt]; an attempt that asynq delivers before that time
// waits in the middleware until it is due (at most one second, holding a
// worker slot and counting against the task's timeout). Precise mode needs a
// task with headers (enqueued with asynq.NewTaskWithHeaders and at least one
// header); tasks without headers are rounded up as in the default mode.
//
// # Errors asynq produces itself
//
//   - Handler panics: the middleware recovers them as a [*observe.PanicError] and
//     treats them as failures under the rule. asynq.IsPanicError reports false
//     for them; use errors.As with *observe.PanicError.
//   - asynq.ErrHandlerNotFound (the mux has no handler for the type) passes
//     through the middleware and is retried under the rule, like any failure:
//     a newer worker may know the type. Mark it permanent in a middleware of
//     your own if you prefer to archive it.
//   - asynq.SkipRetry returned by the handler archives at once (reported as
//     permanent); asynq.RevokeTask deletes the task (reported as permanent).
//   - Lease expired (a worker crashed or stalled) and deadline exceeded or
//     context canceled, when asynq's own path wins the race with the handler:
//     the error reaches RetryDelay without the carrier. It uses up an attempt
//     (asynq counts it); RetryDelay gives the rule's delay for attempt n+1
//     with fresh, unkeyed jitter, rounded up to a whole second. The next
//     attempt's middleware enforces the cap.
//   - Tasks handled without the middleware are treated the same way: rule's
//     delay for attempt n+1, unkeyed jitter, rounded up; asynq's MaxRetry is
//     then the only cap, and permanent errors are retried unless the handler
//     returns asynq.SkipRetry itself.
//
// # Failure of rebound's own parts
//
// A policy, observer or IsFailure function that panics never takes the
// worker down: the panic is recovered, reported to the function given with
// [WithErrorHandler] as a [*observe.PanicError], and the retry falls back to
// [WithFallbackDelay] (default one minute), rounded up. Panics inside asynq's
// RetryDelayFunc would otherwise kill the worker process.
package reboundasynq
