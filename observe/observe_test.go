package observe_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
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
		{observe.Result{Err: boom, Decision: retry, Uncounted: observe.Snoozed}, "snoozed"},
		{observe.Result{Err: boom, Decision: retry, Uncounted: observe.Interrupted}, "interrupted"},
		{observe.Result{Uncounted: observe.Snoozed}, "snoozed"},
		{observe.Result{Err: boom, Uncounted: observe.Uncounted(200)}, "uncounted"},
	}
	for _, c := range cases {
		if got := c.r.Outcome(); got != c.want {
			t.Errorf("%+v.Outcome() = %q, want %q", c.r, got, c.want)
		}
	}
}

func TestUncountedString(t *testing.T) {
	for u, want := range map[observe.Uncounted]string{
		observe.Counted:      "counted",
		observe.Snoozed:      "snoozed",
		observe.Interrupted:  "interrupted",
		observe.Uncounted(9): "uncounted",
	} {
		if got := u.String(); got != want {
			t.Errorf("Uncounted(%d).String() = %q, want %q", uint8(u), got, want)
		}
	}
}

// An observer tells a snooze from a failure by Uncounted: the job runs again
// at FireAt, and the run does not count against the attempts cap.
func ExampleResult_Outcome() {
	snooze := observe.Result{
		Err:       errors.New("snoozed for 1m0s"),
		Decision:  backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: time.Minute},
		FireAt:    time.Date(2026, 1, 2, 15, 5, 0, 0, time.UTC),
		Uncounted: observe.Snoozed,
	}
	fmt.Println(snooze.Outcome(), snooze.Uncounted != observe.Counted, snooze.FireAt.Format(time.Kitchen))
	// Output: snoozed true 3:05PM
}
