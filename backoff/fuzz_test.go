package backoff_test

import (
	"errors"
	"math"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/textscan"
)

// checkSyntaxError fails t unless err, from fn(s), is a *SyntaxError
// whose offset lies inside s and which names s and a message.
func checkSyntaxError(t *testing.T, fn, s string, err error) {
	t.Helper()
	var se *backoff.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("%s(%q) error %T, want *SyntaxError", fn, s, err)
	}
	if se.Offset < 0 || se.Offset > len(s) || se.Input != s || se.Msg == "" {
		t.Fatalf("%s(%q): bad SyntaxError %+v", fn, s, se)
	}
	// Valid UTF-8, and what it quotes as found is the token there, whole
	// or cut at a character boundary with the cut marked.
	if err := textscan.CheckMessage(s, se.Offset, se.Msg); err != nil {
		t.Fatalf("%s(%q): %v", fn, s, err)
	}
	if !utf8.ValidString(err.Error()) {
		t.Fatalf("%s(%q): error %q is not valid UTF-8", fn, s, err)
	}
}

// FuzzParse: no input panics; a failure is a *SyntaxError whose offset lies
// inside the input; a success prints a text that parses back to an equal
// policy whose text is the same, and its delays stay in range.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"fixed(1s)", "exponential(100ms, 10s)", "linear(100ms, 50ms, 1s)",
		"decorrelated(100ms, 10s)", "jitter(exponential(100ms, 10s))",
		"equal(exponential(100ms, 10s))", "proportional(0.2, exponential(1s, 1m))",
		"proportional(1, jitter(equal(linear(0s, 1ns, 9223372036854775807ns))))",
		"exponential(1ns, 2562047h47m16.854775807s)", "fixed(1.5h)", "proportional(1e-300, fixed(1s))",
		"jitter(", "fixed(1s))", "exponential(1s 1m)", "", "proportional(0x1p-2, fixed(1us))",
		"fixed(5一二三四五六七八九十)", "exponential(10s, 1s)", "fixed(111111111111111111111111111111s)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := backoff.Parse(s)
		if err != nil {
			checkSyntaxError(t, "Parse", s, err)
			return
		}
		text := p.String()
		q, err := backoff.Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q) printed %q, which does not parse: %v", s, text, err)
		}
		if q != p {
			t.Fatalf("Parse(%q) = %#v, but its text %q parses to %#v", s, p, text, q)
		}
		if q.String() != text {
			t.Fatalf("text %q reprints as %q", text, q.String())
		}
		m := p.Max()
		for _, a := range []int{math.MinInt, 0, 1, 2, 33, 64, math.MaxInt} {
			if d := backoff.Delay(p, a, backoff.KeyUint64(uint64(len(s)))); d < 0 || d > m {
				t.Fatalf("%v at %d = %v, outside [0, %v]", p, a, d, m)
			}
		}
	})
}

// FuzzDelay builds a policy tree from the fuzzer's bytes and numbers: each
// byte of shape adds a wrapper, the numbers feed the leaf's durations and
// the proportional fraction. Constructors must refuse bad arguments with an
// error, never a panic; every valid tree's delay must lie in [0, Max()] at
// every attempt, and a keyed delay must repeat exactly.
func FuzzDelay(f *testing.F) {
	f.Add([]byte{}, int64(100*time.Millisecond), int64(10*time.Second), int64(0), 0.2, 3, uint64(42), true)
	f.Add([]byte{0, 1, 2}, int64(1), int64(math.MaxInt64), int64(1), 1.0, math.MaxInt, uint64(7), true)
	f.Add([]byte{3, 4}, int64(time.Second), int64(time.Minute), int64(time.Second), 0.5, 64, uint64(0), false)
	f.Add([]byte{5, 6, 7}, int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), 1e-300, 0, uint64(1), true)
	f.Add([]byte{2, 2, 2, 2}, int64(-1), int64(5), int64(-7), math.NaN(), -3, uint64(9), true)
	f.Fuzz(func(t *testing.T, shape []byte, x, y, z int64, frac float64, attempt int, key uint64, keyed bool) {
		if len(shape) > 16 {
			shape = shape[:16]
		}
		a, b, c := time.Duration(x), time.Duration(y), time.Duration(z)
		var (
			p   backoff.Policy
			err error
		)
		leaf := byte(0)
		if len(shape) > 0 {
			leaf = shape[0]
		}
		switch leaf % 4 {
		case 0:
			p, err = backoff.Exponential(a, b)
		case 1:
			p, err = backoff.Fixed(a)
		case 2:
			p, err = backoff.Linear(a, c, b)
		default:
			p, err = backoff.Decorrelated(a, b)
		}
		if err != nil {
			return
		}
		for _, s := range shape {
			switch s % 3 {
			case 0:
				p, err = backoff.Jitter(p)
			case 1:
				p, err = backoff.EqualJitter(p)
			default:
				var q backoff.Policy
				q, err = backoff.Proportional(frac, p)
				if err != nil {
					if frac > 0 && frac <= 1 {
						t.Fatalf("Proportional(%v) refused: %v", frac, err)
					}
					p, err = backoff.Jitter(p)
				} else {
					p = q
				}
			}
			if err != nil {
				t.Fatalf("wrapping %v: %v", p, err)
			}
		}
		src := backoff.Source{}
		if keyed {
			src = backoff.KeyUint64(key)
		}
		m := p.Max()
		if m < 0 {
			t.Fatalf("%v: Max() = %v", p, m)
		}
		for _, n := range []int{attempt, attempt + 1, math.MaxInt, 1} {
			d := backoff.Delay(p, n, src)
			if d < 0 || d > m {
				t.Fatalf("%v at %d = %v, outside [0, %v]", p, n, d, m)
			}
			if keyed && backoff.Delay(p, n, src) != d {
				t.Fatalf("%v at %d with key %d is not deterministic", p, n, key)
			}
		}
	})
}

// FuzzParseRule: no input panics; a failure is a *SyntaxError whose offset
// lies inside the input, with no rule beside it; a success prints a text
// that parses back to an equal rule whose text is the same, and the rule's
// decisions keep its cap.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"jitter(exponential(100ms, 10s)) x 5", "fixed(1s) x 1", "exponential(1s,1m)x3",
		"proportional(0.2, exponential(1s, 1m)) x 9223372036854775807", "decorrelated(1ns, 1h) x 40",
		"fixed(1s) x 0", "fixed(1s) x -1", "fixed(1s) x", "fixed(1s)", "x 5", "", "fixed(1s) x 5 x 5",
		"fixed(1s) x 99999999999999999999", "fixed(1s) x +5", "fixed(1s) x 0x10",
		"fixed(1s) x 9223372036854775808", "fixed(1s) x 5一二三四五六七八九十",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := backoff.ParseRule(s)
		if err != nil {
			checkSyntaxError(t, "ParseRule", s, err)
			if r != (backoff.Rule{}) {
				t.Fatalf("ParseRule(%q) returned %v beside its error", s, r)
			}
			return
		}
		text := r.String()
		q, err := backoff.ParseRule(text)
		if err != nil {
			t.Fatalf("ParseRule(%q) printed %q, which does not parse: %v", s, text, err)
		}
		if q != r || q.String() != text {
			t.Fatalf("ParseRule(%q) = %#v, but its text %q parses to %#v", s, r, text, q)
		}
		if r.MaxAttempts() < 1 {
			t.Fatalf("ParseRule(%q) has MaxAttempts %d", s, r.MaxAttempts())
		}
		if d := r.Decide(r.MaxAttempts(), nil, backoff.KeyUint64(1)); d.Outcome != backoff.OutcomeExhausted {
			t.Fatalf("%v at its cap decides %+v, want exhausted", r, d)
		}
	})
}
