package notify

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/observe"
)

type ctxKey struct{}

type recObserver struct {
	mu     sync.Mutex
	ended  []observe.Result
	panics bool
}

func (o *recObserver) AttemptStarted(ctx context.Context, _ observe.Attempt) context.Context {
	if o.panics {
		panic("observer start")
	}
	return context.WithValue(ctx, ctxKey{}, "started")
}

func (o *recObserver) AttemptEnded(_ context.Context, _ observe.Attempt, r observe.Result) {
	o.mu.Lock()
	o.ended = append(o.ended, r)
	o.mu.Unlock()
	if o.panics {
		panic("observer end")
	}
}

func TestEndedCallsGiveUpOnlyWhenGivenUp(t *testing.T) {
	boom := errors.New("boom")
	retry := backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: 1}
	exhausted := backoff.Decision{Outcome: backoff.OutcomeExhausted}
	permanent := backoff.Decision{Outcome: backoff.OutcomePermanent}
	cases := []struct {
		r    observe.Result
		want bool
	}{
		{observe.Result{}, false},
		{observe.Result{Err: boom, Decision: retry}, false},
		{observe.Result{Err: boom, Decision: exhausted}, true},
		{observe.Result{Err: boom, Decision: permanent}, true},
		{observe.Result{Err: boom, Decision: exhausted, Counting: observe.Interrupted}, false},
		{observe.Result{Err: boom, Decision: retry, Counting: observe.Snoozed}, false},
		{observe.Result{Err: boom}, false}, // no decision: not a give-up
	}
	for _, c := range cases {
		var got []observe.GiveUp
		n := &Notifier{GiveUp: func(_ context.Context, g observe.GiveUp) { got = append(got, g) }}
		a := observe.Attempt{JobID: "j1", Number: 3, MaxAttempts: 3}
		n.Ended(context.Background(), a, c.r)
		if (len(got) == 1) != c.want || len(got) > 1 {
			t.Errorf("Ended(%+v) called the give-up hook %d times, want %v", c.r, len(got), c.want)
			continue
		}
		if c.want && (got[0].Attempt.JobID != "j1" || got[0].Err != boom || got[0].Outcome != c.r.Decision.Outcome) {
			t.Errorf("give-up hook got %+v, want job j1, the attempt's error and outcome %v", got[0], c.r.Decision.Outcome)
		}
	}
}

func TestPanicsAreReportedNotFatal(t *testing.T) {
	var reported []error
	obs := &recObserver{panics: true}
	n := &Notifier{
		Observer: obs,
		GiveUp:   func(context.Context, observe.GiveUp) { panic("hook") },
		OnError:  func(err error) { reported = append(reported, err) },
	}
	ctx := context.Background()
	if got := n.Started(ctx, observe.Attempt{}); got != ctx {
		t.Error("Started with a panicking observer did not return the caller's context")
	}
	n.Ended(ctx, observe.Attempt{}, observe.Result{Err: errors.New("x"), Decision: backoff.Decision{Outcome: backoff.OutcomeExhausted}})
	var ops []string
	for _, err := range reported {
		var pe *observe.PanicError
		if !errors.As(err, &pe) {
			t.Fatalf("reported %v, want *observe.PanicError", err)
		}
		ops = append(ops, pe.Op)
	}
	if strings.Join(ops, ",") != "observer,observer,give-up hook" {
		t.Errorf("reported panics of %v, want observer, observer, give-up hook", ops)
	}
	if len(obs.ended) != 1 {
		t.Errorf("observer told %d endings, want 1", len(obs.ended))
	}
}

func TestReportLogsByDefaultAndWhenTheHandlerPanics(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)

	(&Notifier{Prefix: "reboundtest"}).Report(errors.New("first"))
	(&Notifier{OnError: func(error) { panic("handler down") }}).Report(errors.New("second"))
	(&Notifier{OnError: func(error) {}}).Report(errors.New("third"))
	out := buf.String()
	for _, want := range []string{"reboundtest: internal error", "first", "error handler panicked: handler down", "second"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q lacks %q", out, want)
		}
	}
	if strings.Contains(out, "third") {
		t.Errorf("an error handled by OnError was also logged: %q", out)
	}
}

func TestStartedKeepsObserverContext(t *testing.T) {
	n := &Notifier{Observer: &recObserver{}}
	ctx := n.Started(context.Background(), observe.Attempt{})
	if ctx.Value(ctxKey{}) != "started" {
		t.Error("Started dropped the observer's context")
	}
}

type breakerObserver struct {
	recObserver
	changes []observe.BreakerChange
	ctxs    []context.Context
	panics  bool
}

func (o *breakerObserver) BreakerChanged(ctx context.Context, c observe.BreakerChange) {
	o.changes = append(o.changes, c)
	o.ctxs = append(o.ctxs, ctx)
	if o.panics {
		panic("breaker observer")
	}
}

func TestBreakerChangedReachesOnlyBreakerObservers(t *testing.T) {
	c := observe.BreakerChange{Dependency: "payments", From: breaker.Closed, To: breaker.Open}
	ctx := context.WithValue(context.Background(), ctxKey{}, "attempt")

	bo := &breakerObserver{}
	var reported []error
	n := &Notifier{Observer: bo, OnError: func(err error) { reported = append(reported, err) }}
	n.BreakerChanged(ctx, c)
	if len(bo.changes) != 1 || bo.changes[0] != c || bo.ctxs[0].Value(ctxKey{}) != "attempt" {
		t.Fatalf("breaker observer told %v, want %v once with the attempt's context", bo.changes, c)
	}
	if len(reported) != 0 {
		t.Fatalf("error handler told %v, want nothing", reported)
	}

	// A plain observer is told nothing, and nothing breaks.
	(&Notifier{Observer: &recObserver{}}).BreakerChanged(ctx, c)
	(&Notifier{}).BreakerChanged(ctx, c)

	// A panicking one is recovered and reported as the observer's panic.
	bo = &breakerObserver{panics: true}
	n.Observer = bo
	n.BreakerChanged(ctx, c)
	var pe *observe.PanicError
	if len(reported) != 1 || !errors.As(reported[0], &pe) || pe.Op != "observer" {
		t.Fatalf("error handler told %v, want one *observe.PanicError{Op: \"observer\"}", reported)
	}
}
