package backoff_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

func TestRuleDecide(t *testing.T) {
	exp := backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))
	rule := backoff.Must(backoff.NewRule(exp, 5))
	boom := errors.New("boom")
	perm := backoff.Permanent(boom)

	type decision = backoff.Decision
	retry := func(d time.Duration) decision { return decision{Outcome: backoff.OutcomeRetry, Delay: d} }
	exhausted := decision{Outcome: backoff.OutcomeExhausted}
	permanent := decision{Outcome: backoff.OutcomePermanent}

	tests := []struct {
		name    string
		rule    backoff.Rule
		attempt int
		err     error
		want    decision
	}{
		{"first failure", rule, 1, boom, retry(100 * time.Millisecond)},
		{"third failure", rule, 3, boom, retry(400 * time.Millisecond)},
		{"last retry", rule, 4, boom, retry(800 * time.Millisecond)},
		{"exhausted at MaxAttempts", rule, 5, boom, exhausted},
		{"exhausted past MaxAttempts", rule, 6, boom, exhausted},
		{"exhausted at MaxInt", rule, math.MaxInt, boom, exhausted},
		{"attempt 0 counts as 1", rule, 0, boom, retry(100 * time.Millisecond)},
		{"negative attempt counts as 1", rule, -7, boom, retry(100 * time.Millisecond)},
		{"nil error retries", rule, 2, nil, retry(200 * time.Millisecond)},
		{"permanent", rule, 1, perm, permanent},
		{"permanent beats exhausted", rule, 5, perm, permanent},
		{"permanent wrapped", rule, 2, fmt.Errorf("send: %w", perm), permanent},
		{"permanent twice wrapped", rule, 2, fmt.Errorf("job: %w", fmt.Errorf("send: %w", perm)), permanent},
		{"permanent in a join", rule, 2, errors.Join(io.EOF, perm), permanent},
		{"permanent deep in a join", rule, 2, fmt.Errorf("x: %w", errors.Join(io.EOF, fmt.Errorf("y: %w", perm))), permanent},
		{"hint raises the delay", rule, 1, backoff.RetryAfter(boom, 3*time.Second), retry(3 * time.Second)},
		{"hint may pass the policy max", rule, 4, backoff.RetryAfter(boom, time.Minute), retry(time.Minute)},
		{"shorter hint keeps the policy delay", rule, 3, backoff.RetryAfter(boom, time.Millisecond), retry(400 * time.Millisecond)},
		{"wrapped hint", rule, 1, fmt.Errorf("call: %w", backoff.RetryAfter(boom, 2*time.Second)), retry(2 * time.Second)},
		{"longest hint in a join", rule, 1, errors.Join(backoff.RetryAfter(boom, time.Second), backoff.RetryAfter(io.EOF, 5*time.Second), backoff.RetryAfter(io.EOF, 2*time.Second)), retry(5 * time.Second)},
		{"hint does not outlive MaxAttempts", rule, 5, backoff.RetryAfter(boom, time.Second), exhausted},
		{"permanent beats hint", rule, 1, backoff.Permanent(backoff.RetryAfter(boom, time.Second)), permanent},
		{"zero rule gives up", backoff.Rule{}, 1, boom, exhausted},
		{"zero rule and permanent", backoff.Rule{}, 1, perm, permanent},
		{"MaxAttempts 1 never retries", backoff.Must(backoff.NewRule(exp, 1)), 1, boom, exhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.rule.Decide(tt.attempt, tt.err, backoff.Key("job"))
			if got != tt.want {
				t.Errorf("Decide(%d, %v) = %+v, want %+v", tt.attempt, tt.err, got, tt.want)
			}
			if got.Retry() != (tt.want.Outcome == backoff.OutcomeRetry) {
				t.Errorf("Retry() = %v for %v", got.Retry(), got.Outcome)
			}
			if d := tt.rule.DelayFunc()(tt.attempt, tt.err, backoff.Key("job")); d != tt.want.Delay {
				t.Errorf("DelayFunc() = %v, want %v", d, tt.want.Delay)
			}
		})
	}
}

func TestRuleJitteredDecideMatchesDelay(t *testing.T) {
	p := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(time.Second, time.Hour))))
	rule := backoff.Must(backoff.NewRule(p, 25))
	for a := 1; a < 25; a++ {
		src := backoff.Key("job-7")
		if got, want := rule.Decide(a, io.EOF, src).Delay, backoff.Delay(p, a, src); got != want {
			t.Fatalf("attempt %d: Decide delay %v, Delay %v", a, got, want)
		}
	}
}

func TestRuleAccessors(t *testing.T) {
	p := backoff.Must(backoff.Exponential(time.Second, time.Minute))
	r := backoff.Must(backoff.NewRule(p, 5))
	if r.Policy() != backoff.Policy(p) || r.MaxAttempts() != 5 {
		t.Errorf("accessors: %v, %d", r.Policy(), r.MaxAttempts())
	}
	if got, want := r.String(), "exponential(1s, 1m) x 5"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for o, want := range map[backoff.Outcome]string{
		backoff.OutcomeRetry: "retry", backoff.OutcomeExhausted: "exhausted",
		backoff.OutcomePermanent: "permanent", 0: "Outcome(0)", 9: "Outcome(9)",
	} {
		if o.String() != want {
			t.Errorf("Outcome(%d).String() = %q, want %q", uint8(o), o.String(), want)
		}
	}
}

func TestPermanent(t *testing.T) {
	if backoff.Permanent(nil) != nil {
		t.Error("Permanent(nil) is not nil")
	}
	if backoff.IsPermanent(nil) || backoff.IsPermanent(io.EOF) {
		t.Error("plain errors are not permanent")
	}
	err := fmt.Errorf("wrapped: %w", backoff.Permanent(context.DeadlineExceeded))
	if !backoff.IsPermanent(err) {
		t.Error("a wrapped permanent error is not seen")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("errors.Is does not see through Permanent")
	}
	if err.Error() != "wrapped: context deadline exceeded" {
		t.Errorf("Permanent changes the message: %q", err)
	}
}

func TestRetryAfter(t *testing.T) {
	if backoff.RetryAfter(nil, time.Second) != nil {
		t.Error("RetryAfter(nil) is not nil")
	}
	if _, ok := backoff.RetryAfterHint(io.EOF); ok {
		t.Error("a plain error has a hint")
	}
	if _, ok := backoff.RetryAfterHint(nil); ok {
		t.Error("nil has a hint")
	}
	err := fmt.Errorf("GET /: %w", backoff.RetryAfter(io.ErrUnexpectedEOF, 30*time.Second))
	if d, ok := backoff.RetryAfterHint(err); !ok || d != 30*time.Second {
		t.Errorf("hint = %v, %v; want 30s, true", d, ok)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("errors.Is does not see through RetryAfter")
	}
	var ra *backoff.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 30*time.Second {
		t.Error("errors.As does not find the RetryAfterError")
	}
	if got, want := ra.Error(), "unexpected EOF (retry after 30s)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (&backoff.RetryAfterError{After: time.Second}).Error(), "retry after 1s"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if d, ok := backoff.RetryAfterHint(backoff.RetryAfter(io.EOF, -time.Second)); !ok || d != 0 {
		t.Errorf("a negative hint gives %v, %v; want 0, true", d, ok)
	}
	// A hand-built error with a negative After is clamped on the way out.
	if d, ok := backoff.RetryAfterHint(&backoff.RetryAfterError{Err: io.EOF, After: -time.Hour}); !ok || d != 0 {
		t.Errorf("hand-built negative hint gives %v, %v; want 0, true", d, ok)
	}
	// Hints that only an As method reveals are found too.
	if d, ok := backoff.RetryAfterHint(asHint{5 * time.Second}); !ok || d != 5*time.Second {
		t.Errorf("As-method hint gives %v, %v; want 5s, true", d, ok)
	}
}

// asHint reveals a retry-after hint only through an As method, as some error
// libraries do.
type asHint struct{ d time.Duration }

func (e asHint) Error() string { return "throttled" }
func (e asHint) As(target any) bool {
	if p, ok := target.(**backoff.RetryAfterError); ok {
		*p = &backoff.RetryAfterError{Err: errors.New("throttled"), After: e.d}
		return true
	}
	return false
}

func TestSchedule(t *testing.T) {
	p := backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))
	got := backoff.Schedule(p, backoff.Source{}, 9)
	wantDelays := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000}
	var total time.Duration
	for i, s := range got {
		total += wantDelays[i] * time.Millisecond
		want := backoff.Step{Attempt: i + 1, Delay: wantDelays[i] * time.Millisecond, Total: total}
		if s != want {
			t.Errorf("row %d = %+v, want %+v", i, s, want)
		}
	}
	if len(got) != len(wantDelays) {
		t.Errorf("%d rows, want %d", len(got), len(wantDelays))
	}
	for _, n := range []int{0, -1, math.MinInt} {
		if s := backoff.Schedule(p, backoff.Source{}, n); len(s) != 0 {
			t.Errorf("Schedule(n=%d) has %d rows", n, len(s))
		}
	}
	// The total saturates instead of overflowing.
	huge := backoff.Must(backoff.Fixed(math.MaxInt64 / 2))
	s := backoff.Schedule(huge, backoff.Source{}, 4)
	if s[1].Total != math.MaxInt64-1 || s[2].Total != math.MaxInt64 || s[3].Total != math.MaxInt64 {
		t.Errorf("totals %v, %v, %v; want saturation at MaxInt64", s[1].Total, s[2].Total, s[3].Total)
	}
	// A mistaken n is capped rather than allocating without bound.
	if n := len(backoff.Schedule(p, backoff.Source{}, math.MaxInt)); n != backoff.MaxScheduleSteps {
		t.Errorf("Schedule(MaxInt) has %d rows, want %d", n, backoff.MaxScheduleSteps)
	}
	// A keyed schedule is exactly the job's delays.
	j := backoff.Must(backoff.Jitter(p))
	for _, st := range backoff.Schedule(j, backoff.Key("job-1"), 20) {
		if d := backoff.Delay(j, st.Attempt, backoff.Key("job-1")); d != st.Delay {
			t.Errorf("schedule row %d = %v, Delay gives %v", st.Attempt, st.Delay, d)
		}
	}
}
