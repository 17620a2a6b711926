// Package conformance is rebound's definition of a correct adapter: one
// suite that every adapter (asynq, River, the native Redis path), on every
// backend, runs from its own tests, so that "the same schedule and the same
// attempts cap on every engine" is checked rather than promised.
//
// The guide, with the measured lateness of every adapter: https://github.com/rebound-go/rebound/blob/main/docs/conformance.md
//
// # Using the suite
//
// An adapter's test implements [Harness] and calls [Run]:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, harness{client: testenv.Redis(t)})
//	}
//
// Each check runs as a subtest named after it (go test -run
// 'TestConformance/Herd' runs one), and Run logs a lateness table at the
// end. [RunReport] does the same and returns the figures as a [Report].
// [Reference] is a complete harness on an in-memory engine: read it as the
// example of how to write one.
//
// A harness connects the suite to the adapter as a user would use it:
//
//   - Start builds a worker around the Config, isolated from every other
//     Start (its own queue, key prefix or schema), and tears it down with
//     t.Cleanup. Several workers of one check may be live at once. The
//     worker must have the concurrency to run a few hundred jobs
//     promptly: the Herd check enqueues 2 x 200.
//   - Everything in the Config goes to the adapter through its own
//     options: Rule and KindRules (WithKindRule), Observer (WithObserver),
//     GiveUp (WithGiveUp), OnError (WithErrorHandler), FallbackDelay
//     (WithFallbackDelay), Timeout (the engine's per-attempt timeout) and,
//     for HookDelay, Key (WithKey). The suite always sets Observer, GiveUp,
//     OnError and FallbackDelay.
//   - The handler must get the context the adapter runs the job with (the
//     one Observer.AttemptStarted returned), each attempt's job ID (the
//     string Enqueue returned), the payload exactly as enqueued, and the
//     attempt number mapped to rebound's numbering (1 for the first run).
//     The suite scripts every job through its payload (fail k times,
//     always fail, fail permanently, fail with a retry-after hint or a
//     hostile error, panic, block until cancelled, outlive the timeout),
//     so a harness needs no knowledge of the scripts. Look-alike jobs
//     have an empty payload, the same for all of them, and are scripted
//     by the job ID the handler gets: the harness must enqueue an empty
//     payload as it is and hand the handler the ID Enqueue returned.
//   - The adapter must key each job's jitter by backoff.Key(Job.ID), or by
//     Config.Key when it is set.
//   - HookDelay calls the function the engine calls after a failure, for
//     any decimal job ID (it need not name an existing job), and must not
//     wait.
//   - Limits states the engine's resolution (how its stored fire times are
//     rounded; the adapter may round a delay up by less than that, never
//     down), its lateness when idle, and how far it can go: the longest
//     delay and largest attempts cap it can store, how much of an error
//     message it keeps, the granularity of its timeouts. Declare what the
//     engine really does: the suite holds the harness to those numbers,
//     and they size its windows.
//   - The engine should implement the optional interfaces: [KindEngine],
//     [ErrorEngine], [CancelEngine], [RestartEngine] and
//     [BookkeepingEngine], and the harness [SharedHarness] and
//     [BreakerHarness] (a breaker store on the engine's backend; the
//     Breaker check passes it in Config.Breaker with Config.Dependencies,
//     for the adapter's WithBreaker and WithDependency). A check that
//     needs one the harness lacks fails, saying what to implement, unless
//     the harness declares the lack with its reason ([LackingHarness]).
//     [ReclaimEngine] is optional: without it the Reclaim check is
//     skipped. [EngineDecider] is for engines that can retry a job
//     without asking the adapter (River): a harness whose engine cannot
//     declares [FeatureEngineDecisions] in Lacks with the reason, and
//     the EngineDecision check is skipped saying so.
//
// # What the suite checks
//
// The suite records the start and end of every attempt itself, in the
// handler it gives the harness, and polls [Engine.State] until every job
// is terminal (giving up after every delay the job can be owed, each with
// twice the allowed lateness, plus ten seconds). The computed delay after
// counted attempt n of job id is Rule.Decide(n, err, backoff.Key(id)).Delay
// (Config.FallbackDelay where the policy panics; clamped to
// Limits.MaxDelay), n being the suite's own count of runs that counted. On
// every job of every check it verifies the final state, the number of
// runs, Job.Attempt against the observed run count, that the payload
// arrived unchanged, that no run starts once the job was seen terminal,
// and every gap between the end of a run and the start of the next: never
// below the computed delay and, outside the Herd check, never above it by
// more than Resolution + Lateness plus the load's share. Never early is
// exact. Lateness is a measurement: beside each check a witness (a chain
// of short timers in the same process) records how far this process's own
// timers fell behind, and a retry may be late by what the witness lagged
// over the retry's interval, on top of the declared figures. A stalled
// machine widens the bound by its stall; an engine late by itself is still
// late by as much, and fails. The report logs the widest such allowance.
//
// On every job of every check it also verifies that observers tell the
// truth. The observer the suite passes ties each attempt it is told about
// to the handler's run through the context, so engines sharing an adapter
// value are told apart, and:
//
//   - every run was told to the observer (AttemptStarted, its context
//     passed to the handler), with the job's ID, the attempt number the
//     handler got, the rule's cap and the job's kind; every attempt is
//     ended exactly once, with the context AttemptStarted returned; an
//     attempt the handler never ran does not count;
//   - a run that failed (or panicked: an *observe.PanicError{Op:
//     "handler"}) is never told a success, and one that succeeded is told
//     nothing else, unless it outlived its timeout or was reclaimed; a
//     counted attempt is followed by the next number, one that did not
//     count (observe.Interrupted) by the same number;
//   - a retry's FireAt is its decision time plus the told Delay, and the
//     next run starts no earlier than that FireAt and (outside Herd) no
//     later than Resolution + Lateness (plus the witness's lag) after it;
//   - a completed job's story ends with its one success; a failed job's
//     with exhausted or permanent, told once (exhausted only at the cap,
//     permanent only for a permanent error or an operator's cancel);
//   - the give-up hook is called exactly once for every job that failed
//     for good, with its last attempt and outcome, and never for a job that
//     completed;
//   - the error handler is told nothing where nothing went wrong (a false
//     alarm is a violation); where a check plants a panic it is told
//     exactly the corresponding *observe.PanicError;
//   - a [BookkeepingEngine] holds no entries within [BookkeepingGrace] of
//     every job ending.
//
// A harness that never tells the observer anything, or never calls the
// give-up hook though jobs failed, gets one violation saying which Config
// field it must pass on.
//
// The checks:
//
//   - Schedule: for seven policies (plain, full, equal, proportional and
//     decorrelated jitter), seven job IDs and attempts 1..MaxAttempts, the
//     hook retries exactly when the rule does, after the core's keyed
//     delay rounded up by less than Resolution (exactly, when Resolution
//     is 0). A jittered policy giving every ID the same delay is reported
//     as jitter ignoring the key. A permanent error never retries; a
//     retry-after hint longer than the policy raises the delay.
//   - AttemptNumbering: jobs that fail three and two times report
//     Job.Attempt 1, 2, 3, 4.
//   - AttemptsCap: under MaxAttempts 1, 2 and 5 an always-failing job runs
//     exactly MaxAttempts times and ends [StateFailed]; a job failing
//     k < MaxAttempts times runs k+1 times and ends [StateCompleted];
//     nothing runs again after a quiet period.
//   - NeverEarlyBoundedLate: eight always-failing jobs under
//     equal(exponential(b, 2b)) x 3, b = max(30ms, 1.5 x Resolution), so
//     that an engine truncating fire times to its resolution is seen
//     starting retries early.
//   - Permanent: a job failing with backoff.Permanent runs once, ends
//     failed, the hook schedules no retry, and nothing runs again.
//   - RetryAfter: a hint longer than the policy's delay (max(120ms,
//     2 x Resolution)) holds the next run back at least that long; a
//     shorter one leaves the policy's delay in force.
//   - Panic: a panicking handler is one failed attempt, retried and
//     counted against the cap; jobs enqueued after a panic still run.
//   - GiveUp: jobs ending exhausted (by errors and by panics), permanent,
//     and completed after retries; the give-up hook fires once for each
//     job that failed for good, never for one that completed, even after a
//     quiet period.
//   - KindRules: jobs of two kinds under two rules (Config.KindRules,
//     different policies and caps) and of the default kind (Config.Rule)
//     each keep their own schedule and cap.
//   - HostilePolicy: a foreign policy that panics at attempt 2 and returns
//     math.MaxInt64 at attempt 3, under a cap of math.MaxInt, and
//     retry-after hints near the Duration limit. The worker lives; after
//     the panic the job retries after Config.FallbackDelay, never earlier,
//     and the error handler is told one *observe.PanicError{Op: "policy"}
//     per panic; a huge delay leaves the job pending through a quiet
//     period (never run at once by overflow) while jobs enqueued after it
//     retry on time; the cap above the engine's still lets a job retry and
//     complete. The hook answers min(delay, Limits.MaxDelay) for huge
//     delays, the fallback delay after a panic, gives up at
//     Limits.MaxAttempts (or math.MaxInt), and keys jitter by Config.Key,
//     or by backoff.Key(ID) when Config.Key panics.
//   - HostileErrors: handler errors whose Error method panics, a typed nil,
//     a 1 MB message, a message that is not valid UTF-8: each is one
//     counted failure, retried; the worker keeps serving; the stored last
//     error ([ErrorEngine]) is valid UTF-8, within Limits.MaxErrorBytes,
//     and recognisably the error (its text, or its type name).
//   - Timeout: under Config.Timeout (max(2 x TimeoutResolution, 80ms)),
//     handlers that ignore their context and outlive the deadline, then
//     return nil or an error: each overrun is exactly one counted failure,
//     never told as a success, the next attempt numbered after it, no
//     second exhausted; every handler's context carries the deadline. An
//     engine may end the attempt at the deadline and run the job again
//     while the handler still runs, or wait for the handler; a job alone
//     on a worker of its own overruns once, then succeeds, and the suite
//     waits for every run to return before it judges a story.
//   - Cancel ([CancelEngine]): a running job (its handler's context must
//     be cancelled), a job waiting for its retry, and one shortly before
//     its retry's fire time (where an engine holding the job for a precise
//     wait has it in hand) are cancelled; whatever state the engine gives
//     them, the observer's story and the give-up hook match it (a job
//     cancelled while it waited may end failed with a retry as the
//     observer's last word, and the hook told at most once), and a
//     terminal job never runs again.
//   - CancelStory ([CancelEngine], [ErrorEngine]): the engine's cancel of
//     a running job is told the way every adapter tells it: an
//     *observe.CancelledError matching observe.ErrCancelled, reading as
//     the text the engine stored (LastError); a job it ended is told
//     permanent and given up with that same error and outcome, a job the
//     engine retries (asynq) is told a retry and never given up.
//   - Restart ([RestartEngine]): a handler blocked on its context when the
//     worker restarts is told interrupted, not a failure or a success, and
//     its job runs again with the same attempt number and completes; a
//     waiting retry is never early; the new worker serves new jobs.
//   - Reclaim ([ReclaimEngine], optional): a running job taken back as if
//     its worker died runs again and fails permanently; the stale run's
//     late success must change nothing and is never told as a success or a
//     decision the engine did not apply (the reclaim itself may count as a
//     failed attempt, told when it happens). The lost lease may be
//     reported to the error handler, by each side, once.
//   - EngineDecision ([EngineDecider]): jobs the engine retries by
//     itself, without asking the adapter (a River worker's own NextRetry),
//     fail once or twice and then succeed: each such failure is told as
//     the engine's decision ([observe.Result.EngineDecided], outcome
//     "engine", [observe.OutcomeEngine], with no decision and no fire
//     time), never exhausted or permanent, and the give-up hook is never
//     called for the job;
//     jobs the adapter decides for, beside them, keep their stories. A
//     harness declaring [FeatureEngineDecisions] lacking is skipped with
//     its reason before the check starts (native: rebound is the engine;
//     asynq: it asks RetryDelayFunc for every retry).
//   - LookAlike: jobs alike in everything the engine hands back about
//     their content (the default kind, so one task type or job name, and
//     empty payloads), told apart only by the ID Enqueue returned, which
//     scripts each: eight enqueued together end every way (completed
//     after retries, exhausted, permanent, panics, a retry-after hint)
//     under full jitter keyed by the ID, each run holding a while so runs
//     overlap and end out of their start order; four outlive
//     Config.Timeout together; four block and are cancelled while running
//     ([CancelEngine]) in the reverse of their start order. Each job's
//     runs, gaps, attempt numbers, outcome and give-up must be its own,
//     and every failed attempt must be told the rule's decision for its
//     own key and attempt: a retry's delay the rule's for backoff.Key(ID),
//     rounded up by less than Resolution.
//   - Concurrency ([SharedHarness]): two engines sharing one adapter value,
//     with colliding job IDs, one running jobs that fail with a long
//     retry-after hint, the other jobs that fail once: each keeps its own
//     schedule. The observer writes and reads many carrier keys on every
//     start and end (every check writes some), so the race detector sees
//     an engine that shares the job's metadata map with it.
//   - Bookkeeping ([BookkeepingEngine]): after jobs through every ending,
//     Pending() returns to zero.
//   - Breaker ([BreakerHarness]): jobs of a kind bound to a dependency
//     live through an outage. Bound jobs that fail permanently leave the
//     breaker closed; the breaker trips after its failures of the
//     dependency itself; while it is open, bound jobs are deferred
//     (observe.Deferred, naming the dependency) without their handler
//     running and without spending an attempt (the next run keeps the
//     number), the dependency gets at most one probe per cool-down, and no
//     job is exhausted by an outage many times the rule's schedule; jobs
//     bound to nothing run meanwhile and are never deferred. Once the
//     dependency is back a probe closes the breaker, the backlog is
//     released at the retry budget's rate (no window of one cool-down holds
//     more calls than the budget earns in it plus its burst and the probe),
//     every job completes, and an observer that implements
//     observe.BreakerObserver is told every change, in order, ending
//     closed.
//   - Herd: two cohorts of 200 jobs fail on their first run. A slice is
//     the engine's timing noise, Resolution + Lateness (at least 20 ms),
//     and the window is ten slices; for a coarse engine where that passes
//     five seconds, as many slices as fit in five seconds, never fewer
//     than four. With jitter(fixed(window)) no interval of one slice may
//     hold more than 2.5 times an even share of the retries (25% of the
//     cohort for ten slices, 62.5% for four); with fixed(window + 2
//     slices) some slice must hold more than that, which shows the measure
//     can see a herd on this engine (an engine too slow to start 200
//     retries within one slice fails here: give the worker more
//     concurrency). Each retry is measured from its own job's failure, so
//     first runs spread out by the engine's throughput are still compared
//     fairly; retries are never early but, under this load, not held to
//     the idle lateness.
//   - Mix: a seeded random mix on one worker. One rule per kind (the
//     default kind and three named ones, [KindEngine]) is drawn in the
//     text forms and read with backoff.ParseRule: fixed, exponential,
//     linear and decorrelated schedules of a few tens of milliseconds,
//     wrapped in full, equal or proportional jitter, caps from 1 to 6
//     (always one of 1 and one of at least 4). 24 jobs, a third of them
//     look-alike, each get a random sequence of runs (plain failures,
//     retry-after hints, permanent errors, panics, the four hostile
//     errors, and at most one run per job that outlives Config.Timeout:
//     the Timeout check's, raised to leave the runs meant to end in time
//     twice the declared Lateness, at most 0.5 s, of room) ending in a
//     success unless the cap or a
//     permanent error ends it first, and all run at once. Every job is held to the truth
//     rules above and every failed attempt to the rule's decision for it,
//     as in LookAlike. The check logs its seed and a command that replays
//     it alone; a failing mix says both. The test binary's flag
//     conformance.seed=N replays seed N (0, the default, draws one), and
//     conformance.mix=N runs N jobs.
//
// HostilePolicy and HostileErrors run last but for the Mix, which holds
// hostile errors too: an engine that fails them may take the whole test
// process down, and the other checks report first.
//
// The suite's own tests plant each of these defects in the reference
// engine and show that the check meant to catch it does, by name: attempt
// numbers off by one, a cap one too high, early and late retries, jitter
// ignoring the key, permanent errors retried, retry-after hints ignored,
// panicked jobs lost, payloads changed, an engine that spreads retries on
// its own, an observer never told, a retry told to fire at once, a false
// alarm, a worker that dies of a policy panic or of an error's text, a
// huge delay that overflows and fires at once, error messages stored
// unchecked, a breaker that spends attempts on the runs it defers, one
// that releases the backlog at once, one that never closes, a timed-out attempt told as a success, a cancelled job that
// runs anyway, an interruption counted as a failure, a stale worker's
// outcome applied, one engine's decision applied to another's job with the
// same ID, bookkeeping that leaks, a give-up hook called twice or for a
// success, exhausted and permanent told the other way round, attempts
// ended without their context, a handler run without the observer's
// context, a hook that lets a policy's panic through, and kind rules
// ignored, look-alike jobs matched by their payload (caught by LookAlike
// and no other check but Mix), a retry the engine decided told as the
// adapter's permanent give-up (EngineDecision, no other), and a kind's
// delay rounded down to 10 ms from its third retry on, which every named
// check passes and the Mix catches on every seed. They also show honest
// variants pass: an engine with declared limits (a coarse resolution, a
// longest delay, an attempts cap, a cut on stored messages) and one whose
// reclaim counts as a failed attempt.
//
// # Time
//
// Delays are tens of milliseconds, scaled up only where a check needs them
// above the engine's resolution (the fallback delay, the long retry-after
// hints, the timeouts), and checks run one after another, so an exact
// engine finishes the suite in a few seconds (the reference engine in
// about five on the real clock). An engine with a resolution of one second
// pays roughly ten seconds for the Herd check and a few seconds for each
// timing, hostile and lifecycle check.
//
// # testing/synctest
//
// An engine that runs entirely on the standard library's clock inside the
// test process (an in-memory scheduler, or an engine on miniredis dialled
// in-process) can implement [SynctestHarness]: Run then runs each check in
// its own synctest.Test bubble, calling Start inside it, so the engine's
// timers fire on fake time and lateness is exactly what the engine adds.
// Run must not itself be called inside a bubble (it uses t.Run, which a
// bubble forbids), and an engine that talks to a real server cannot run in
// one.
package conformance
