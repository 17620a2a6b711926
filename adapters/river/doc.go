// Package reboundriver applies a rebound retry rule to River
// (github.com/riverqueue/river) jobs: the same backoff curve, keyed jitter and
// attempts cap as every other rebound adapter, with each attempt reported to an
// [observe.Observer].
//
// The guide, with the plug-in, the options and a table of River's limits: https://github.com/rebound-go/rebound/blob/main/docs/river.md
//
// # Plugging in
//
// One [Retrier] value goes into the user's own river.Config twice: as
// RetryPolicy and in Plugins, where River installs it as worker middleware,
// insert middleware and a work-end hook.
//
//	retrier, err := reboundriver.New(rule, reboundriver.WithObserver(obs))
//	...
//	client, err := river.NewClient(driver, &river.Config{
//		RetryPolicy: retrier,
//		Plugins:     []rivertype.Plugin{retrier},
//		Workers:     workers,
//		...
//	})
//
// Installed in Config.Middleware instead, it does everything but the
// work-end hook, so a worker that outlives its timeout and then returns nil
// counts as a success, as River counts it. Installed in both, it works each
// attempt once.
//
// River's retry hook, ClientRetryPolicy.NextRetry, sees the job row but not the
// error of the attempt that just failed, so the Retrier's worker middleware
// decides right after the attempt, while the error is at hand, and hands the
// fire time to NextRetry through a table keyed by the job row itself: River
// passes one attempt's *rivertype.JobRow to both, so a decision never
// reaches another job, not even one with the same ID on another database
// served by the same Retrier. Only attempts that
// River is about to retry leave an entry, and NextRetry takes it out and
// reports the attempt to the observer with the time River is given. An entry
// River never asks for is forgotten on its own, with no further call into
// the Retrier, within two seconds of River finishing with the attempt (five
// minutes if the attempt's context never ends), so the table never grows
// with the number of jobs run; [Retrier.Pending] reports its size. A job
// cancelled remotely as the attempt ended is reported permanent, as River
// stores it cancelled.
//
// The Retrier must see the error River acts on. River enters Plugins
// before Config.Middleware, in list order, and a worker's own Middleware
// outside all of them: a middleware outside the Retrier that changes or
// swallows the error, a worker whose own NextRetry answers without
// [Retrier.WorkerNextRetry], or an ErrorHandler that returns SetCancelled
// decides in the Retrier's place, and River never asks NextRetry. rebound
// does not learn what River did then (a retry at the worker's time, a
// snooze, a success, a cancel), so it claims no decision: the attempt is
// reported as the engine's ([observe.Result.EngineDecided], outcome
// "engine"), with no fire time, and the give-up hook is not called: the
// job may well run again and succeed.
//
// # Mapping
//
//   - A failed attempt with attempts left is retried after the rule's delay for
//     that attempt, raised to the error's [backoff.RetryAfter] hint when the hint
//     is longer. Jitter is keyed by the job ID,
//     backoff.Key(strconv.FormatInt(job.ID, 10)), so one job's schedule is
//     reproducible; [WithKey] keys by something else.
//   - An error marked [backoff.Permanent] ends the job `cancelled`: the
//     middleware returns river.JobCancel(err).
//   - The rule's MaxAttempts is the cap, whatever the job was inserted with.
//     The insert middleware writes it into every job's max_attempts, and at
//     work time the middleware sets the running job's MaxAttempts to the cap,
//     so River itself discards a job whose attempt number has reached the cap:
//     exhausted jobs end `discarded`, as they do without rebound. A cap above
//     32767 gives up after 32767 runs: PostgreSQL stores attempt numbers in a
//     smallint, and River numbering a 32768th run would make every fetch of
//     the job's queue fail. A job that was retried by hand past its cap
//     (River's JobRetry grants one more run) gets that run and is discarded
//     again if it fails.
//   - river.JobSnooze and river.JobCancel returned by a worker keep River's
//     meaning; neither leaves an entry behind. A snooze is not an attempt:
//     the observer hears it as [observe.Snoozed], not as a failure. A
//     worker's own JobCancel is permanent.
//   - A run cut short because the client is stopping (StopAndCancel, or
//     Stop's SoftStopTimeout running out) is put back by River without
//     counting it; the observer hears it as [observe.Interrupted]. A
//     cancellation River does count, such as cancelling the context the
//     client was started with (without SoftStopTimeout), is decided by the
//     rule like any error. River marks its own stop with an unexported
//     cancellation cause, so a start context cancelled with a cause of the
//     caller's own (context.WithCancelCause) is reported as interrupted
//     although River counts it.
//   - A worker panic is decided like an error and then re-raised, so River
//     still records it as a panic with its stack trace; the observer is told
//     an [*observe.PanicError] with Op "handler", as on every adapter. A
//     panic with an error marked [backoff.Permanent] cancels the job.
//   - A worker that outlives River's JobTimeout (or its Worker.Timeout) has
//     failed one counted attempt, decided by the rule like any error,
//     whatever it returns: [Retrier.WorkEnd] turns a late nil into
//     context.DeadlineExceeded (with the Retrier in Plugins).
//   - river.Client.JobCancel from any client, while the job runs, cancels
//     the attempt's context with River's remote-cancel cause; River then
//     ends the job cancelled whatever the worker returns, except nil, and
//     the observer hears permanent. If the worker fails in the moment
//     between the cancel request and its arrival, River still stores the
//     job cancelled, but the observer heard the retry. JobCancel of a job
//     waiting for its retry runs nothing of the Retrier's: the observer's
//     last word on it is that retry.
//   - River's rescuer takes back a job whose worker has run longer than
//     RescueStuckJobsAfter and asks NextRetry with the row it read, which
//     the middleware never saw: NextRetry applies the kind's rule to the
//     attempt number without an error (a RetryAfter hint of the stuck
//     attempt is unknown). If that worker is still alive, its outcome is
//     reported when it ends, but River does not store it (and River's
//     completer does not check the attempt number, so it overwrites a
//     newer run of the job that is running at that moment).
//
// # Hostile errors
//
// River prints a failed attempt's error and stores the text in the job's
// errors column, outside any recover: an error whose Error method panics,
// a typed nil, or one whose Unwrap, Is or As panics would take the worker
// process down, and a message with a NUL byte makes PostgreSQL refuse the
// update, leaving the job running. The middleware hands River an error
// whose text is always safe instead: the panic is reported, a typed nil
// reads as its type, NUL bytes and invalid UTF-8 become U+FFFD, and a
// message longer than [MaxErrorBytes] is cut. The attempt is one failed
// attempt like any other, and the observer is told the text River stored.
//
// NextRetry never returns a zero time or a time in the past (River would fall
// back to its own policy): a decision taken a moment before is clamped to
// now, and a policy that panics is recovered and replaced by the fallback
// delay ([WithFallbackDelay], one minute by default).
//
// # Timing
//
// River makes a retry due within five seconds `available` at once with a
// future scheduled_at, and workers find it on their next fetch poll, every
// river.Config.FetchPollInterval (one second by default); longer retries wait
// for River's scheduler, which runs every five seconds. River's batch
// completer also records a failed attempt up to 250 ms after it ends, and
// the job cannot be fetched again before that. A retry therefore never runs
// early (fire times are rounded up to whole milliseconds, see [Resolution]),
// and on an idle queue runs up to about one poll interval late. Short retry
// delays want a shorter FetchPollInterval (and a FetchCooldown no longer than
// it): with 100 ms, retries measured on PostgreSQL ran a median 91 ms and at
// most 286 ms late, against 834 ms and 1.1 s with the default.
//
// # Limits
//
// What River with a Retrier can store and promise, on PostgreSQL and SQLite
// alike:
//
//   - Delay: any time.Duration. Now plus math.MaxInt64 is in 2318, which
//     both backends store (PostgreSQL up to year 294276, SQLite's text
//     format up to 9999), so a delay is never clamped, and never wraps
//     into the past or runs at once.
//   - Attempts: at most 32767 runs; a larger cap gives up there (see
//     Mapping).
//   - Resolution: fire times are rounded up to whole milliseconds
//     ([Resolution]).
//   - Error messages: at most [MaxErrorBytes] of each attempt's message is
//     stored, as valid UTF-8 without NUL bytes (see Hostile errors).
//   - Timeout: River's JobTimeout or the worker's Timeout, a context
//     deadline, exact; an attempt that outlives it is one counted failure.
//   - Shutdown: a run cut short by a stopping client is not an attempt
//     ([observe.Interrupted]); the job runs again with the same number.
//   - Operator cancel: a running job cancelled with JobCancel is permanent
//     (the give-up hook hears it), its error an [*observe.CancelledError]
//     reading what River stored ("JobCancelError: job cancelled
//     remotely"), as the engine's cancel reads on every adapter; a waiting
//     one is cancelled without the Retrier hearing of it.
//
// # Reporting
//
// [WithObserver] hears every attempt: when it starts, and how it ended once
// River has been handed the decision. [WithGiveUp] hears every job given
// up, exhausted or permanent, once, with the same attempt the observer was
// told. [WithErrorHandler] hears internal errors: every panic of user code
// the Retrier recovered (a policy, a key function, an observer, the give-up
// hook, an error's own methods), as an [*observe.PanicError]; by default
// they are logged with slog.Default. Nothing a user passes in takes a
// worker down.
//
// # Circuit breaker
//
// [WithBreaker] and [WithDependency] guard a dependency shared by many jobs
// (a payment API, say) with a circuit breaker kept in a breaker.Store, so
// that every client sees one breaker per dependency: breaker/pgstore keeps
// it in the database River uses. Before a job bound to a dependency runs,
// the Retrier asks the breaker. While the breaker is open, or its retry
// budget is spent once it closed, the job is snoozed with river.JobSnooze:
// River reruns it later without counting an attempt (its attempt number
// stays, its metadata counts the snooze), so an outage shorter than the
// rule's schedule exhausts no job. The snooze lasts until the breaker may
// answer otherwise plus a spread of up to one first cool-down keyed by the
// job, so the held-back jobs come back spread out; once the breaker closes,
// the retry budget releases them at its rate. Jobs of other kinds are not
// asked about. The observer hears a held-back run as [observe.Deferred]
// and, when it is an [observe.BreakerObserver], every change of a breaker.
// Exhausted and permanent keep their meaning: a run the breaker let
// through fails and is decided by the rule like any other.
//
// # Per-kind rules
//
// [WithKindRule] gives one job kind its own rule; the middleware, NextRetry
// and the insert middleware all apply it to jobs of that kind. A worker that
// overrides river.Worker's NextRetry can return [Retrier.WorkerNextRetry].
//
// # Testing
//
// Package reboundrivertest runs a worker through River's own executor with
// a Retrier installed, on a clock the test controls, and records what the
// Retrier reports, so a test can check a job's retry story, its delays and
// fire times, without a running client and without sleeping.
package reboundriver
