// Package conformance is rebound's definition of a correct adapter: one
// suite that every adapter (asynq, River, the native Redis path), on every
// backend, runs from its own tests, so that "the same schedule and the same
// attempts cap on every engine" is checked rather than promised.
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
//   - Start builds a worker around Config.Rule and Config.Handler, isolated
//     from every other Start (its own queue, key prefix or schema), and
//     tears it down with t.Cleanup. Several workers of one check may be
//     live at once. The worker must have the concurrency to run a few
//     hundred jobs promptly: the Herd check enqueues 2 x 200.
//   - The handler must get each attempt's job ID (the string Enqueue
//     returned), the payload exactly as enqueued, and the attempt number
//     mapped to rebound's numbering (1 for the first run). The suite
//     scripts every job through its payload (fail k times, always fail,
//     fail permanently, fail with a retry-after hint, panic), so a
//     harness needs no knowledge of the scripts.
//   - The adapter must key each job's jitter by backoff.Key(Job.ID).
//   - HookDelay calls the function the engine calls after a failure, for
//     any decimal job ID (it need not name an existing job), and must not
//     wait.
//   - Limits states the engine's resolution (how its stored fire times are
//     rounded; the adapter may round a delay up by less than that, never
//     down) and its lateness when idle. Declare what the engine really
//     does: the suite holds the harness to those numbers, and they size
//     its windows.
//
// # What the suite checks
//
// The suite records the start and end of every attempt itself, in the
// handler it gives the harness, and polls [Engine.State] until every job
// is terminal (giving up after every delay the job can be owed, each with
// twice the allowed lateness, plus ten seconds). The computed delay after
// run n of job id is Rule.Decide(n, err, backoff.Key(id)).Delay, n being
// the suite's own count of runs. On every job of every check it verifies
// the final state, the number of runs, Job.Attempt against the observed
// run count, that the payload arrived unchanged, and every gap between
// the end of a run and the start of the next: never below the computed
// delay and, outside the Herd check, never above it by more than
// Resolution + Lateness.
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
//
// The suite's own tests plant each of these defects in the reference
// engine and show that the check meant to catch it does, by name: attempt
// numbers off by one, a cap one too high, early and late retries, jitter
// ignoring the key, permanent errors retried, retry-after hints ignored,
// panicked jobs lost, payloads changed, and an engine that spreads
// retries on its own.
//
// # Time
//
// Delays are tens of milliseconds, scaled up only where a check needs them
// above the engine's resolution, and checks run one after another, so an
// exact engine finishes the suite in a few seconds. An engine with a
// resolution of one second pays roughly ten seconds for the Herd check and
// a few seconds for each timing check.
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
