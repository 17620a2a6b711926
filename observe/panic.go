package observe

import "fmt"

// PanicError is a panic of user code that an adapter recovered. A handler's
// panic becomes the failed attempt's error (it counts against the attempts
// cap like any failure); a panic of a policy, key function, observer, hook
// or an error's Error method is reported to the adapter's error handler and
// the adapter goes on with a documented fallback. Every adapter uses this
// one type, so errors.As(err, new(*observe.PanicError)) finds a panic
// whatever engine ran the job.
type PanicError struct {
	// Op names what panicked: "handler", "policy", "key", "observer",
	// "give-up hook", "is-failure", "error text" or "error handler".
	Op string
	// Value is the value passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, from runtime/debug.Stack.
	Stack []byte
}

// Error returns "rebound: OP panicked: VALUE". A Value whose own String or
// Error method panics is printed by fmt's recovery text instead.
func (e *PanicError) Error() string {
	return fmt.Sprintf("rebound: %s panicked: %v", e.Op, e.Value)
}

// Unwrap returns the panic value when it is an error, so errors.Is and
// errors.As see through the panic to what was thrown.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
