// Package backoff is rebound's framework-neutral core: retry policies as
// immutable values and a pure function from (policy, attempt) to a delay.
//
// # Use
//
// Build a [Policy] with [Fixed], [Exponential], [Linear] or [Decorrelated],
// wrap it in jitter with [Jitter], [EqualJitter] or [Proportional], or
// read one from its text form with [Parse]. [NewRule] adds the attempts
// cap, and [Rule.Decide] turns a failed attempt into a [Decision]: retry
// after a delay, or give up. Mark an error with [Permanent] to give up at
// once, or with [RetryAfter] to wait at least a given time. [Key] keys the
// jitter by a job's ID. Adapters call Decide; a program rarely does.
//
// The guide to the policies and their text form: https://github.com/rebound-go/rebound/blob/main/docs/policies.md
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
// # Text
//
// Policies and rules have a text form: their String methods print it, and
// [Parse] and [ParseRule] read it back, so a retry behaviour can live in a
// flag, an environment variable or a config file. The grammar, with
// optional spaces between tokens:
//
//	RULE   = POLICY "x" MAX
//	POLICY = "fixed(" D ")"
//	       | "exponential(" BASE "," CAP ")"
//	       | "linear(" BASE "," STEP "," CAP ")"
//	       | "decorrelated(" BASE "," CAP ")"
//	       | "jitter(" POLICY ")" | "equal(" POLICY ")"
//	       | "proportional(" F "," POLICY ")"
//
// D, BASE, STEP and CAP are durations in time.ParseDuration syntax ("250ms",
// "1m30s"), F is a fraction in (0, 1] and MAX is the rule's MaxAttempts, a
// whole number of runs from 1 up. Policies nest at most 32 levels deep,
// counting the innermost; the wrappers refuse to build deeper, so every
// policy the package builds reads back from its text. For example:
//
//	jitter(exponential(100ms, 10s)) x 5
//
// [Parse] documents what each policy does. A [Spec] carries a policy, and a
// [Rule] itself, through encoding.TextMarshaler and TextUnmarshaler (JSON,
// YAML, environment variables) and flag.Value.
//
// # Purity
//
// The package reads no clock, does no I/O and has no mutable package state.
// It imports the standard library only (and the scanner of its text form,
// a package internal to this module that imports the standard library
// only, shared with package breaker). Adapters compute delays here and pass
// a single literal duration to their engine; none of them computes a curve.
package backoff
