package conformance

import (
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
)

// The hostile errors a script can fail with, by name, described.
var hostileKinds = map[string]string{
	"panicking":    "an error whose Error method panics",
	"typed-nil":    "a typed nil error, (*typedNilError)(nil)",
	"huge":         "a 1 MB error message",
	"invalid-utf8": "an error message that is not valid UTF-8",
}

// hostileOrder lists hostileKinds in a fixed order.
var hostileOrder = []string{"panicking", "typed-nil", "huge", "invalid-utf8"}

// hostileErrorPanic is what panickingError's Error method panics with.
const hostileErrorPanic = "conformance: hostile Error method panics"

// panickingError is an error whose Error method panics.
type panickingError struct{}

func (*panickingError) Error() string { panic(hostileErrorPanic) }

// typedNilError is returned as a typed nil: its Error method dereferences
// the nil receiver.
type typedNilError struct{ msg string }

func (e *typedNilError) Error() string { return e.msg }

// hugePrefix starts the 1 MB message.
const hugePrefix = "conformance: a 1 MB error message: "

// hugeMessage is the 1 MB message, built once.
var hugeMessage = sync.OnceValue(func() string {
	return hugePrefix + strings.Repeat("x", 1<<20-len(hugePrefix))
})

// invalidMessage is a message with bytes that are not UTF-8.
const invalidMessage = "conformance: invalid UTF-8 \xff\xfe\xfd in an error message"

// textError is an error with a fixed message.
type textError struct{ msg string }

func (e *textError) Error() string { return e.msg }

// hostileError returns the named hostile error.
func hostileError(kind string) error {
	switch kind {
	case "panicking":
		return &panickingError{}
	case "typed-nil":
		var e *typedNilError
		return e
	case "huge":
		return &textError{msg: hugeMessage()}
	case "invalid-utf8":
		return &textError{msg: invalidMessage}
	}
	panic("conformance: unknown hostile error " + kind)
}

// recognisable is what the stored message of a hostile error must contain.
func (e *env) recognisable(kind string) string {
	switch kind {
	case "panicking":
		return "panickingError"
	case "typed-nil":
		return "typedNilError"
	case "huge":
		if e.lim.MaxErrorBytes > 0 {
			return hugePrefix[:min(len(hugePrefix), e.lim.MaxErrorBytes/2)]
		}
		return hugePrefix
	case "invalid-utf8":
		return "conformance: invalid UTF-8"
	}
	return "conformance: scripted failure of attempt 2"
}

// checkHostileErrors runs jobs whose handler fails with a hostile error:
// one whose Error method panics, a typed nil, a 1 MB message, a message
// that is not valid UTF-8. Each failure is one counted attempt, retried
// under the rule; the worker lives and keeps serving; the error message
// the engine stores (ErrorEngine) is valid UTF-8, within
// Limits.MaxErrorBytes, and recognisably the error: its text, or its type
// name when the text cannot be read.
func checkHostileErrors(e *env) {
	w := e.start("hostile errors", e.rule(backoff.Must(backoff.Fixed(unit)), 2))
	// An adapter may report the panic of an Error method it called.
	w.allow = func(err error) bool { return strings.Contains(safe.Message(err), hostileErrorPanic) }
	ids := map[string]string{}
	for _, kind := range hostileOrder {
		ids[kind] = w.enqueue(script{Always: true, Hostile: kind})
	}
	ids[""] = w.enqueue(script{Always: true})
	w.waitFor(10*time.Second, func() bool {
		for _, id := range ids {
			if id != "" && !w.finished(id, 0) {
				return false
			}
		}
		return true
	})
	w.enqueueN(2, script{Fail: 1})
	states := w.settle()
	w.verify(states)
	ee, ok := w.eng.(ErrorEngine)
	if !e.need(FeatureErrors, ok, "LastError reads the message the engine stored for a job's last failed attempt") {
		return
	}
	for _, kind := range append([]string{""}, hostileOrder...) {
		id := ids[kind]
		if id == "" || states[id] != StateFailed {
			continue // already reported
		}
		what := "job " + id + " (" + w.job(id).s.describe() + ")"
		msg, err := ee.LastError(w.ctx(), id)
		if err != nil {
			w.errorf("%s: LastError: %v", what, err)
			continue
		}
		if !utf8.ValidString(msg) {
			w.errorf("%s: the stored last error %q is not valid UTF-8; want invalid bytes replaced", what, clip(msg))
		}
		if e.lim.MaxErrorBytes > 0 && len(msg) > e.lim.MaxErrorBytes {
			w.errorf("%s: the stored last error is %d bytes, want at most Limits.MaxErrorBytes (%d)", what, len(msg), e.lim.MaxErrorBytes)
		}
		if want := e.recognisable(kind); !strings.Contains(msg, want) {
			w.errorf("%s: the stored last error %q does not contain %q; want the error's text, or its type name when the text cannot be read",
				what, clip(msg), want)
		}
		if kind == "huge" && e.lim.MaxErrorBytes == 0 && !strings.Contains(msg, hugeMessage()) {
			w.errorf("%s: the stored last error is %d bytes of the %d-byte message, but the harness declares Limits.MaxErrorBytes 0 (messages stored whole)",
				what, len(msg), len(hugeMessage()))
		}
	}
}

// clip shortens a message for a violation.
func clip(s string) string {
	if len(s) <= 100 {
		return s
	}
	return s[:100] + fmt.Sprintf("... (%d bytes)", len(s))
}
