package safe

import (
	"context"
	"fmt"
	"time"
)

// TimeoutError is what [Within] returns for a call that did not answer in
// time.
type TimeoutError struct {
	// Op names the call.
	Op string
	// After is the bound it passed.
	After time.Duration
}

// Error says which call did not answer, and within what.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no answer within %s", e.Op, e.After)
}

// Timeout reports true: the error is a timeout, as net.Error's are.
func (e *TimeoutError) Timeout() bool { return true }

// Unwrap returns context.DeadlineExceeded, so errors.Is sees a deadline.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// Within runs call with ctx bounded by d and returns when call does or
// when d has passed, whichever comes first: a client that does not honour
// its context (go-redis without ContextTimeoutEnabled waits for its own
// ReadTimeout, 3s by default) cannot hold the caller past d. A call cut
// short goes on in its goroutine until its client gives up, its context
// cancelled, and what it returns then is dropped. A panic in call is
// returned as an *observe.PanicError. d <= 0 means no bound but ctx's.
func Within[T any](ctx context.Context, d time.Duration, op string, call func(context.Context) (T, error)) (T, error) {
	if d <= 0 {
		return valueErr(op, ctx, call)
	}
	cctx, cancel := context.WithTimeout(ctx, d)
	type answer struct {
		v   T
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer cancel()
		v, err := valueErr(op, cctx, call)
		done <- answer{v, err}
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case a := <-done:
		return a.v, a.err
	case <-timer.C:
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
	// The bound passed; an answer may have come at the same moment.
	select {
	case a := <-done:
		return a.v, a.err
	default:
		var zero T
		return zero, &TimeoutError{Op: op, After: d}
	}
}

// valueErr is Value for a call that returns an error too.
func valueErr[T any](op string, ctx context.Context, call func(context.Context) (T, error)) (v T, err error) {
	perr := Call(op, func() { v, err = call(ctx) })
	if perr != nil {
		var zero T
		return zero, perr
	}
	return v, err
}
