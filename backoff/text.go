package backoff

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rebound-go/rebound/internal/textscan"
)

// Parse reads a policy in its text form, the form every policy's String
// returns. The grammar, with optional spaces between tokens:
//
//	fixed(D)                 every attempt waits D
//	exponential(BASE, CAP)   min(BASE * 2^(attempt-1), CAP)
//	linear(BASE, STEP, CAP)  min(BASE + STEP*(attempt-1), CAP)
//	decorrelated(BASE, CAP)  AWS decorrelated jitter
//	jitter(P)                full jitter around policy P
//	equal(P)                 equal jitter around P
//	proportional(F, P)       P's delay +- fraction F, F in (0, 1]
//
// Durations use time.ParseDuration syntax ("250ms", "1m30s"). Parse(p.String())
// returns a policy equal to p. An error names the offset in s where the input
// went wrong and what was expected there.
func Parse(s string) (Policy, error) {
	ps := newParser(s)
	p, err := ps.policy()
	if err != nil {
		return nil, err
	}
	if !ps.AtEnd() {
		return nil, ps.errorf("end of input")
	}
	return p, nil
}

// ParseRule reads a rule in its text form, the form [Rule.String] returns: a
// policy as [Parse] reads it, then "x" and MaxAttempts, the total number of
// runs a job gets:
//
//	jitter(exponential(100ms, 10s)) x 5
//
// Spaces between the tokens are optional. For a rule of this package's
// policies, ParseRule(r.String()) returns a rule equal to r. An error is a
// [*SyntaxError] that names the offset in s where the input went wrong and
// what was expected there.
func ParseRule(s string) (Rule, error) {
	ps := newParser(s)
	p, err := ps.policy()
	if err != nil {
		return Rule{}, err
	}
	if !ps.Peek('x') {
		return Rule{}, ps.errorf(`"x" and MaxAttempts, as in "%s x 5"`, strings.TrimSpace(ps.Src[:ps.Pos]))
	}
	ps.Pos++
	tok, at := ps.Token()
	n, nerr := strconv.Atoi(tok)
	if nerr != nil {
		ps.Pos = at
		return Rule{}, ps.errorf("MaxAttempts, the number of runs from 1 to %d", math.MaxInt)
	}
	r, err := NewRule(p, n)
	if err != nil {
		return Rule{}, &SyntaxError{Input: s, Offset: at, Msg: strings.TrimPrefix(err.Error(), "backoff: ")}
	}
	if !ps.AtEnd() {
		return Rule{}, ps.errorf("end of input")
	}
	return r, nil
}

// SyntaxError is the error [Parse] and [ParseRule] return for text that is
// not a policy or a rule.
type SyntaxError struct {
	// Input is the text that was parsed.
	Input string
	// Offset is the byte offset in Input where parsing failed.
	Offset int
	// Msg says what was expected and what was found.
	Msg string
}

// Error names the input, the offset and what was expected there.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("backoff: parse %q: at offset %d: %s", e.Input, e.Offset, e.Msg)
}

type parser struct {
	textscan.Scanner
	depth int
}

// newParser returns a parser of s; a token ends at a bracket, a comma or a
// space.
func newParser(s string) parser { return parser{Scanner: textscan.Scanner{Src: s, Delims: "(),"}} }

// maxNesting bounds how deeply Parse lets policies nest, and so how deeply
// the wrappers let themselves be nested (they refuse to build deeper, so
// that every policy's text parses back). Real policies nest two or three
// deep; the bound keeps hostile input from recursing without limit.
const maxNesting = 32

func (p *parser) errorf(expected string, args ...any) *SyntaxError {
	return &SyntaxError{Input: p.Src, Offset: p.Pos, Msg: p.Expected(expected, args...)}
}

func (p *parser) expect(c byte) error {
	if p.Accept(c) {
		return nil
	}
	return p.errorf("%q", string(c))
}

const policyNames = "fixed, exponential, linear, decorrelated, jitter, equal or proportional"

func (p *parser) policy() (Policy, error) {
	p.Space()
	if p.depth >= maxNesting {
		return nil, &SyntaxError{Input: p.Src, Offset: p.Pos,
			Msg: fmt.Sprintf("policies nest more than %d deep, want at most %d", maxNesting, maxNesting)}
	}
	p.depth++
	defer func() { p.depth-- }()
	name, at := p.Token()
	if name == "" {
		return nil, p.errorf("a policy name (%s)", policyNames)
	}
	var (
		pol Policy
		err error
	)
	switch name {
	case "fixed":
		err = p.call(func() error {
			d, err := p.duration()
			if err == nil {
				pol, err = Fixed(d)
			}
			return err
		})
	case "exponential", "decorrelated":
		err = p.call(func() error {
			base, err := p.duration()
			if err != nil {
				return err
			}
			if err := p.expect(','); err != nil {
				return err
			}
			capd, err := p.duration()
			if err != nil {
				return err
			}
			if name == "exponential" {
				pol, err = Exponential(base, capd)
			} else {
				pol, err = Decorrelated(base, capd)
			}
			return err
		})
	case "linear":
		err = p.call(func() error {
			var ds [3]time.Duration
			for i := range ds {
				if i > 0 {
					if err := p.expect(','); err != nil {
						return err
					}
				}
				d, err := p.duration()
				if err != nil {
					return err
				}
				ds[i] = d
			}
			var err error
			pol, err = Linear(ds[0], ds[1], ds[2])
			return err
		})
	case "jitter", "equal":
		err = p.call(func() error {
			inner, err := p.policy()
			if err != nil {
				return err
			}
			if name == "jitter" {
				pol, err = Jitter(inner)
			} else {
				pol, err = EqualJitter(inner)
			}
			return err
		})
	case "proportional":
		err = p.call(func() error {
			tok, at := p.Token()
			f, ferr := strconv.ParseFloat(tok, 64)
			if ferr != nil || tok == "" || !(f > 0 && f <= 1) {
				p.Pos = at
				return p.errorf("a fraction in (0, 1]")
			}
			if err := p.expect(','); err != nil {
				return err
			}
			inner, err := p.policy()
			if err != nil {
				return err
			}
			pol, err = Proportional(f, inner)
			return err
		})
	default:
		p.Pos = at
		return nil, p.errorf("a policy name (%s)", policyNames)
	}
	if err != nil {
		if _, ok := err.(*SyntaxError); !ok {
			// A well-formed call with arguments the constructor refused.
			err = &SyntaxError{Input: p.Src, Offset: at, Msg: strings.TrimPrefix(err.Error(), "backoff: ")}
		}
		return nil, err
	}
	return pol, nil
}

// call parses "(" args ")" around body.
func (p *parser) call(body func() error) error {
	if err := p.expect('('); err != nil {
		return err
	}
	if err := body(); err != nil {
		return err
	}
	return p.expect(')')
}

func (p *parser) duration() (time.Duration, error) {
	tok, at := p.Token()
	if tok == "" {
		return 0, p.errorf("a duration such as 100ms")
	}
	d, err := time.ParseDuration(tok)
	if err != nil {
		p.Pos = at
		return 0, p.errorf("a duration such as 100ms")
	}
	return d, nil
}

// formatDuration prints d in the largest unit that holds it exactly; the
// result always parses back to d.
func formatDuration(d time.Duration) string { return textscan.FormatDuration(d) }

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Spec holds any policy and gives it a text form: it implements
// encoding.TextMarshaler and TextUnmarshaler (so a policy loads from JSON,
// YAML or an environment variable) and flag.Value:
//
//	spec := backoff.Spec{Policy: def}
//	flag.Var(&spec, "retry", "retry policy, e.g. jitter(exponential(100ms, 10s))")
//
// A Spec is itself a Policy; the zero Spec waits 0, and [NewRule] and the
// jitter wrappers refuse it as they refuse nil. The zero Spec marshals to ""
// but "" does not unmarshal (it names no policy), so leave an unset Spec out
// of JSON with the omitzero option.
type Spec struct {
	Policy
}

// Delay returns the held policy's delay, or 0 if it holds none.
func (s Spec) Delay(attempt int, src Source) time.Duration { return Delay(s.Policy, attempt, src) }

// Max returns the held policy's maximum, or 0 if it holds none.
func (s Spec) Max() time.Duration { return maxOf(s.Policy) }

// String returns the held policy's text form, or "" if it holds none.
func (s Spec) String() string {
	if s.Policy == nil {
		return ""
	}
	return s.Policy.String()
}

// MarshalText returns the held policy's text form.
func (s Spec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a policy into s.
func (s *Spec) UnmarshalText(b []byte) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	s.Policy = p
	return nil
}

// Set parses a policy into s, for flag.Value.
func (s *Spec) Set(v string) error { return s.UnmarshalText([]byte(v)) }

// Get returns the held policy, for flag.Getter.
func (s *Spec) Get() any { return s.Policy }

// unmarshalAs parses b into *dst, which must be the policy type the text
// names.
func unmarshalAs[T Policy](b []byte, dst *T) error {
	p, err := Parse(string(b))
	if err != nil {
		return err
	}
	t, ok := p.(T)
	if !ok {
		var zero T
		return fmt.Errorf("backoff: %q is a %T, want a %T", b, p, zero)
	}
	*dst = t
	return nil
}

// MarshalText returns the policy's text form.
func (p FixedPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses "fixed(D)" into p.
func (p *FixedPolicy) UnmarshalText(b []byte) error { return unmarshalAs(b, p) }

// MarshalText returns the policy's text form.
func (p ExponentialPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses "exponential(BASE, CAP)" into p.
func (p *ExponentialPolicy) UnmarshalText(b []byte) error { return unmarshalAs(b, p) }

// MarshalText returns the policy's text form.
func (p LinearPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses "linear(BASE, STEP, CAP)" into p.
func (p *LinearPolicy) UnmarshalText(b []byte) error { return unmarshalAs(b, p) }

// MarshalText returns the policy's text form.
func (p DecorrelatedPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses "decorrelated(BASE, CAP)" into p.
func (p *DecorrelatedPolicy) UnmarshalText(b []byte) error { return unmarshalAs(b, p) }

// MarshalText returns the policy's text form.
func (p FullJitterPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses "jitter(P)" into p.
func (p *FullJitterPolicy) UnmarshalText(b []byte) error { return unmarshalAs(b, p) }

// MarshalText returns the policy's text form.
func (p EqualJitterPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses "equal(P)" into p.
func (p *EqualJitterPolicy) UnmarshalText(b []byte) error { return unmarshalAs(b, p) }

// MarshalText returns the policy's text form.
func (p ProportionalPolicy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses "proportional(F, P)" into p.
func (p *ProportionalPolicy) UnmarshalText(b []byte) error { return unmarshalAs(b, p) }

// MarshalText returns the rule's text form, "POLICY x MAX", or "" for the
// zero Rule.
func (r Rule) MarshalText() ([]byte, error) {
	if isNilPolicy(r.policy) {
		return []byte{}, nil
	}
	return []byte(r.String()), nil
}

// UnmarshalText parses a rule into r, as [ParseRule] does. On an error r is
// left as it was.
func (r *Rule) UnmarshalText(b []byte) error {
	q, err := ParseRule(string(b))
	if err != nil {
		return err
	}
	*r = q
	return nil
}

// Set parses a rule into r, for flag.Value.
func (r *Rule) Set(s string) error { return r.UnmarshalText([]byte(s)) }

// Get returns the rule, for flag.Getter.
func (r *Rule) Get() any { return *r }
