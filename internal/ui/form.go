package ui

import (
	"strings"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// Form is a policy as the page's controls show it: one curve, optionally
// inside one jitter wrapper. Policies the controls cannot show (wrappers
// nested in wrappers, or a policy of another package) have no Form; the page
// then shows only their text.
type Form struct {
	// Curve is "fixed", "exponential", "linear" or "decorrelated".
	Curve string `json:"curve"`
	// Jitter is "none", "full", "equal" or "proportional".
	Jitter string `json:"jitter"`
	// Fraction is proportional jitter's fraction, 0 otherwise.
	Fraction float64 `json:"fraction"`
	// Base is the fixed delay, or the curve's first delay. Step is linear's
	// step and Cap the curve's cap; each is nil where the curve has none.
	Base *Duration `json:"base"`
	Step *Duration `json:"step"`
	Cap  *Duration `json:"cap"`
}

// curveOf returns p without its jitter wrapper, if it has one.
func curveOf(p backoff.Policy) backoff.Policy {
	switch w := p.(type) {
	case backoff.FullJitterPolicy:
		return w.Inner()
	case backoff.EqualJitterPolicy:
		return w.Inner()
	case backoff.ProportionalPolicy:
		return w.Inner()
	}
	return p
}

// formOf returns p's Form, or nil when the controls cannot show p.
func formOf(p backoff.Policy) *Form {
	f := &Form{Jitter: "none"}
	switch w := p.(type) {
	case backoff.FullJitterPolicy:
		f.Jitter = "full"
	case backoff.EqualJitterPolicy:
		f.Jitter = "equal"
	case backoff.ProportionalPolicy:
		f.Jitter, f.Fraction = "proportional", w.Fraction()
	}
	p = curveOf(p)
	var names []string
	switch p.(type) {
	case backoff.FixedPolicy:
		f.Curve, names = "fixed", []string{"base"}
	case backoff.ExponentialPolicy:
		f.Curve, names = "exponential", []string{"base", "cap"}
	case backoff.DecorrelatedPolicy:
		f.Curve, names = "decorrelated", []string{"base", "cap"}
	case backoff.LinearPolicy:
		f.Curve, names = "linear", []string{"base", "step", "cap"}
	default:
		return nil
	}
	// The curves keep their parameters to themselves; their canonical text
	// form, "linear(100ms, 50ms, 2s)", names them exactly.
	s := p.String()
	open := strings.IndexByte(s, '(')
	if open < 0 || !strings.HasSuffix(s, ")") {
		return nil
	}
	args := strings.Split(s[open+1:len(s)-1], ", ")
	if len(args) != len(names) {
		return nil
	}
	for i, a := range args {
		d, err := time.ParseDuration(a)
		if err != nil {
			return nil
		}
		v := NewDuration(d, a)
		switch names[i] {
		case "base":
			f.Base = &v
		case "step":
			f.Step = &v
		case "cap":
			f.Cap = &v
		}
	}
	return f
}
