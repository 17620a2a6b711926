package backoff_test

import (
	"encoding"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

func TestParseValid(t *testing.T) {
	ms := time.Millisecond
	exp := backoff.Must(backoff.Exponential(100*ms, 10*time.Second))
	tests := []struct {
		in   string
		want backoff.Policy
		text string // canonical form, when it differs from in
	}{
		{"fixed(1s)", backoff.Must(backoff.Fixed(time.Second)), ""},
		{"fixed(0s)", backoff.Must(backoff.Fixed(0)), ""},
		{"fixed(0)", backoff.Must(backoff.Fixed(0)), "fixed(0s)"},
		{"exponential(100ms, 10s)", exp, ""},
		{"exponential(100ms,10s)", exp, "exponential(100ms, 10s)"},
		{"  exponential ( 100ms ,\t10s )\n", exp, "exponential(100ms, 10s)"},
		{"exponential(0.1s, 10000ms)", exp, "exponential(100ms, 10s)"},
		{"exponential(1s, 1h30m)", backoff.Must(backoff.Exponential(time.Second, 90*time.Minute)), "exponential(1s, 90m)"},
		{"exponential(1500us, 1m)", backoff.Must(backoff.Exponential(1500*time.Microsecond, time.Minute)), "exponential(1500us, 1m)"},
		{"exponential(1ns, 9223372036854775807ns)", backoff.Must(backoff.Exponential(1, math.MaxInt64)), ""},
		{"linear(100ms, 50ms, 1s)", backoff.Must(backoff.Linear(100*ms, 50*ms, time.Second)), ""},
		{"decorrelated(100ms, 10s)", backoff.Must(backoff.Decorrelated(100*ms, 10*time.Second)), ""},
		{"jitter(exponential(100ms, 10s))", backoff.Must(backoff.Jitter(exp)), ""},
		{"equal(exponential(100ms, 10s))", backoff.Must(backoff.EqualJitter(exp)), ""},
		{"proportional(0.2, exponential(1s, 1m))", backoff.Must(backoff.Proportional(0.2, backoff.Must(backoff.Exponential(time.Second, time.Minute)))), ""},
		{"proportional(1, fixed(1s))", backoff.Must(backoff.Proportional(1, backoff.Must(backoff.Fixed(time.Second)))), ""},
		{"proportional(.5, fixed(1s))", backoff.Must(backoff.Proportional(0.5, backoff.Must(backoff.Fixed(time.Second)))), "proportional(0.5, fixed(1s))"},
		{"jitter(jitter(fixed(1s)))", backoff.Must(backoff.Jitter(backoff.Must(backoff.Jitter(backoff.Must(backoff.Fixed(time.Second)))))), ""},
	}
	for _, tt := range tests {
		got, err := backoff.Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Parse(%q) = %v, want %v", tt.in, got, tt.want)
		}
		text := tt.text
		if text == "" {
			text = tt.in
		}
		if got.String() != text {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got.String(), text)
		}
	}
}

// TestParseErrors: every error names the offset where the input went wrong
// and what was expected there.
func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("jitter(", 40) + "fixed(1s)" + strings.Repeat(")", 40)
	tests := []struct {
		in     string
		offset int
		msg    string
	}{
		{"", 0, `expected a policy name (fixed, exponential, linear, decorrelated, jitter, equal or proportional), found end of input`},
		{"   ", 3, `expected a policy name`},
		{"expo(1s, 1m)", 0, `expected a policy name (fixed, exponential, linear, decorrelated, jitter, equal or proportional), found "expo"`},
		{"Exponential(1s, 1m)", 0, `found "Exponential"`},
		{"fixed", 5, `expected "(", found end of input`},
		{"fixed 1s", 6, `expected "(", found "1s"`},
		{"fixed()", 6, `expected a duration such as 100ms, found ")"`},
		{"fixed(1 s)", 6, `expected a duration such as 100ms, found "1"`},
		{"fixed(1x)", 6, `expected a duration such as 100ms, found "1x"`},
		{"fixed(1s", 8, `expected ")", found end of input`},
		{"fixed(1s))", 9, `expected end of input, found ")"`},
		{"fixed(1s) fixed(2s)", 10, `expected end of input, found "fixed"`},
		{"fixed(-1s)", 0, `fixed delay -1s is negative, want >= 0`},
		{"exponential(100ms)", 17, `expected ",", found ")"`},
		{"exponential(100ms 10s)", 18, `expected ",", found "10s"`},
		{"exponential(100ms, 50ms)", 0, `cap 50ms is below base 100ms`},
		{"exponential(0s, 1s)", 0, `exponential base 0s is not positive, want > 0`},
		{"exponential(1s, 99999999999h)", 16, `expected a duration such as 100ms, found "99999999999h"`},
		{"linear(1s, 1s)", 13, `expected ",", found ")"`},
		{"linear(1s, -1s, 1m)", 0, `linear step -1s is negative, want >= 0`},
		{"decorrelated(1s, 1ms)", 0, `cap 1ms is below base 1s`},
		{"jitter()", 7, `expected a policy name`},
		{"jitter(fixed(1s)", 16, `expected ")", found end of input`},
		{"jitter(expo(1s))", 7, `found "expo"`},
		{"jitter(exponential(2s, 1s))", 7, `cap 1s is below base 2s`},
		{"proportional(fixed(1s))", 13, `expected a fraction in (0, 1], found "fixed"`},
		{"proportional(1.5, fixed(1s))", 13, `expected a fraction in (0, 1], found "1.5"`},
		{"proportional(0, fixed(1s))", 13, `expected a fraction in (0, 1], found "0"`},
		{"proportional(NaN, fixed(1s))", 13, `expected a fraction in (0, 1], found "NaN"`},
		{"proportional(0.2 fixed(1s))", 17, `expected ",", found "fixed"`},
		{"proportional(0.2, )", 18, `expected a policy name`},
		{deep, 7 * 32, `policies nest more than 32 deep, want at most 32`},
	}
	for _, tt := range tests {
		p, err := backoff.Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error", tt.in, p)
			continue
		}
		var se *backoff.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) error %T is not a *SyntaxError", tt.in, err)
			continue
		}
		if se.Input != tt.in || se.Offset != tt.offset || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("Parse(%q) = offset %d, %q; want offset %d, %q", tt.in, se.Offset, se.Msg, tt.offset, tt.msg)
		}
		if !strings.HasPrefix(err.Error(), "backoff: parse ") || !strings.Contains(err.Error(), "at offset ") {
			t.Errorf("Parse(%q) error %q does not name the input and offset", tt.in, err)
		}
	}
}

// TestRoundTrip: parse(print(p)) == p for random policy trees, and the text
// form is a fixed point.
func TestRoundTrip(t *testing.T) {
	r := newRand(15, 16)
	for range 5000 {
		p := randPolicy(r, 4)
		s := p.String()
		q, err := backoff.Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if q != p {
			t.Fatalf("Parse(%q) = %#v, want %#v", s, q, p)
		}
		if q.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, q.String())
		}
	}
}

type config struct {
	Retry backoff.Spec `json:"retry"`
	Next  backoff.Spec `json:"next,omitzero"`
}

func TestSpecJSON(t *testing.T) {
	in := `{"retry":"jitter(exponential(100ms, 10s))"}`
	var c config
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	want := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))))
	if c.Retry.Policy != backoff.Policy(want) {
		t.Fatalf("unmarshalled %v, want %v", c.Retry.Policy, want)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("Marshal = %s, want %s", out, in)
	}
	// A bad policy in JSON fails with the parse error, offset and all.
	err = json.Unmarshal([]byte(`{"retry":"exponential(1s, 1ms)"}`), &c)
	var se *backoff.SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "cap 1ms is below base 1s") {
		t.Errorf("bad JSON policy gave %v", err)
	}
	if err := json.Unmarshal([]byte(`{"retry":""}`), &c); err == nil {
		t.Error(`"" unmarshalled into a Spec; it names no policy`)
	}
}

func TestSpecFlag(t *testing.T) {
	def := backoff.Must(backoff.Exponential(time.Second, time.Minute))
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	spec := backoff.Spec{Policy: def}
	fs.Var(&spec, "retry", "retry policy")
	if err := fs.Parse([]string{"-retry", "proportional(0.2, exponential(1s, 1m))"}); err != nil {
		t.Fatal(err)
	}
	if got, want := spec.String(), "proportional(0.2, exponential(1s, 1m))"; got != want {
		t.Errorf("flag set %q, want %q", got, want)
	}
	if g, ok := fs.Lookup("retry").Value.(flag.Getter); !ok || g.Get() != spec.Policy {
		t.Error("Spec is not a flag.Getter returning its policy")
	}
	err := fs.Parse([]string{"-retry", "exponential(1m, 1s)"})
	if err == nil || !strings.Contains(err.Error(), "cap 1s is below base 1m") {
		t.Errorf("bad flag value gave %v", err)
	}
	if err := fs.Parse([]string{"-retry", ""}); err == nil {
		t.Error("an empty flag value was accepted")
	}
	// Spec is itself a Policy.
	if d := backoff.Delay(spec, 3, backoff.Source{}); d < 3200*time.Millisecond || d > 4800*time.Millisecond {
		t.Errorf("Spec delay %v, want within [3.2s, 4.8s]", d)
	}
	if spec.Max() != time.Minute {
		t.Errorf("Spec.Max() = %v", spec.Max())
	}
	var zero backoff.Spec
	if zero.String() != "" || zero.Max() != 0 || zero.Delay(1, backoff.Source{}) != 0 {
		t.Error("the zero Spec is not empty")
	}
	if b, err := zero.MarshalText(); err != nil || len(b) != 0 {
		t.Errorf("zero Spec marshals to %q, %v", b, err)
	}
}

// TestTextMarshalers: every policy type is a TextMarshaler and its pointer a
// TextUnmarshaler that accepts its own text and refuses another type's.
func TestTextMarshalers(t *testing.T) {
	exp := backoff.Must(backoff.Exponential(time.Second, time.Minute))
	fixed := backoff.Must(backoff.Fixed(time.Second))
	tests := []struct {
		p   encoding.TextMarshaler
		dst encoding.TextUnmarshaler
	}{
		{fixed, new(backoff.FixedPolicy)},
		{exp, new(backoff.ExponentialPolicy)},
		{backoff.Must(backoff.Linear(time.Second, time.Second, time.Minute)), new(backoff.LinearPolicy)},
		{backoff.Must(backoff.Decorrelated(time.Second, time.Minute)), new(backoff.DecorrelatedPolicy)},
		{backoff.Must(backoff.Jitter(exp)), new(backoff.FullJitterPolicy)},
		{backoff.Must(backoff.EqualJitter(exp)), new(backoff.EqualJitterPolicy)},
		{backoff.Must(backoff.Proportional(0.25, exp)), new(backoff.ProportionalPolicy)},
		{backoff.Spec{Policy: exp}, new(backoff.Spec)},
	}
	for _, tt := range tests {
		b, err := tt.p.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		if err := tt.dst.UnmarshalText(b); err != nil {
			t.Errorf("%T.UnmarshalText(%q): %v", tt.dst, b, err)
			continue
		}
		if got := tt.dst.(backoff.Policy).String(); got != string(b) {
			t.Errorf("%T round trip: %q, want %q", tt.dst, got, b)
		}
		if _, isSpec := tt.dst.(*backoff.Spec); isSpec {
			continue
		}
		// Text of another policy type is refused with both types named.
		other := "fixed(1s)"
		if _, isFixed := tt.dst.(*backoff.FixedPolicy); isFixed {
			other = "exponential(1s, 1m)"
		}
		err = tt.dst.UnmarshalText([]byte(other))
		if err == nil || !strings.Contains(err.Error(), "want a backoff.") {
			t.Errorf("%T.UnmarshalText(%q) = %v, want a type error", tt.dst, other, err)
		}
	}
	// Each policy type works as a JSON field of its own type.
	var c struct {
		P backoff.ExponentialPolicy `json:"p"`
	}
	if err := json.Unmarshal([]byte(`{"p":"exponential(2s, 1h)"}`), &c); err != nil || c.P.String() != "exponential(2s, 1h)" {
		t.Errorf("typed JSON field: %v, %v", c.P, err)
	}
}
