package breaker_test

import (
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
)

// TestZeroTokensFullBurst: the zero Tokens is a budget never used, and
// holds a full burst whatever the clock reads: it does not earn its
// tokens at the floor rate from 1970 (NewBudget(0, 0.001, 1e9) held 1.77e6
// tokens now, and 0 on a fake clock at the zero time).
func TestZeroTokensFullBurst(t *testing.T) {
	b := breaker.MustBudget(breaker.NewBudget(0, 0.001, 1e9))
	for _, now := range []time.Time{time.Now(), {}, time.UnixMilli(0), time.UnixMilli(1), time.Date(2500, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if got := b.Available(breaker.Tokens{}, now); got != 1e9 {
			t.Errorf("the zero Tokens at %v holds %v tokens, want the burst, 1e9", now, got)
		}
		var tk breaker.Tokens
		if ok, _ := b.Take(&tk, now); !ok {
			t.Fatalf("the first retry at %v found no token", now)
		}
		if got := b.Available(tk, now); got != 1e9-1 {
			t.Errorf("after one retry at %v the budget holds %v, want 1e9-1", now, got)
		}
	}
	// A breaker that trips at the zero time empties its budget, and it
	// stays empty: the reset does not read as a budget never used.
	br := breaker.Must(breaker.New(breaker.Config{Failures: 1, Cooldown: backoff.Must(backoff.Fixed(time.Millisecond)), Budget: b}))
	var c breaker.Circuit
	var zero time.Time
	br.Record(&c, "d", zero, breaker.Ticket{}, breaker.Failure)
	if c.State != breaker.Open {
		t.Fatalf("state %v after a failure, want open", c.State)
	}
	if got := b.Available(c.Budget, zero); got != 0 {
		t.Errorf("a budget emptied by a trip at the zero time holds %v, want 0", got)
	}
}
