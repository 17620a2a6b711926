package observe_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rebound-go/rebound/observe"
)

// An observer recognises the engine's cancel of a running attempt the same
// way on every engine, and reads the text the engine stored.
func ExampleCancelledError() {
	err := error(&observe.CancelledError{Engine: "context canceled", Cause: context.Canceled})
	var ce *observe.CancelledError
	fmt.Println(errors.Is(err, observe.ErrCancelled), errors.Is(err, context.Canceled), errors.As(err, &ce), err)
	// Output: true true true context canceled
}

func TestCancelledErrorHostile(t *testing.T) {
	var nilErr *observe.CancelledError
	if nilErr.Error() == "" || nilErr.Unwrap() != nil || !nilErr.Is(observe.ErrCancelled) {
		t.Errorf("nil *CancelledError: %q, %v", nilErr.Error(), nilErr.Unwrap())
	}
	if got := (&observe.CancelledError{}).Error(); got == "" {
		t.Error("an empty Engine text reads as nothing")
	}
	if errors.Is(&observe.CancelledError{Engine: "x"}, context.Canceled) {
		t.Error("a CancelledError without a cause matches context.Canceled")
	}
}
