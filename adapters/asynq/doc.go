// Package reboundasynq runs asynq tasks under rebound retry rules: the same
// backoff curve, keyed jitter and attempts cap as every other rebound
// adapter, a rule per task type if you want one, and observers told what
// asynq really did.
//
// The guide, with the plug-in, the options and a table of asynq's limits: https://github.com/rebound-go/rebound/blob/main/docs/asynq.md
//
// # Integration
//
// Build one [Retrier] and plug it in twice, on the server's config and on
// its mux; build tasks with it:
//
//	retry, err := reboundasynq.New(rule, reboundasynq.WithKindRule("email:send", emailRule))
//	srv := asynq.NewServer(redisOpt, asynq.Config{
//		RetryDelayFunc:           retry.RetryDelay,
//		DelayedTaskCheckInterval: 100 * time.Millisecond, // for sub-second retries
//		TaskCheckInterval:        100 * time.Millisecond,
//	})
//	mux.Use(retry.Middleware)
//	client.Enqueue(retry.NewTask("email:send", payload))
//
// [Retrier.NewTask] gives the task headers (precise mode and an observer's
// links from one attempt to the next travel in them; asynq keeps a task's
// headers only if it has at least one) and the MaxRetry of its type's
// rule. Tasks built otherwise work, with what the sections below say they
// lose.
//
// Register the middleware before any middleware of your own, or make
// yours return the error it gets (wrapping it with %w is fine): the
// decision travels inside that error.
//
// Package reboundasynqtest runs a handler through a real asynq server on an
// in-process miniredis with a Retrier installed, so that a test can assert
// "this task failed attempt 2 and runs again at t" without sleeping.
//
// # How the two halves meet
//
// asynq calls its RetryDelayFunc with the retry count, the error and a copy
// of the task's type, payload and headers only: no task ID, no queue, no
// MaxRetry. The middleware runs inside the task's context, where all of
// those are known. It numbers the attempt (asynq's retry count n is
// rebound's attempt n+1), runs the handler, asks the task type's rule for
// a decision keyed by the task ID (backoff.Key(taskID)), fixes the absolute
// time the retry fires, and returns the handler's error wrapped in a
// carrier of that decision. asynq hands the very same error value to
// RetryDelay, which returns the time left until the fixed fire time. The
// decision is made once; what the observer hears is what asynq applies.
//
// The carrier reads as the handler's error, cut to [MaxErrorBytes] (asynq
// stores it as the task's last error), and unwraps to the handler's error,
// so errors.Is and errors.As in an ErrorHandler see through it;
// [Decision] reads the decision back.
//
// asynq stops waiting for a handler when the task's context ends (its
// Timeout or deadline, an Inspector.CancelProcessing) and handles the run
// on its own goroutine; the handler's return then goes nowhere. The
// Retrier keeps each run until asynq is done with it. RetryDelay, called
// by asynq with the context's error, finds the run, waits for its handler
// to return (at most ten seconds), and decides it under the rule, keyed by
// the task ID, exactly as the middleware would have: see "What observers
// are told". While it waits asynq has stored nothing, so the task's next
// attempt never runs alongside a handler that outlived its deadline, and
// the worker slot stays taken, as it really is.
//
// RetryDelay finds that run by what asynq hands it: the task's type, its
// retry count and the header [HeaderTask], a random token naming the
// delivery, which NewTask sets and RetryDelay replaces before asynq stores
// each retry. So thirty tasks of one type with empty payloads, timing out
// together, are each decided as themselves, and a run is handed to one
// RetryDelay call only. asynq hands back nothing else that tells tasks
// apart: tasks built without a token (asynq.NewTask, or a task of a
// rebound release before tokens) and one Task value enqueued several
// times share a key on their first delivery, and when the contexts of
// several such runs end together each is decided by one of those
// RetryDelay calls, the oldest first, but not necessarily its own: a
// retry's keyed jitter, and its reported fire time, may be another such
// task's. From their second delivery on each has its own token.
//
// # Attempts cap
//
// A task runs at most MaxAttempts times, MaxAttempts being the smaller of
// its rule's cap and asynq's MaxRetry+1. When the rule gives up
// (attempts exhausted, or an error marked [backoff.Permanent]) the
// middleware's error also matches asynq.SkipRetry and asynq archives the
// task. The middleware cannot raise asynq's cap after the fact: a task
// enqueued with a MaxRetry below the rule's (asynq's default is 25) stops
// there, and the observer is told that smaller cap.
//
// [Retrier.MaxRetryFor] (and NewTask) give asynq one retry more than the
// rule allows, MaxAttempts, capped at math.MaxInt32: asynq then hands
// rebound even a failure of the rule's last attempt whose context ended
// before the handler returned, and retries the task; rebound reports that
// attempt as the last and archives the delivery that follows without
// running it ([ExhaustedError]). asynq stores MaxRetry and the retry count
// as int32, so the largest cap asynq can honour is 2^31 runs.
//
// # Never early, and which jitter windows spread
//
// asynq stores retry times in whole Unix seconds, truncated, and promotes
// a retry once the current second reaches that value, so a retry can run
// up to a second before asynq's own time.Now().Add(delay). By default the
// fire time is rounded up to the next whole second: a retry never runs
// before its computed time, at the cost of up to one second of lateness.
// Every retry of a task then fires on a whole second, so jitter can only
// spread a herd over whole seconds: a window of W seconds puts the herd on
// at most W+1 instants. Under a few seconds that barely spreads at all
// (jitter over one second leaves a herd on two or three instants, no better
// than none); use windows of ten seconds or more, or precise mode.
//
// With [WithPrecise] the fire time is exact: RetryDelay stores it in the
// task header [HeaderRetryAt], and an attempt that asynq delivers before
// that time waits in the middleware until it is due (at most one second,
// holding a worker slot and counting against the task's timeout). Jitter
// then spreads any window, as long as the server's Concurrency covers the
// tasks due within one second. The wait never ends early: a cancel or a
// deadline that comes during it reaches the handler at the due time, as a
// context already done (asynq counts that run as failed). Precise mode
// needs a task with headers (NewTask); a task without them is rounded up,
// and so is a retry after a handler that outlived its deadline by more
// than ten seconds (its headers cannot be written while it runs).
//
// # What observers are told
//
// [WithObserver] is told AttemptStarted before the handler runs (after
// precise mode's wait) and AttemptEnded once per attempt with the outcome
// asynq applies; [WithGiveUp] once per task given up. Depending on how a
// run ends:
//
//   - The handler returns while the context is live: its outcome under the
//     rule, reported before the middleware returns.
//   - A handler panic: a failed attempt with [*observe.PanicError]
//     (Op "handler"), counted like any failure.
//   - An error for which the server's IsFailure returns false
//     ([WithIsFailure]): [observe.Snoozed], retried after the rule's delay
//     for the attempt without counting it.
//   - asynq.SkipRetry: permanent, archived; asynq.RevokeTask: permanent,
//     deleted.
//   - The task's timeout or deadline passes first: a counted failure with
//     context.DeadlineExceeded, whatever the handler returns, reported when
//     the handler returns (at most ten seconds after asynq gave up on it),
//     retried after the rule's keyed delay from then; on asynq's last
//     allowed run, exhausted (asynq archives it). asynq's timeouts are
//     whole seconds.
//   - Inspector.CancelProcessing, or a server BaseContext cancelled: asynq
//     counts a failure with context.Canceled and retries it; reported as
//     such, with the fire time asynq stores, the error an
//     [*observe.CancelledError] reading "context canceled", as the
//     engine's cancel reads on every adapter.
//   - Server shutdown that cuts a handler short (the handler outlives the
//     ShutdownTimeout): asynq puts the task back without counting the run;
//     reported as [observe.Interrupted]. rebound knows it only because
//     asynq does not hand that run to RetryDelay: it reports it two
//     seconds after the context ended. A process that exits sooner does
//     not report it.
//   - A lost lease (the worker stalled, or lost Redis): asynq gives the run
//     up without storing anything, and its recoverer retries the task
//     later, possibly in another process, counting the run. rebound
//     reports the run as Interrupted; the recoverer's retry waits the
//     rule's delay with unkeyed jitter.
//
// One case asynq gives no way to tell apart from a shutdown: a cancel on
// asynq's own last allowed run (a task enqueued with a MaxRetry at or below
// the rule's last retry) is archived by asynq without asking RetryDelay,
// and so is reported as Interrupted and not given up. NewTask's spare
// retry avoids it.
//
// An operator's Inspector.ArchiveTask or DeleteTask on a task waiting for
// its retry runs no attempt: nothing more is reported, the give-up hook is
// not called, and the Retrier keeps nothing for the task.
//
// The observer's carrier is a copy of the task's headers: what the
// observer sets reaches the task only through RetryDelay, on asynq's
// goroutine, just before asynq stores the task. After a handler that
// outlived its deadline by more than ten seconds it is dropped, so an
// OpenTelemetry span of the next attempt links to the one before.
//
// # Circuit breaker
//
// [WithBreaker] and [WithDependency] guard a dependency shared by many
// tasks (a payment API, say) with a circuit breaker kept in a
// breaker.Store, breaker/redisstore on asynq's Redis, so that every server
// sees one breaker per dependency:
//
//	store := redisstore.New(rdb, breaker.Rules{Default: breaker.Must(breaker.Parse(
//		"breaker(failures=5, cooldown=exponential(5s, 5m), budget=budget(10%, 5/s, 20))"))}, redisstore.Options{})
//	retry, err := reboundasynq.New(rule, reboundasynq.WithBreaker(store),
//		reboundasynq.WithDependency("payment:charge", "payments"))
//	srv := asynq.NewServer(redisOpt, asynq.Config{
//		RetryDelayFunc: retry.RetryDelay,
//		IsFailure:      retry.IsFailure, // a deferred run spends no attempt
//	})
//
// Before a bound task's handler runs the middleware asks the breaker.
// While it is open, or its retry budget is spent once it closed, the
// handler does not run: the middleware returns an error for which
// [Retrier.IsFailure] answers false, so asynq retries the task without
// counting the run (its retry count stays), at the time the breaker may
// answer otherwise plus a spread of up to one first cool-down keyed by the
// task, rounded up to a whole second (exact in precise mode). Once the
// breaker closes, the retry budget releases the held-back tasks at its
// rate; the store remembers the tasks it deferred, so their next run is
// metered although asynq's retry count says first run. The observer hears
// a held-back run as [observe.Deferred] (asynq stores its text as the
// task's last error until the next run), and, when it is an
// [observe.BreakerObserver], every change of a breaker. A task on its
// last allowed run (retry count at MaxRetry) cannot be held back, since
// asynq archives any failure there: it runs. NewTask leaves every attempt
// of the rule room.
//
// # Limits
//
// The longest delay is [MaxDelay], about 292 years: a longer one (a policy
// or retry-after hint near math.MaxInt64) waits MaxDelay, and never wraps
// around into a retry at once. The largest cap is 2^31 attempts. The
// stored last error is cut to [MaxErrorBytes]. Round-up mode's resolution
// is one second; precise mode's is exact (but after a handler that
// outlived its deadline by more than ten seconds), with the lateness of
// asynq's polling (DelayedTaskCheckInterval and TaskCheckInterval; 100ms
// each keeps it near 100ms). A handler that ignores its context keeps its
// worker slot for up to ten seconds past its deadline.
//
// In precise mode asynq's own tools do not show rebound's time: the
// Inspector (and asynqmon) show a retrying task's NextProcessAt as the
// whole second asynq stores, up to one second before the retry really
// runs, and a task held in the middleware as active (its Retried already
// counted) before its handler starts. The exact due time is the task's
// [HeaderRetryAt] header (TaskInfo.Headers, decimal Unix nanoseconds), and
// what observers were told (an OpenTelemetry span's
// rebound.retry.fire_time).
//
// # Errors no worker should die of
//
// asynq calls Error and errors.Is on the handler's error on its own
// goroutine, where a panic kills the process. The middleware's error
// answers both without touching a hostile error: a handler error whose
// Error, Is or Unwrap method panics, or a typed nil
// (`var e *MyErr; return e`), is one failed attempt whose stored message
// names the error's type; the panic is reported to [WithErrorHandler].
// Without the middleware, asynq's own calls are unprotected.
//
// A policy, key function, observer, give-up hook or IsFailure function
// that panics never takes the worker down: the panic is recovered and
// reported to the error handler as a [*observe.PanicError], and a retry
// whose policy panicked waits [WithFallbackDelay] (default one minute),
// rounded up. Panics inside asynq's RetryDelayFunc would otherwise kill
// the worker process.
//
// RetryDelay on its own (a server without the middleware, or a task
// recovered from a crashed worker) gives the rule's delay for attempt n+1
// with fresh, unkeyed jitter, rounded up; asynq's MaxRetry is then the only
// cap, and permanent errors are retried unless the handler returns
// asynq.SkipRetry itself.
package reboundasynq
