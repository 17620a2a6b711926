package reboundotel

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/observe"
)

// Attribute keys of rebound's own namespace. The messaging attributes come
// from the OpenTelemetry semantic conventions.
const (
	// AttemptKey is the 1-based number of the attempt (int).
	AttemptKey = attribute.Key("rebound.job.attempt")
	// MaxAttemptsKey is the total number of runs the job may have (int).
	MaxAttemptsKey = attribute.Key("rebound.job.max_attempts")
	// KindKey is the job's type: asynq task type, River job kind, native
	// job name (string).
	KindKey = attribute.Key("rebound.job.kind")
	// OutcomeKey is how the attempt ended: "success", "retry", "exhausted"
	// or "permanent", or for a run that did not count as an attempt
	// (see [observe.Counting]) "snoozed", "interrupted" or "deferred"
	// (string).
	OutcomeKey = attribute.Key("rebound.retry.outcome")
	// DelayKey is the delay chosen before the next attempt, in seconds
	// (float64); set on retries only.
	DelayKey = attribute.Key("rebound.retry.delay")
	// FireTimeKey is when the next attempt is due, RFC 3339 in UTC with
	// nanoseconds (string); set on retries and on runs that did not count
	// as attempts (snoozed, interrupted, deferred).
	FireTimeKey = attribute.Key("rebound.retry.fire_time")
	// DependencyKey is the dependency a circuit breaker guards (string):
	// on a deferred run's span, on breaker events, and on the breaker
	// metrics.
	DependencyKey = attribute.Key("rebound.breaker.dependency")
	// BreakerFromKey and BreakerToKey are a breaker's state before and
	// after a change: "closed", "open" or "half-open" (string).
	BreakerFromKey = attribute.Key("rebound.breaker.from")
	BreakerToKey   = attribute.Key("rebound.breaker.to")
	// NextProbeKey is, on a change to open, when the next probe may run,
	// RFC 3339 in UTC with nanoseconds (string).
	NextProbeKey = attribute.Key("rebound.breaker.next_probe")
	// LearnedKey marks a change another process made, which this one
	// learned of from the store's next answer (bool; see
	// [observe.BreakerChange]).
	LearnedKey = attribute.Key("rebound.breaker.learned")
)

// BreakerEvent is the name of the span event a breaker change adds to the
// span of the attempt whose question or report showed it.
const BreakerEvent = "rebound.breaker.transition"

// Metric names.
const (
	// AttemptsMetric counts attempts by outcome ({attempt}), runs that
	// did not count as attempts included, under their own outcomes.
	AttemptsMetric = "rebound.attempts"
	// RetryDelayMetric records the delays chosen for retries (s); a snooze
	// or an interrupted run is not a retry and is not recorded.
	RetryDelayMetric = "rebound.retry.delay"
	// ExhaustedMetric counts jobs that ran out of attempts ({job}).
	ExhaustedMetric = "rebound.jobs.exhausted"
	// DeferredMetric counts the runs a circuit breaker held back ({run}),
	// by dependency: no handler ran and no attempt was spent.
	DeferredMetric = "rebound.jobs.deferred"
	// BreakerStateMetric is the state of each dependency's breaker as this
	// process last saw it (gauge, {state}): 0 closed, 1 half-open, 2 open.
	BreakerStateMetric = "rebound.breaker.state"
)

// Values of rebound.breaker.state.
const (
	StateClosed   = 0
	StateHalfOpen = 1
	StateOpen     = 2
)

// delayBuckets are the histogram boundaries of rebound.retry.delay, in
// seconds: retry delays run from milliseconds to a day.
var delayBuckets = []float64{
	0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
	1800, 3600, 7200, 21600, 86400,
}

// maxSeries bounds the per-(system, queue) cache. Queues are configuration,
// so real programs stay far below it; past it the observer still works and
// just builds names and attribute sets per attempt.
const maxSeries = 1024

// An Observer records each attempt of each job as an OpenTelemetry span and
// in metrics. It implements [observe.Observer]; create one with [New] and
// hand it to an adapter. An Observer is safe for concurrent use.
type Observer struct {
	tracer         trace.Tracer
	propagators    propagation.TextMapPropagator
	producerParent bool

	// tp is the tracer provider; noopTP says it is the no-op provider, and
	// globalTP that it is the global provider as it stands before an SDK is
	// installed (see tracingOff).
	tp       trace.TracerProvider
	noopTP   bool
	globalTP bool

	attempts  metric.Int64Counter
	delay     metric.Float64Histogram
	exhausted metric.Int64Counter
	deferred  metric.Int64Counter
	state     metric.Int64Gauge

	mu     sync.RWMutex
	series map[seriesKey]*series
}

var (
	_ observe.Observer        = (*Observer)(nil)
	_ observe.BreakerObserver = (*Observer)(nil)
)

type seriesKey struct{ system, queue string }

// series is what an attempt on one (system, queue) needs that does not
// change between attempts: built once, reused without allocating.
type series struct {
	spanName string
	// byOutcome holds the rebound.attempts attribute set per outcome,
	// indexed as outcomeName is.
	byOutcome [numOutcomes]metric.MeasurementOption
	// base is the set without an outcome, for the delay and exhausted
	// instruments.
	base metric.MeasurementOption
}

// consumer is the start option every attempt span shares.
var consumer = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}

// New returns an Observer that uses the providers and propagators in opts,
// or the global ones. Instruments that cannot be created are reported to the
// global OpenTelemetry error handler and replaced by no-ops, as the
// OpenTelemetry instrumentation conventions ask; New itself never fails.
func New(opts ...Option) *Observer {
	c := newConfig(opts)
	o := &Observer{
		tracer: c.tracerProvider.Tracer(ScopeName,
			trace.WithInstrumentationVersion(Version),
			trace.WithSchemaURL(semconv.SchemaURL)),
		propagators:    c.propagators,
		producerParent: c.producerParent,
		tp:             c.tracerProvider,
		series:         make(map[seriesKey]*series),
	}
	switch c.tracerProvider.(type) {
	case tracenoop.TracerProvider, *tracenoop.TracerProvider:
		o.noopTP = true
	default:
		t := reflect.TypeOf(c.tracerProvider)
		o.globalTP = t.Kind() == reflect.Pointer && t.Elem().PkgPath() == globalPkg
	}
	meter := c.meterProvider.Meter(ScopeName,
		metric.WithInstrumentationVersion(Version),
		metric.WithSchemaURL(semconv.SchemaURL))
	var err error
	if o.attempts, err = meter.Int64Counter(AttemptsMetric,
		metric.WithDescription("Job attempts by outcome."),
		metric.WithUnit("{attempt}")); err != nil {
		otel.Handle(err)
	}
	if o.delay, err = meter.Float64Histogram(RetryDelayMetric,
		metric.WithDescription("Delay rebound chose before retrying a failed attempt."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(delayBuckets...)); err != nil {
		otel.Handle(err)
	}
	if o.exhausted, err = meter.Int64Counter(ExhaustedMetric,
		metric.WithDescription("Jobs that failed on their last allowed attempt."),
		metric.WithUnit("{job}")); err != nil {
		otel.Handle(err)
	}
	if o.deferred, err = meter.Int64Counter(DeferredMetric,
		metric.WithDescription("Runs a circuit breaker held back, without spending an attempt."),
		metric.WithUnit("{run}")); err != nil {
		otel.Handle(err)
	}
	if o.state, err = meter.Int64Gauge(BreakerStateMetric,
		metric.WithDescription("State of each dependency's circuit breaker as this process last saw it: 0 closed, 1 half-open, 2 open."),
		metric.WithUnit("{state}")); err != nil {
		otel.Handle(err)
	}
	return o
}

// globalPkg is the package of the global tracer provider OpenTelemetry hands
// out until an SDK is installed with otel.SetTracerProvider.
const globalPkg = "go.opentelemetry.io/otel/internal/global"

// tracingOff reports whether spans would be no-ops: the tracer provider is
// the no-op one, or it is the global one and no SDK has been installed yet
// (otel.GetTracerProvider still returns the placeholder). The observer then
// starts no span at all, which saves the allocations a no-op span start
// costs. Should OpenTelemetry's internals change, the check reports false
// and the observer pays for a non-recording span, nothing worse.
func (o *Observer) tracingOff() bool {
	return o.noopTP || (o.globalTP && otel.GetTracerProvider() == o.tp)
}

// spanKey keys the attempt span the observer started in the context it
// returns, so that AttemptEnded ends that span and never another one.
type spanKey struct{}

// seriesFor returns the cached names and attribute sets of (system, queue).
func (o *Observer) seriesFor(system, queue string) *series {
	k := seriesKey{system, queue}
	o.mu.RLock()
	s := o.series[k]
	o.mu.RUnlock()
	if s != nil {
		return s
	}
	s = newSeries(system, queue)
	o.mu.Lock()
	if prev := o.series[k]; prev != nil {
		s = prev
	} else if len(o.series) < maxSeries {
		o.series[k] = s
	}
	o.mu.Unlock()
	return s
}

func newSeries(system, queue string) *series {
	s := &series{spanName: "process " + queue}
	sys := semconv.MessagingSystemKey.String(system)
	dst := semconv.MessagingDestinationName(queue)
	s.base = metric.WithAttributeSet(attribute.NewSet(sys, dst))
	for i := range s.byOutcome {
		s.byOutcome[i] = metric.WithAttributeSet(attribute.NewSet(sys, dst,
			OutcomeKey.String(outcomeName(i))))
	}
	return s
}

// Outcome indexes, for labels and the per-series attribute sets: 0 is a
// success, 1 to 3 are the backoff.Outcome of a failed attempt, and the rest
// are runs that did not count as attempts.
const (
	outcomeSuccess     = 0
	outcomeRetry       = int(backoff.OutcomeRetry)
	outcomeExhausted   = int(backoff.OutcomeExhausted)
	outcomeSnoozed     = int(backoff.OutcomePermanent) + 1
	outcomeInterrupted = outcomeSnoozed + 1
	outcomeDeferred    = outcomeInterrupted + 1
	// outcomeEngine is a counted failure whose follow-up the engine
	// decided without rebound (observe.Result.EngineDecided).
	outcomeEngine = outcomeDeferred + 1
	// outcomeCounting is an observe.Counting value this package does
	// not know, from a newer observe package.
	outcomeCounting = outcomeEngine + 1
	numOutcomes     = outcomeCounting + 1
)

// outcomeName is the label of an outcome index.
func outcomeName(i int) string {
	switch {
	case i == outcomeSuccess:
		return "success"
	case i < outcomeSnoozed:
		return backoff.Outcome(i).String()
	case i == outcomeSnoozed:
		return observe.Snoozed.String()
	case i == outcomeInterrupted:
		return observe.Interrupted.String()
	case i == outcomeDeferred:
		return observe.Deferred.String()
	case i == outcomeEngine:
		return observe.OutcomeEngine
	}
	return "uncounted"
}

// outcomeOf returns the outcome index of r.
func outcomeOf(r observe.Result) int {
	switch {
	case r.Counting == observe.Snoozed:
		return outcomeSnoozed
	case r.Counting == observe.Interrupted:
		return outcomeInterrupted
	case r.Counting == observe.Deferred:
		return outcomeDeferred
	case r.Counting != observe.Counted:
		return outcomeCounting
	case r.Err == nil:
		return outcomeSuccess
	case r.Decision.Outcome == 0:
		// The engine decided what follows without asking rebound.
		return outcomeEngine
	case r.Decision.Outcome > backoff.OutcomePermanent:
		// An outcome from a newer backoff package: a give-up.
		return outcomeExhausted
	}
	return int(r.Decision.Outcome)
}

// AttemptStarted starts the attempt's span and returns a context carrying
// it. When the span records, it gets the attempt's attributes and its links
// to the previous attempt and the producer (read from a.Carrier), and the
// span's own context is stored in a.Carrier for the next attempt to link to.
func (o *Observer) AttemptStarted(ctx context.Context, a observe.Attempt) context.Context {
	if o.tracingOff() {
		return ctx
	}
	s := o.seriesFor(a.System, a.Queue)
	parented := false
	if o.producerParent && a.Carrier != nil && !trace.SpanContextFromContext(ctx).IsValid() {
		if p := o.producer(a.Carrier); p.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, p)
			parented = true
		}
	}
	ctx, span := o.tracer.Start(ctx, s.spanName, consumer...)
	ctx = context.WithValue(ctx, spanKey{}, span)
	if !span.IsRecording() {
		return ctx
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs,
		semconv.MessagingSystemKey.String(a.System),
		semconv.MessagingOperationName("process"),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingDestinationName(a.Queue),
		semconv.MessagingMessageID(a.JobID),
		AttemptKey.Int(a.Number),
		MaxAttemptsKey.Int(a.MaxAttempts),
	)
	if a.Kind != "" {
		attrs = append(attrs, KindKey.String(a.Kind))
	}
	span.SetAttributes(attrs...)
	if a.Carrier != nil {
		o.link(span, a, parented)
		// Store this attempt's span context and number for the next
		// attempt to link to, replacing the previous one's.
		attemptPropagator.Inject(ctx, prefixed{a.Carrier})
		a.Carrier.Set(attemptNumberKey, strconv.Itoa(a.Number))
	}
	return ctx
}

// previousNumber returns the number of the attempt whose span context the
// carrier holds: the number it stored with it, or, in a carrier written
// before the number was stored, the attempt before a; 0 if unknown. The two
// differ after a run that did not count (a snooze), which the next run
// repeats under the same number.
func previousNumber(a observe.Attempt) int {
	if n, err := strconv.Atoi(a.Carrier.Get(attemptNumberKey)); err == nil && n > 0 {
		return n
	}
	return max(a.Number-1, 0)
}

// producer returns the producer's span context stored in c, if any.
func (o *Observer) producer(c observe.Carrier) trace.SpanContext {
	return trace.SpanContextFromContext(o.propagators.Extract(context.Background(), c))
}

// link adds the span links of an attempt: to the previous attempt and, unless
// the producer is the span's parent, to the producer.
func (o *Observer) link(span trace.Span, a observe.Attempt, parented bool) {
	prev := trace.SpanContextFromContext(attemptPropagator.Extract(context.Background(), prefixed{a.Carrier}))
	if prev.IsValid() {
		l := trace.Link{SpanContext: prev}
		if n := previousNumber(a); n > 0 {
			l.Attributes = []attribute.KeyValue{AttemptKey.Int(n)}
		}
		span.AddLink(l)
	}
	if parented {
		return
	}
	producer := o.producer(a.Carrier)
	if producer.IsValid() && !producer.Equal(prev) {
		span.AddLink(trace.Link{SpanContext: producer})
	}
}

// AttemptEnded records how the attempt ended on its span (outcome, retry
// delay and fire time, error) and ends the span, then updates the metrics.
// ctx must be the context AttemptStarted returned, or one derived from it:
// the span ended is the one AttemptStarted stored there, never another span
// the context carries.
//
// A run that did not count as an attempt (r.Counting set: a snooze, a run
// cut short by a stopping worker) is not a failure: its span gets the
// outcome and the fire time but keeps the status Unset, with no error.type
// and no exception event, and its delay is not recorded as a retry delay.
func (o *Observer) AttemptEnded(ctx context.Context, a observe.Attempt, r observe.Result) {
	outcome := outcomeOf(r)
	retry := outcome == outcomeRetry
	uncounted := r.Counting != observe.Counted

	span, _ := ctx.Value(spanKey{}).(trace.Span)
	if span != nil && span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 4)
		attrs = append(attrs, OutcomeKey.String(outcomeName(outcome)))
		if retry {
			attrs = append(attrs, DelayKey.Float64(r.Decision.Delay.Seconds()))
		}
		if (retry || uncounted) && !r.FireAt.IsZero() {
			attrs = append(attrs, FireTimeKey.String(r.FireAt.UTC().Format(time.RFC3339Nano)))
		}
		if dep := deferredBy(r); dep != "" {
			attrs = append(attrs, DependencyKey.String(dep))
		}
		if r.Err != nil && !uncounted {
			attrs = append(attrs, errorType(r.Err))
			span.RecordError(r.Err)
			span.SetStatus(codes.Error, r.Err.Error())
		}
		span.SetAttributes(attrs...)
	}
	if span != nil {
		span.End()
	}

	if !o.attempts.Enabled(ctx) && !o.delay.Enabled(ctx) && !o.exhausted.Enabled(ctx) && !o.deferred.Enabled(ctx) {
		return
	}
	s := o.seriesFor(a.System, a.Queue)
	o.attempts.Add(ctx, 1, s.byOutcome[outcome])
	switch outcome {
	case outcomeRetry:
		o.delay.Record(ctx, r.Decision.Delay.Seconds(), s.base)
	case outcomeExhausted:
		o.exhausted.Add(ctx, 1, s.base)
	case outcomeDeferred:
		o.deferred.Add(ctx, 1, metric.WithAttributes(
			semconv.MessagingSystemKey.String(a.System),
			semconv.MessagingDestinationName(a.Queue),
			DependencyKey.String(deferredBy(r))))
	}
}

// deferredBy returns the dependency whose breaker held back the run r
// reports, or "".
func deferredBy(r observe.Result) string {
	if r.Counting != observe.Deferred {
		return ""
	}
	var de *observe.DeferredError
	if errors.As(r.Err, &de) && de != nil {
		return de.Dependency
	}
	return ""
}

// BreakerChanged records a change of a dependency's breaker: an event on
// the span of the attempt whose question or report showed it (the span
// AttemptStarted stored in ctx), and the state in rebound.breaker.state.
// A change another process made (c.Learned) is recorded the same way,
// marked rebound.breaker.learned, so that every process's gauge follows
// the shared breaker; count transitions by the events without the mark.
func (o *Observer) BreakerChanged(ctx context.Context, c observe.BreakerChange) {
	if span, _ := ctx.Value(spanKey{}).(trace.Span); span != nil && span.IsRecording() {
		attrs := []attribute.KeyValue{
			DependencyKey.String(c.Dependency),
			BreakerFromKey.String(c.From.String()),
			BreakerToKey.String(c.To.String()),
			LearnedKey.Bool(c.Learned),
		}
		if !c.NextProbe.IsZero() {
			attrs = append(attrs, NextProbeKey.String(c.NextProbe.UTC().Format(time.RFC3339Nano)))
		}
		opts := []trace.EventOption{trace.WithAttributes(attrs...)}
		if !c.At.IsZero() {
			opts = append(opts, trace.WithTimestamp(c.At))
		}
		span.AddEvent(BreakerEvent, opts...)
	}
	if o.state.Enabled(ctx) {
		o.state.Record(ctx, stateValue(c.To), metric.WithAttributes(
			semconv.MessagingSystemKey.String(c.System),
			DependencyKey.String(c.Dependency)))
	}
}

// stateValue is the rebound.breaker.state value of s.
func stateValue(s breaker.State) int64 {
	switch s {
	case breaker.Open:
		return StateOpen
	case breaker.HalfOpen:
		return StateHalfOpen
	}
	return StateClosed
}
