package safe

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rebound-go/rebound/observe"
)

// TestWithinBoundsACallThatIgnoresItsContext: a call that never looks at
// its context still returns at the bound, as a timeout; an answer in time
// is returned as it is; a panic is an error; the caller's cancel ends the
// wait.
func TestWithinBoundsACallThatIgnoresItsContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	start := time.Now()
	_, err := Within(context.Background(), 50*time.Millisecond, "hang", func(context.Context) (int, error) {
		<-release
		return 1, nil
	})
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) || te.Op != "hang" {
		t.Fatalf("a call that hangs: %v, want a TimeoutError", err)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("returned after %v, before its bound", took)
	}
	if v, err := Within(context.Background(), time.Minute, "quick", func(context.Context) (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Fatalf("a quick call: %v, %v; want 7, nil", v, err)
	}
	var pe *observe.PanicError
	if _, err := Within(context.Background(), time.Minute, "boom", func(context.Context) (int, error) { panic("boom") }); !errors.As(err, &pe) {
		t.Fatalf("a call that panics: %v, want a PanicError", err)
	}
	if _, err := Within(context.Background(), 0, "boom", func(context.Context) (int, error) { panic("boom") }); !errors.As(err, &pe) {
		t.Fatalf("an unbounded call that panics: %v, want a PanicError", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Within(ctx, time.Minute, "hang", func(context.Context) (int, error) { <-release; return 0, nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled caller: %v, want context.Canceled", err)
	}
}
