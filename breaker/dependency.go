package breaker

import "fmt"

// DependencyError binds a failure to the dependency that caused it: an
// adapter that sees it records the failure against that dependency's
// breaker. Build it with [Dependency]; find it with [DependencyOf].
type DependencyError struct {
	// Err is the failure itself.
	Err error
	// Name is the dependency's name, such as "payments".
	Name string
}

// Error returns the failure's own message: the binding is for the
// breaker, not for the log.
func (e *DependencyError) Error() string {
	if e.Err == nil {
		return "failure of dependency " + e.Name
	}
	return e.Err.Error()
}

// Unwrap returns the failure.
func (e *DependencyError) Unwrap() error { return e.Err }

// Dependency binds err to the dependency name: the failure counts against
// that dependency's breaker. The binding survives wrapping with
// fmt.Errorf("%w") and errors.Join, and errors.Is/As still see err through
// it. Dependency(nil, name) returns nil.
func Dependency(err error, name string) error {
	if err == nil {
		return nil
	}
	return &DependencyError{Err: err, Name: name}
}

// DependencyOf returns the name of the dependency err, or any error it
// wraps, is bound to, and whether there is one. When the error tree binds
// several (errors.Join of two failed calls, say), the first in depth-first
// order wins: the outermost binding, as errors.As finds it. It never
// panics, whatever the tree holds: an Unwrap method that panics or loops
// ends the search, reported as no binding.
func DependencyOf(err error) (name string, ok bool) {
	defer func() {
		if recover() != nil {
			name, ok = "", false
		}
	}()
	return find(err, 0)
}

// maxDepth bounds the error tree DependencyOf walks, so a cyclic Unwrap
// cannot hang it.
const maxDepth = 100

func find(err error, depth int) (string, bool) {
	for ; err != nil && depth < maxDepth; depth++ {
		switch e := err.(type) {
		case *DependencyError:
			if e != nil {
				return e.Name, true
			}
			return "", false
		case interface{ As(any) bool }:
			var d *DependencyError
			if e.As(&d) && d != nil {
				return d.Name, true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if n, ok := find(e, depth+1); ok {
					return n, true
				}
			}
			return "", false
		default:
			return "", false
		}
	}
	return "", false
}

// MaxNameLen is the longest dependency name.
const MaxNameLen = 128

// CheckName says what is wrong with a dependency name, or returns nil: a
// name is 1 to [MaxNameLen] bytes of printable ASCII other than space and
// the braces "{" and "}", which the Redis store's keys use as their
// Cluster hash tag.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("breaker: dependency name is empty, want a name such as \"payments\"")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("breaker: dependency name of %d bytes is too long, want at most %d", len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' || c == '{' || c == '}' {
			return fmt.Errorf("breaker: dependency name %q has %q at offset %d, want printable ASCII without spaces or braces", name, c, i)
		}
	}
	return nil
}
