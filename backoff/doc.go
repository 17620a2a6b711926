// Package backoff is rebound's framework-neutral core: retry policies as
// immutable values and a pure function from (policy, attempt) to a delay.
//
// # Numbering
//
// An attempt is one run of a job. The attempt number passed to [Policy.Delay]
// and [Delay] is the 1-based number of the attempt that just failed, so the
// first retry waits Delay(1). MaxAttempts (see [Rule]) counts every run,
// including the first: MaxAttempts 5 means one run and at most four retries.
//
// # Guarantees
//
// Every policy in this package returns a delay in [0, Max()] for every attempt
// number from 1 to [math.MaxInt]; nothing overflows, nothing panics and no
// curve drifts through floating point. A wrapper never returns more than the
// maximum of the policy it wraps, so a policy's Max is a promise that survives
// jitter. Attempt numbers below 1 are invalid; they are treated as 1 (the
// first retry), never as a panic or a zero delay.
//
// # Randomness
//
// Jitter is drawn from a [Source]. The zero Source draws fresh randomness from
// the runtime's per-thread generator (no global lock). A keyed Source, from
// [Key] or [KeyUint64], draws deterministically from the key and the attempt:
// the same policy, key and attempt give the same delay in any process, on any
// adapter, and different keys spread. Tests use keyed sources and never depend
// on global random state.
//
// # Purity
//
// The package reads no clock, does no I/O and has no mutable package state.
// It imports the standard library only. Adapters compute delays here and pass
// a single literal duration to their engine; none of them computes a curve.
package backoff
