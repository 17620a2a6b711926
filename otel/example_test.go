package reboundotel_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	reboundotel "github.com/rebound-go/rebound/otel"
)

// The observer as an adapter drives it: a job fails once, is retried, then
// succeeds. Each attempt is a span; the second links to the first through
// the job's carrier. In a program, pass the observer to an adapter's
// WithObserver option instead, and install an SDK with an exporter.
func ExampleNew() {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	obs := reboundotel.New(reboundotel.WithTracerProvider(tp))

	carrier := observe.MapCarrier{} // the job's persisted metadata
	for n, err := range []error{errors.New("smtp: 421"), nil} {
		a := observe.Attempt{System: "rebound", Queue: "emails", JobID: "42",
			Number: n + 1, MaxAttempts: 5, Carrier: carrier}
		ctx := obs.AttemptStarted(context.Background(), a)
		// ... the job's handler runs with ctx ...
		r := observe.Result{Err: err}
		if err != nil {
			r.Decision = backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: 1500 * time.Millisecond}
			r.FireAt = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
		}
		obs.AttemptEnded(ctx, a, r)
	}

	for _, s := range spans.Ended() {
		fmt.Printf("%s (%s):", s.Name(), s.SpanKind())
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case reboundotel.AttemptKey, reboundotel.OutcomeKey, reboundotel.DelayKey, reboundotel.FireTimeKey, "error.type":
				fmt.Printf(" %s=%s", kv.Key, kv.Value.String())
			}
		}
		fmt.Printf(" status=%s links=%d\n", s.Status().Code, len(s.Links()))
	}
	// Output:
	// process emails (consumer): rebound.job.attempt=1 rebound.retry.outcome=retry rebound.retry.delay=1.5 rebound.retry.fire_time=2026-01-02T15:04:05Z error.type=*errors.errorString status=Error links=0
	// process emails (consumer): rebound.job.attempt=2 rebound.retry.outcome=success status=Unset links=1
}

// Inject at enqueue time puts the producer's trace context into the job's
// metadata, so that every attempt links to the producer's span.
func ExampleInject() {
	tp := sdktrace.NewTracerProvider()
	ctx, producer := tp.Tracer("app").Start(context.Background(), "signup")
	defer producer.End()

	headers := map[string]string{} // e.g. asynq task headers, native job metadata
	reboundotel.Inject(ctx, propagation.MapCarrier(headers),
		reboundotel.WithPropagators(propagation.TraceContext{}))
	fmt.Println(len(headers["traceparent"]))
	// Output: 55
}
