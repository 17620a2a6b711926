// Package breaker protects a dependency, where package backoff protects a
// job.
//
// The guide, with each adapter's WithBreaker and WithDependency and what observers see: https://github.com/rebound-go/rebound/blob/main/docs/breaker.md
//
// Backoff spaces one job's own retries; it does not cap the fleet. When a
// payment API is down for thirty seconds, every job that needs it keeps
// failing: ten thousand jobs with full jitter still send thousands of
// calls into a dead service, burn their attempts, and exhaust jobs that
// would have succeeded a minute later; when it comes back, the backlog
// hits it at once. A circuit breaker shared by every worker process stops
// the calls while the dependency is down, without spending the jobs'
// attempts, and a retry budget releases the backlog at a bounded rate when
// it is back.
//
// # The model
//
// A [Breaker] is a rule, an immutable value like a backoff policy; the
// state it rules is a [Circuit], one per dependency, which the caller owns
// or a [Store] keeps. Every transition is a pure function of the rule, the
// circuit and the time, which the caller passes in: the package reads no
// clock, does no I/O, starts no goroutine and has no package state.
//
//   - Closed: every run goes through. N failures in a row, or a failure
//     rate over a sliding window once it holds enough calls, trip the
//     breaker open.
//   - Open: every run is deferred ([DeferOpen]) to the end of the
//     cool-down. The cool-down is a [backoff.Policy] asked with the
//     number of consecutive trips, so a dependency that keeps failing its
//     probes is probed less and less often. Its jitter is keyed by the
//     dependency's name: every process computes the same cool-down.
//   - Half-open: once the cool-down is over, a few runs go through as
//     probes ([Probe]); the rest are deferred. Enough probe successes
//     close the breaker; one probe failure opens it again, for the next,
//     longer cool-down. Every probe holds a lease of its own: a probe
//     whose worker died frees its slot when its own lease runs out,
//     whatever the other probes' leases, and its late report changes
//     nothing.
//   - The retry budget ([Budget]) is a token bucket: every success earns
//     a fraction of a token, a floor rate earns tokens steadily, a burst
//     caps the balance, and every retry ([Retry]) spends one. A fresh run
//     never waits for it. The budget is emptied when the breaker trips,
//     so after recovery the backlog of deferred jobs runs at the floor
//     rate plus the share of successes, never all at once ([DeferBudget]).
//
// Failures count against a dependency either because the job is bound to
// it by configuration, or because its error is, by [Dependency]:
//
//	return breaker.Dependency(err, "payments")
//
// # Resolution and limits
//
// Times are kept in whole Unix milliseconds and durations are rounded up
// to whole milliseconds, so a deferral never ends early. Counters saturate
// at [MaxCount] and times at about the year 285,000, so no input
// overflows: the numbers stay exact in the doubles of Redis's Lua, and the
// Redis store's scripts compute exactly what this package computes (a
// property test holds them to it).
//
// # Stores
//
// breaker/memstore keeps circuits in one process; breaker/redisstore keeps
// them in Redis (one atomic script per transition, Cluster-safe, on the
// server's clock) for asynq and native users; breaker/pgstore keeps them
// in a PostgreSQL table (a row lock around each transition) for River
// users. All satisfy [Store].
package breaker
