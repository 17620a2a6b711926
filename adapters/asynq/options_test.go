package reboundasynq

import (
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// TestNewErrors: bad input is an error that names the option and says
// what was expected; nil options and nil values mean "none" or the default.
func TestNewErrors(t *testing.T) {
	rule := mustRule(t, fixed(t, time.Second), 2)
	for _, tc := range []struct {
		name string
		rule backoff.Rule
		opts []Option
		want string
	}{
		{"zero rule", backoff.Rule{}, nil, "reboundasynq: the rule is the zero backoff.Rule, want one built with backoff.NewRule"},
		{"negative fallback", rule, []Option{WithFallbackDelay(-time.Second)}, "reboundasynq: WithFallbackDelay: -1s is negative, want > 0"},
		{"zero fallback", rule, []Option{WithFallbackDelay(0)}, "reboundasynq: WithFallbackDelay: 0s is zero, want > 0"},
		{"empty type", rule, []Option{WithKindRule("", rule)}, "reboundasynq: WithKindRule: task type is empty, want an asynq task type"},
		{"zero type rule", rule, []Option{WithKindRule("email:send", backoff.Rule{})}, `reboundasynq: WithKindRule("email:send"): the rule is the zero backoff.Rule, want one built with backoff.NewRule`},
	} {
		if _, err := New(tc.rule, tc.opts...); err == nil || err.Error() != tc.want {
			t.Errorf("%s: New = %v, want %q", tc.name, err, tc.want)
		}
	}
	r, err := New(rule, nil, WithObserver(nil), WithGiveUp(nil), WithErrorHandler(nil), WithKey(nil), WithIsFailure(nil))
	if err != nil {
		t.Fatalf("New with nil options and nil values = %v, want no error", err)
	}
	if r.notify.Observer != nil || r.notify.GiveUp != nil || r.notify.OnError != nil || r.key != nil || r.isFailure != nil || r.fallback != DefaultFallbackDelay {
		t.Errorf("nil values did not leave the defaults: %+v", r)
	}
}
