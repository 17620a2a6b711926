package reboundotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	reboundotel "github.com/rebound-go/rebound/otel"
)

// bareObserver does nothing: the cost of an adapter with no
// instrumentation, the baseline the others are compared with.
type bareObserver struct{}

func (bareObserver) AttemptStarted(ctx context.Context, _ observe.Attempt) context.Context {
	return ctx
}
func (bareObserver) AttemptEnded(context.Context, observe.Attempt, observe.Result) {}

// BenchmarkObserver measures one failed attempt that is retried (start, end
// with a retry decision, carrier read and write) through each observer:
//
//	none          no instrumentation (an observer that does nothing)
//	noop          reboundotel with the no-op tracer and meter providers
//	global-unset  reboundotel with the global providers before any SDK is
//	              installed (the default for a library user)
//	sdk           reboundotel with the SDK: every span sampled and
//	              recorded (no exporter), metrics aggregated by a reader
func BenchmarkObserver(b *testing.B) {
	sdkTP := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	sdkMP := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		_ = sdkTP.Shutdown(context.Background())
		_ = sdkMP.Shutdown(context.Background())
	})
	cases := []struct {
		name string
		obs  observe.Observer
	}{
		{"none", bareObserver{}},
		{"noop", reboundotel.New(
			reboundotel.WithTracerProvider(tracenoop.NewTracerProvider()),
			reboundotel.WithMeterProvider(metricnoop.NewMeterProvider()))},
		{"global-unset", reboundotel.New()},
		{"sdk", reboundotel.New(
			reboundotel.WithTracerProvider(sdkTP),
			reboundotel.WithMeterProvider(sdkMP))},
	}
	fail := errors.New("flaky")
	res := observe.Result{
		Err:      fail,
		Decision: backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: 2 * time.Second},
		FireAt:   time.Date(2026, 1, 2, 15, 4, 7, 0, time.UTC),
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			carrier := observe.MapCarrier{}
			a := observe.Attempt{
				System: "rebound", Queue: "emails", JobID: "job-42", Kind: "email.send",
				Number: 2, MaxAttempts: 5, Carrier: carrier,
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				actx := c.obs.AttemptStarted(ctx, a)
				c.obs.AttemptEnded(actx, a, res)
			}
		})
	}
}
