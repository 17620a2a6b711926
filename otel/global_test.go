package reboundotel_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/rebound-go/rebound/observe"
	reboundotel "github.com/rebound-go/rebound/otel"
)

// TestNoopProvidersCostNothing: with the no-op provider, or the global one
// before an SDK is installed, AttemptStarted returns the context it was
// given (no span started, nothing allocated) and the carrier is untouched.
func TestNoopProvidersCostNothing(t *testing.T) {
	fail := observe.Result{Err: errors.New("x")}
	for name, obs := range map[string]*reboundotel.Observer{
		"noop":   reboundotel.New(reboundotel.WithTracerProvider(tracenoop.NewTracerProvider())),
		"global": reboundotel.New(),
	} {
		if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); ok && name == "global" {
			t.Fatal("a global SDK provider is installed in this process; tests must not install one")
		}
		carrier := observe.MapCarrier{}
		a := observe.Attempt{System: "rebound", Queue: "q", JobID: "1", Number: 1, MaxAttempts: 2, Carrier: carrier}
		ctx := context.Background()
		allocs := testing.AllocsPerRun(100, func() {
			actx := obs.AttemptStarted(ctx, a)
			if actx != ctx {
				t.Fatalf("%s: AttemptStarted returned a new context", name)
			}
			obs.AttemptEnded(actx, a, fail)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per attempt, want 0", name, allocs)
		}
		if len(carrier) != 0 {
			t.Errorf("%s: carrier written: %v", name, carrier)
		}
	}
}

// TestGlobalProviderInstalledLater runs in a child process (it changes the
// global tracer provider): an Observer built before otel.SetTracerProvider
// traces once the SDK is installed.
func TestGlobalProviderInstalledLater(t *testing.T) {
	if os.Getenv("REBOUND_OTEL_GLOBAL_CHILD") == "1" {
		obs := reboundotel.New()
		a := observe.Attempt{System: "rebound", Queue: "q", JobID: "1", Number: 1, MaxAttempts: 2}
		obs.AttemptEnded(obs.AttemptStarted(context.Background(), a), a, observe.Result{})
		rec := tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
		if n := len(rec.Ended()); n != 0 {
			t.Fatalf("%d spans before the SDK was installed", n)
		}
		obs.AttemptEnded(obs.AttemptStarted(context.Background(), a), a, observe.Result{})
		if n := len(rec.Ended()); n != 1 {
			t.Fatalf("%d spans after the SDK was installed, want 1", n)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGlobalProviderInstalledLater$", "-test.count=1")
	cmd.Env = append(os.Environ(), "REBOUND_OTEL_GLOBAL_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestEndsOnlyItsOwnSpan: AttemptEnded given a context without the
// observer's span (an adapter bug) leaves the spans it finds there alone.
func TestEndsOnlyItsOwnSpan(t *testing.T) {
	f := newFixture(t)
	ctx, outer := f.tp.Tracer("engine").Start(context.Background(), "engine.work")
	a := observe.Attempt{System: "rebound", Queue: "q", JobID: "1", Number: 1, MaxAttempts: 2}
	f.obs.AttemptStarted(ctx, a)
	f.obs.AttemptEnded(ctx, a, observe.Result{Err: errors.New("x")}) // wrong context
	if !outer.IsRecording() {
		t.Fatal("AttemptEnded ended the adapter's span")
	}
	if s := trace.SpanFromContext(ctx); s != outer {
		t.Fatal("context changed")
	}
	outer.End()
	for _, s := range f.spans.Ended() {
		if s.Name() == "engine.work" && len(s.Attributes()) != 0 {
			t.Errorf("adapter span got attributes %v", s.Attributes())
		}
	}
}
