package reboundriver

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/internal/safe"
)

// MaxErrorBytes is the most bytes of an attempt's error message the Retrier
// hands River, which stores one message per failed attempt in the job's
// errors column. A longer message is cut to at most this many bytes of
// valid UTF-8 ending in "... [N bytes truncated]", so a job that fails with
// huge errors keeps a bounded row. River's own record of a panic (its value
// and stack trace) is River's and is not cut.
const MaxErrorBytes = 16 << 10

// attemptError is the error the Retrier hands River in place of a handler's
// error whose text River cannot store as it is: one whose Error method
// panics, a typed nil, a message with NUL bytes (PostgreSQL's jsonb refuses
// them, and River's completer then cannot record the attempt), invalid
// UTF-8, or more than MaxErrorBytes. Its text is the safe one; it unwraps
// to the handler's error, so River, an ErrorHandler and errors.Is/As still
// see it, unless walking that error's chain panics.
type attemptError struct {
	msg string
	err error
}

func (e *attemptError) Error() string { return e.msg }
func (e *attemptError) Unwrap() error { return e.err }

// verdict is what River will read from an attempt's error.
type verdict struct {
	snooze    *rivertype.JobSnoozeError // the worker snoozed the job
	cancelled bool                      // the worker or an operator cancelled it
	stopping  bool                      // the client is stopping and River will put it back
}

// inspect returns what River will read from raw and the error to hand River
// for it (raw itself when River can store it as it is). Every method of
// raw it calls is guarded: a panic in Error, Unwrap, Is or As is reported
// as an *observe.PanicError with Op "error text", and the error handed on
// is then one whose methods cannot panic.
func (r *Retrier) inspect(ctx context.Context, raw error) (verdict, error) {
	if safe.IsNil(raw) {
		// A typed nil: River counts it as a failure, and its methods are
		// likely to dereference it.
		return verdict{}, &attemptError{msg: safe.Message(raw)}
	}
	var v verdict
	walkErr := safe.Call("error text", func() {
		var snooze *rivertype.JobSnoozeError
		if errors.As(raw, &snooze) {
			v.snooze = snooze
		}
		// River walks the chain for these, so walk it here first.
		v.cancelled = errors.As(raw, new(*rivertype.JobCancelError))
		_ = errors.Is(raw, context.Canceled)
		v.stopping = stopping(ctx, raw)
	})
	msg, textErr := safe.Value("error text", "", raw.Error)
	switch {
	case textErr != nil:
		r.notify.Report(textErr)
		msg = safe.Message(raw)
	case walkErr == nil && storable(msg):
		return v, raw
	}
	msg = storableText(msg)
	if walkErr != nil {
		r.notify.Report(walkErr)
		return verdict{}, &attemptError{msg: msg}
	}
	return v, &attemptError{msg: msg, err: raw}
}

// storable reports whether River can store msg as it is.
func storable(msg string) bool {
	return len(msg) <= MaxErrorBytes && !strings.ContainsRune(msg, 0) && utf8.ValidString(msg)
}

// storableText makes msg storable: invalid UTF-8 and NUL bytes become
// U+FFFD, and the result is cut to MaxErrorBytes.
func storableText(msg string) string {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	msg = strings.ReplaceAll(msg, "\x00", "\uFFFD")
	return safe.Truncate(msg, MaxErrorBytes)
}
