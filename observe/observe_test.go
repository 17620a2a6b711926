package observe_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/observe"
)

func TestResultOutcome(t *testing.T) {
	boom := errors.New("boom")
	retry := backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: time.Second}
	cases := []struct {
		r    observe.Result
		want string
	}{
		{observe.Result{}, "success"},
		{observe.Result{Err: boom, Decision: retry}, "retry"},
		{observe.Result{Err: boom, Decision: backoff.Decision{Outcome: backoff.OutcomeExhausted}}, "exhausted"},
		{observe.Result{Err: boom, Decision: backoff.Decision{Outcome: backoff.OutcomePermanent}}, "permanent"},
		// The engine's retry decision does not make an uncounted run a retry.
		{observe.Result{Err: boom, Decision: retry, Counting: observe.Snoozed}, "snoozed"},
		{observe.Result{Err: boom, Decision: retry, Counting: observe.Interrupted}, "interrupted"},
		{observe.Result{Counting: observe.Snoozed}, "snoozed"},
		{observe.Result{Err: &observe.DeferredError{Dependency: "payments"}, Decision: retry, Counting: observe.Deferred}, "deferred"},
		{observe.Result{Err: boom, Counting: observe.Counting(200)}, "uncounted"},
		// A failure whose follow-up the engine decided without rebound.
		{observe.Result{Err: boom}, "engine"},
	}
	for _, c := range cases {
		if got := c.r.Outcome(); got != c.want {
			t.Errorf("%+v.Outcome() = %q, want %q", c.r, got, c.want)
		}
	}
}

func TestEngineDecided(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		r    observe.Result
		want bool
	}{
		{observe.Result{Err: boom}, true},
		{observe.Result{}, false},
		{observe.Result{Err: boom, Decision: backoff.Decision{Outcome: backoff.OutcomeRetry}}, false},
		{observe.Result{Err: boom, Counting: observe.Snoozed}, false},
	} {
		if got := c.r.EngineDecided(); got != c.want {
			t.Errorf("%+v.EngineDecided() = %v, want %v", c.r, got, c.want)
		}
		if c.r.EngineDecided() && c.r.GaveUp() {
			t.Errorf("%+v: engine-decided and given up", c.r)
		}
	}
}

func TestCountingString(t *testing.T) {
	for u, want := range map[observe.Counting]string{
		observe.Counted:     "counted",
		observe.Snoozed:     "snoozed",
		observe.Interrupted: "interrupted",
		observe.Deferred:    "deferred",
		observe.Counting(9): "uncounted",
	} {
		if got := u.String(); got != want {
			t.Errorf("Counting(%d).String() = %q, want %q", uint8(u), got, want)
		}
	}
}

// An observer tells a snooze from a failure by Counting: the job runs again
// at FireAt, and the run does not count against the attempts cap.
func ExampleResult_Outcome() {
	snooze := observe.Result{
		Err:      errors.New("snoozed for 1m0s"),
		Decision: backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: time.Minute},
		FireAt:   time.Date(2026, 1, 2, 15, 5, 0, 0, time.UTC),
		Counting: observe.Snoozed,
	}
	fmt.Println(snooze.Outcome(), snooze.Counting != observe.Counted, snooze.FireAt.Format(time.Kitchen))
	// Output: snoozed true 3:05PM
}

func TestResultGaveUp(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		r    observe.Result
		want bool
	}{
		{observe.Result{}, false},
		{observe.Result{Err: boom, Decision: backoff.Decision{Outcome: backoff.OutcomeRetry}}, false},
		{observe.Result{Err: boom, Decision: backoff.Decision{Outcome: backoff.OutcomeExhausted}}, true},
		{observe.Result{Err: boom, Decision: backoff.Decision{Outcome: backoff.OutcomePermanent}}, true},
		{observe.Result{Err: boom, Decision: backoff.Decision{Outcome: backoff.OutcomeExhausted}, Counting: observe.Interrupted}, false},
		{observe.Result{Err: boom, Decision: backoff.Decision{Outcome: backoff.OutcomeExhausted}, Counting: observe.Deferred}, false},
	} {
		if got := c.r.GaveUp(); got != c.want {
			t.Errorf("%+v.GaveUp() = %v, want %v", c.r, got, c.want)
		}
	}
}

func TestPanicErrorUnwrapsAnErrorValue(t *testing.T) {
	inner := errors.New("inner")
	var pe error = &observe.PanicError{Op: "handler", Value: inner}
	if !errors.Is(pe, inner) || pe.Error() != "rebound: handler panicked: inner" {
		t.Errorf("PanicError = %q (Is inner: %v), want rebound: handler panicked: inner, unwrapping to inner", pe, errors.Is(pe, inner))
	}
	if errors.Unwrap(&observe.PanicError{Op: "policy", Value: 42}) != nil {
		t.Error("a non-error panic value unwrapped to an error")
	}
}

func TestDeferredErrorSaysWhy(t *testing.T) {
	until := time.Date(2026, 1, 2, 15, 4, 5, 250e6, time.UTC)
	for d, want := range map[breaker.Decision]string{
		breaker.DeferOpen:   `rebound: run deferred: dependency "payments": its breaker is open until 2026-01-02T15:04:05.25Z`,
		breaker.DeferBudget: `rebound: run deferred: dependency "payments": its retry budget is spent until 2026-01-02T15:04:05.25Z`,
	} {
		if got := (&observe.DeferredError{Dependency: "payments", Decision: d, Until: until}).Error(); got != want {
			t.Errorf("%v: Error() = %q, want %q", d, got, want)
		}
	}
}

// A run a breaker held back is neither a failure nor a success: the job
// runs again at FireAt with the same attempt number.
func ExampleDeferredError() {
	until := time.Date(2026, 1, 2, 15, 5, 0, 0, time.UTC)
	r := observe.Result{
		Err:      &observe.DeferredError{Dependency: "payments", Decision: breaker.DeferOpen, Until: until},
		Decision: backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: 30 * time.Second},
		FireAt:   until.Add(2 * time.Second),
		Counting: observe.Deferred,
	}
	var de *observe.DeferredError
	fmt.Println(r.Outcome(), r.Counts(), r.GaveUp(), errors.As(r.Err, &de), de.Dependency)
	// Output: deferred false false true payments
}
