// Package option applies an adapter's functional options the same way in
// every adapter: a nil option is skipped, and the first error stops the
// building and is returned as it is (each option's error already names the
// option and what it wanted).
package option

import (
	"errors"

	"github.com/rebound-go/rebound/backoff"
)

// Apply runs each non-nil option on x, in order, and returns the first
// error.
func Apply[T any, O ~func(*T) error](x *T, opts []O) error {
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(x); err != nil {
			return err
		}
	}
	return nil
}

// ErrZeroRule says a rule was the zero backoff.Rule. Adapters wrap it with
// their own name and the option that got it.
var ErrZeroRule = errors.New("the rule is the zero backoff.Rule, want one built with backoff.NewRule")

// CheckRule returns ErrZeroRule for a rule backoff.NewRule did not build,
// and nil otherwise.
func CheckRule(rule backoff.Rule) error {
	if rule.Policy() == nil || rule.MaxAttempts() < 1 {
		return ErrZeroRule
	}
	return nil
}
