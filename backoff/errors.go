package backoff

import (
	"errors"
	"time"
)

// permanentError marks an error that must not be retried.
type permanentError struct{ err error }

func (e *permanentError) Error() string {
	if e.err == nil {
		return "permanent error"
	}
	return e.err.Error()
}
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as permanent: a [Rule] gives up at once, whatever
// attempts are left. The mark survives wrapping with fmt.Errorf("%w") and
// errors.Join, and errors.Is/As still see err through it. Permanent(nil)
// returns nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err, or any error it wraps, was marked with
// [Permanent].
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// RetryAfterError carries a hint for the next delay, such as the value of an
// HTTP 429 or 503 response's Retry-After header. A [Rule] waits at least the
// hint; the policy's delay still applies when it is longer.
type RetryAfterError struct {
	// Err is the failure itself.
	Err error
	// After is the least time to wait before the next attempt.
	After time.Duration
}

// Error is the wrapped failure's message followed by " (retry after D)",
// or "retry after D" alone when Err is nil.
func (e *RetryAfterError) Error() string {
	msg := "retry after " + e.After.String()
	if e.Err != nil {
		msg = e.Err.Error() + " (" + msg + ")"
	}
	return msg
}

// Unwrap returns the failure.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter wraps err with a hint that the next attempt must wait at least
// d. A negative d counts as 0. RetryAfter(nil, d) returns nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &RetryAfterError{Err: err, After: max(d, 0)}
}

// RetryAfterHint returns the retry-after hint carried by err or any error it
// wraps, and whether there was one. When the error tree holds several hints
// (errors.Join of two throttled calls, say) it returns the longest, since
// the next attempt must honour all of them.
func RetryAfterHint(err error) (time.Duration, bool) {
	var (
		best  time.Duration
		found bool
	)
	walkErrors(err, func(e error) {
		var r *RetryAfterError
		switch x := e.(type) {
		case *RetryAfterError:
			r = x
		case interface{ As(any) bool }:
			if !x.As(&r) {
				return
			}
		default:
			return
		}
		if r == nil {
			return
		}
		if !found || r.After > best {
			best, found = r.After, true
		}
	})
	return max(best, 0), found
}

// walkErrors calls visit on err and on every error in its tree, depth first,
// following Unwrap() error and Unwrap() []error as package errors does.
func walkErrors(err error, visit func(error)) {
	for err != nil {
		visit(err)
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walkErrors(e, visit)
			}
			return
		default:
			return
		}
	}
}
