// Package safe runs user code for rebound's adapters so that nothing a user
// passes in can take a worker process down: one recover guard, and the text
// of an error that may panic or be a typed nil.
package safe

import (
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"

	"github.com/rebound-go/rebound/observe"
)

// Call runs f and returns nil, or the *observe.PanicError (with op and the
// stack) that f panicked with.
func Call(op string, f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &observe.PanicError{Op: op, Value: p, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}

// Value runs f and returns what it returns, or fallback and the
// *observe.PanicError f panicked with.
func Value[T any](op string, fallback T, f func() T) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = fallback, &observe.PanicError{Op: op, Value: p, Stack: debug.Stack()}
		}
	}()
	return f(), nil
}

// IsNil reports whether err is nil or an interface holding a nil pointer,
// map, slice, func or channel (a typed nil, `var e *MyErr; return e`), whose
// methods are likely to panic when called.
func IsNil(err error) bool {
	if err == nil {
		return true
	}
	v := reflect.ValueOf(err)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}

// Message returns err.Error() without ever panicking: "" for nil, a
// description naming the type for a typed nil ("(*pkg.MyErr)(nil)"), and
// for an Error method that panics, the type and the panic value.
func Message(err error) (msg string) {
	if err == nil {
		return ""
	}
	if IsNil(err) {
		return fmt.Sprintf("(%T)(nil)", err)
	}
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprintf("%T (its Error method panicked: %v)", err, p)
		}
	}()
	return err.Error()
}

// Truncate returns msg as valid UTF-8 (each invalid byte sequence replaced
// by U+FFFD) of at most limit bytes, cut without splitting a character and
// marked with a suffix that says how many bytes were dropped. limit <= 0
// means no limit. It is the form in which adapters store an error message.
func Truncate(msg string, limit int) string {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if limit <= 0 || len(msg) <= limit {
		return msg
	}
	suffix := fmt.Sprintf("... [%d bytes truncated]", len(msg))
	keep := max(limit-len(suffix), 0)
	for keep > 0 && keep < len(msg) && msg[keep]&0xC0 == 0x80 { // inside a UTF-8 sequence
		keep--
	}
	return msg[:keep] + fmt.Sprintf("... [%d bytes truncated]", len(msg)-keep)
}
