// Package reboundotel traces and measures every attempt of every rebound job
// with OpenTelemetry. [New] returns an [Observer] that implements
// [observe.Observer]; pass it to an adapter's observer option (asynq, River or
// the native worker) and each run of each job becomes one span, with the retry
// decision that followed it, plus a few low-cardinality metrics.
//
// The guide, with the attributes, the metrics and a walk through a trace in Jaeger: https://github.com/rebound-go/rebound/blob/main/docs/tracing.md
//
// The package is named reboundotel so that it can be imported beside
// go.opentelemetry.io/otel without an alias.
//
// # Spans
//
// Each attempt is one span of kind CONSUMER named "process <queue>", following
// the OpenTelemetry messaging conventions:
//
//	messaging.system             the engine: "asynq", "river" or "rebound" (native)
//	messaging.operation.name     "process"
//	messaging.operation.type     "process"
//	messaging.destination.name   the queue
//	messaging.message.id         the engine's job ID
//
// and rebound's own attributes:
//
//	rebound.job.kind             the job's type, when the engine has one
//	rebound.job.attempt          1-based number of this attempt
//	rebound.job.max_attempts     total runs the job may have
//	rebound.retry.outcome        "success", "retry", "exhausted" or "permanent";
//	                             "snoozed", "interrupted" or "deferred" for a
//	                             run that did not count as an attempt
//	rebound.retry.delay          on retry: the chosen delay, in seconds (float)
//	rebound.retry.fire_time      on retry, snoozed, interrupted or deferred: when
//	                             the job runs next, RFC 3339 in UTC with
//	                             nanoseconds, e.g. "2026-01-02T15:04:05.25Z"
//	rebound.breaker.dependency   on a deferred run: the dependency whose
//	                             circuit breaker held it back
//
// A failed attempt sets the span status to Error with the error's message,
// records the error as an exception event and sets error.type (the error's
// type, looking through rebound's own [backoff.Permanent] and
// [backoff.RetryAfter] wrappers). A successful attempt leaves the status
// Unset.
//
// Some runs end without counting as an attempt ([observe.Result.Counting]):
// a River job that returns river.JobSnooze, an asynq handler error for which
// the server's Config.IsFailure returns false ("snoozed"), a River job cut
// short because its client is stopping ("interrupted"), a job bound to a
// dependency whose circuit breaker is open or whose retry budget is spent
// ("deferred": the handler did not run). The engine runs the
// job again without using up an attempt, so the next run may carry the same
// rebound.job.attempt. Such a run is not a failure: its status stays Unset,
// with no error.type and no exception event. The next run still links to
// it.
//
// # Circuit breakers
//
// The Observer is an [observe.BreakerObserver]: an adapter guarding jobs
// with a circuit breaker (package breaker) tells it of every change of a
// dependency's breaker, and it adds an event named "rebound.breaker.transition"
// to the span of the attempt whose question or report showed the change,
// with rebound.breaker.dependency, rebound.breaker.from and
// rebound.breaker.to ("closed", "open", "half-open"), rebound.breaker.learned
// (true when another process made the change and this one learned of it)
// and, on a change to open, rebound.breaker.next_probe.
//
// # Links
//
// Attempts are not parented to each other: each one is its own span (its
// parent is whatever span the adapter's context carries, if any) and links to
//
//   - the previous run's span, whose span context and attempt number the
//     observer stores in the job's carrier under keys starting with
//     [CarrierKeyPrefix] and reads back on the next run; the link carries
//     that number as rebound.job.attempt (Jaeger shows the link as a
//     FOLLOWS_FROM reference);
//   - the producer's span, when the carrier holds a context injected at
//     enqueue time with [Inject] (for example a W3C "traceparent" header).
//
// With [WithProducerAsParent], an attempt whose adapter context carries no
// span becomes the producer span's child instead of linking to it, so that
// the producer and all attempts of a job form one trace.
//
// Links and attributes are added right after the span starts, once the span is
// known to be recording, so a sampler sees the span's name and kind only.
//
// # Metrics
//
//	rebound.attempts        counter, {attempt}: attempts by outcome, runs that
//	                        did not count included ("snoozed", "interrupted",
//	                        "deferred")
//	rebound.retry.delay     histogram, s: the delays chosen for retries (not
//	                        snoozes)
//	rebound.jobs.exhausted  counter, {job}: jobs that ran out of attempts
//	rebound.jobs.deferred   counter, {run}: runs a circuit breaker held back,
//	                        by rebound.breaker.dependency too
//	rebound.breaker.state   gauge, {state}: each dependency's breaker as this
//	                        process last saw it, 0 closed, 1 half-open, 2 open,
//	                        by messaging.system and rebound.breaker.dependency
//
// Metric attributes are messaging.system, messaging.destination.name and (on
// rebound.attempts) rebound.retry.outcome, never an attempt number or a job
// ID, so the number of series stays bounded by queues times outcomes (and
// dependencies, which are configuration too).
//
// # Cost
//
// With the no-op tracer provider, or the global one before an SDK is
// installed (the default for a library's users), the observer starts no span
// at all: no attributes are built, no carrier is read or written, nothing is
// allocated, and metrics are skipped while their instruments report
// themselves disabled. An Observer built before otel.SetTracerProvider starts
// tracing as soon as the SDK is installed. BenchmarkObserver measures a
// retried attempt through no observer, the no-op and unset-global providers,
// and the SDK.
package reboundotel
