// Command otel traces a job's retries with OpenTelemetry: a producer enqueues
// a welcome email on rebound's native queue (an in-process miniredis), the
// handler fails twice and then succeeds, and every attempt becomes a span: a
// child of the producer's span, linked to the attempt before.
//
//	go run ./examples/otel                  # spans printed to stdout as JSON
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 go run ./examples/otel
//	                                        # spans sent over OTLP/HTTP (e.g. to Jaeger)
//
// The standard OTEL_* variables apply to the OTLP exporter and the resource
// (OTEL_SERVICE_NAME overrides the default service name, rebound-example).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
	reboundotel "github.com/rebound-go/rebound/otel"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "otel example:", err)
		os.Exit(1)
	}
}

// run enqueues one flaky job, works it until it succeeds and exports its
// spans: to spans as JSON, or over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is
// set. It reports progress to log.
func run(ctx context.Context, spans, log io.Writer) error {
	log = &lockedWriter{w: log} // the handler logs from the worker's goroutines
	// 1. An SDK tracer provider, installed globally with W3C propagation.
	tp, where, err := tracerProvider(ctx, spans)
	if err != nil {
		return err
	}
	defer func() { _ = tp.Shutdown(context.Background()) }()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))

	// 2. rebound's native queue on an in-process Redis, its worker reporting
	// every attempt to the OpenTelemetry observer (global providers).
	mr, err := miniredis.Run()
	if err != nil {
		return err
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	q, err := native.NewQueue(rdb, "emails")
	if err != nil {
		return err
	}
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Parse("jitter(exponential(100ms, 2s))")), 5))
	done := make(chan struct{})
	handler := func(ctx context.Context, j *native.Job) error {
		fmt.Fprintf(log, "attempt %d of job %s (trace %s)\n", j.Attempt, j.ID, trace.SpanContextFromContext(ctx).TraceID())
		if j.Attempt < 3 {
			return errors.New("smtp: 421 service not available")
		}
		close(done)
		return nil
	}
	// WithProducerAsParent keeps the job's whole story in one trace: the
	// producer's span, then each attempt, the backoff delays showing as the
	// gaps between them. Without it each attempt is a trace of its own,
	// linked to the producer and to the attempt before.
	obs := reboundotel.New(reboundotel.WithProducerAsParent())
	w, err := native.NewWorker(q, rule, handler, native.WithObserver(obs))
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}

	// 3. The producer: a span of its own, whose context travels in the job's
	// metadata so that every attempt links back to it.
	pctx, producer := otel.Tracer("rebound-example").Start(ctx, "send emails", trace.WithSpanKind(trace.SpanKindProducer))
	meta := map[string]string{}
	reboundotel.Inject(pctx, propagation.MapCarrier(meta))
	id, err := q.Enqueue(pctx, []byte("ada@example.com"), native.WithName("email.welcome"), native.WithMetadata(meta))
	producer.End()
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "enqueued job %s (producer trace %s)\n", id, producer.SpanContext().TraceID())

	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return errors.New("the job did not succeed within 30s")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Shutdown(sctx); err != nil {
		return err
	}
	if err := tp.Shutdown(sctx); err != nil {
		return fmt.Errorf("flush spans to %s: %w", where, err)
	}
	fmt.Fprintf(log, "spans exported to %s\n", where)
	return nil
}

// tracerProvider exports over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT
// (or the traces-specific variable) is set, and to stdout otherwise.
func tracerProvider(ctx context.Context, stdout io.Writer) (*sdktrace.TracerProvider, string, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("rebound-example")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
	)
	if err != nil {
		return nil, "", err
	}
	var exp sdktrace.SpanExporter
	where := "stdout"
	if ep := firstSet("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"); ep != "" {
		// The exporter reads the OTEL_EXPORTER_OTLP_* variables itself.
		exp, err = otlptracehttp.New(ctx)
		where = "OTLP " + ep
	} else {
		exp, err = stdouttrace.New(stdouttrace.WithWriter(stdout), stdouttrace.WithPrettyPrint())
	}
	if err != nil {
		return nil, "", err
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), where, nil
}

func firstSet(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
