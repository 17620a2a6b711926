package option

import (
	"errors"
	"testing"

	"github.com/rebound-go/rebound/backoff"
)

type thing struct{ calls []string }

type opt func(*thing) error

func TestApplySkipsNilAndStopsAtTheFirstError(t *testing.T) {
	bad := errors.New("WithX: bad")
	add := func(s string) opt { return func(x *thing) error { x.calls = append(x.calls, s); return nil } }
	var x thing
	err := Apply(&x, []opt{add("a"), nil, add("b"), func(*thing) error { return bad }, add("c")})
	if err != bad {
		t.Fatalf("Apply = %v, want the option's own error", err)
	}
	if got := len(x.calls); got != 2 {
		t.Errorf("ran %d options before the error, want 2 (nil skipped, none after the error)", got)
	}
}

func TestCheckRule(t *testing.T) {
	if err := CheckRule(backoff.Rule{}); !errors.Is(err, ErrZeroRule) {
		t.Errorf("CheckRule(zero) = %v, want ErrZeroRule", err)
	}
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(1)), 1))
	if err := CheckRule(rule); err != nil {
		t.Errorf("CheckRule(valid) = %v, want nil", err)
	}
}
