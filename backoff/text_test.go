package backoff_test

import (
	"encoding"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"os"
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
		// A long token is quoted up to a character boundary and marked as
		// cut, with its length; a message never splits a character.
		{"fixed(5一二三四五六七八九十)", 6, `expected a duration such as 100ms, found "5一二三四五六七"... (31 bytes)`},
		{"fixed(" + strings.Repeat("1", 40) + "s)", 6, `found "` + strings.Repeat("1", 24) + `"... (41 bytes)`},
		{"exponential(10s, 1s)", 0, `cap 1s is below base 10s, want a cap of at least the base`},
		{"linear(10s, 1s, 1s)", 0, `cap 1s is below base 10s, want a cap of at least the base`},
		{"decorrelated(10s, 1s)", 0, `cap 1s is below base 10s, want a cap of at least the base`},
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

func TestParseRuleValid(t *testing.T) {
	exp := backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))
	jit := backoff.Must(backoff.Jitter(exp))
	tests := []struct {
		in   string
		want backoff.Rule
		text string // canonical form, when it differs from in
	}{
		{"jitter(exponential(100ms, 10s)) x 5", backoff.Must(backoff.NewRule(jit, 5)), ""},
		{"exponential(100ms, 10s) x 1", backoff.Must(backoff.NewRule(exp, 1)), ""},
		{"exponential(100ms,10s)x5", backoff.Must(backoff.NewRule(exp, 5)), "exponential(100ms, 10s) x 5"},
		{"  jitter ( exponential(0.1s, 10s) )\tx\n25 ", backoff.Must(backoff.NewRule(jit, 25)), "jitter(exponential(100ms, 10s)) x 25"},
		{"exponential(100ms, 10s) x 007", backoff.Must(backoff.NewRule(exp, 7)), "exponential(100ms, 10s) x 7"},
		{"exponential(100ms, 10s) x +3", backoff.Must(backoff.NewRule(exp, 3)), "exponential(100ms, 10s) x 3"},
		{"fixed(0s) x 9223372036854775807", backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(0)), math.MaxInt)), ""},
	}
	for _, tt := range tests {
		got, err := backoff.ParseRule(tt.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseRule(%q) = %v, want %v", tt.in, got, tt.want)
		}
		text := tt.text
		if text == "" {
			text = tt.in
		}
		if got.String() != text {
			t.Errorf("ParseRule(%q).String() = %q, want %q", tt.in, got.String(), text)
		}
	}
}

// TestParseRuleErrors: like Parse, every error names the offset where the
// input went wrong and what was expected there.
func TestParseRuleErrors(t *testing.T) {
	tests := []struct {
		in     string
		offset int
		msg    string
	}{
		{"", 0, `expected a policy name (fixed, exponential, linear, decorrelated, jitter, equal or proportional), found end of input`},
		{"x 5", 0, `expected a policy name`},
		{"exponential(1s, 1m)", 19, `expected "x" and MaxAttempts, as in "exponential(1s, 1m) x 5", found end of input`},
		{"  exponential(1s, 1m)  ", 23, `as in "exponential(1s, 1m) x 5", found end of input`},
		{"exponential(1s, 1m) * 5", 20, `expected "x" and MaxAttempts, as in "exponential(1s, 1m) x 5", found "*"`},
		{"exponential(1s, 1m) X 5", 20, `found "X"`},
		{"exponential(1s, 1m) 5", 20, `found "5"`},
		{"exponential(1s, 1m) x", 21, `expected MaxAttempts, the number of runs from 1 to 9223372036854775807, found end of input`},
		{"exponential(1s, 1m) x five", 22, `expected MaxAttempts, the number of runs from 1 to 9223372036854775807, found "five"`},
		{"exponential(1s, 1m) x 5.0", 22, `found "5.0"`},
		{"exponential(1s, 1m) x 99999999999999999999", 22, `expected MaxAttempts, the number of runs from 1 to 9223372036854775807, found "99999999999999999999"`},
		// One past the largest int is shown whole, not cut to a count that
		// looks valid.
		{"x 9223372036854775808", 0, `expected a policy name`},
		{"fixed(1s) x 9223372036854775808", 12, `expected MaxAttempts, the number of runs from 1 to 9223372036854775807, found "9223372036854775808"`},
		{"fixed(1s) x " + strings.Repeat("9", 30), 12, `found "` + strings.Repeat("9", 24) + `"... (30 bytes)`},
		{"exponential(1s, 1m) x 0", 22, `MaxAttempts 0 is below 1, want the total number of runs (>= 1)`},
		{"exponential(1s, 1m) x -3", 22, `MaxAttempts -3 is below 1`},
		{"exponential(1s, 1m) x 5 x 6", 24, `expected end of input, found "x"`},
		{"exponential(1s, 1m) x 5)", 23, `expected end of input, found ")"`},
		{"exponential(1m, 1s) x 5", 0, `cap 1s is below base 1m`},
		{"jitter(exponential(1s 1m)) x 5", 22, `expected ",", found "1m"`},
	}
	for _, tt := range tests {
		r, err := backoff.ParseRule(tt.in)
		if err == nil {
			t.Errorf("ParseRule(%q) = %v, want an error", tt.in, r)
			continue
		}
		var se *backoff.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("ParseRule(%q) error %T is not a *SyntaxError", tt.in, err)
			continue
		}
		if se.Input != tt.in || se.Offset != tt.offset || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("ParseRule(%q) = offset %d, %q; want offset %d, %q", tt.in, se.Offset, se.Msg, tt.offset, tt.msg)
		}
		if !strings.HasPrefix(err.Error(), "backoff: parse ") || !strings.Contains(err.Error(), "at offset ") {
			t.Errorf("ParseRule(%q) error %q does not name the input and offset", tt.in, err)
		}
		if r != (backoff.Rule{}) {
			t.Errorf("ParseRule(%q) returned %v beside its error", tt.in, r)
		}
	}
}

// TestRuleRoundTrip: ParseRule(r.String()) == r for random policy trees and
// attempt caps, and the text form is a fixed point.
func TestRuleRoundTrip(t *testing.T) {
	r := newRand(19, 20)
	for range 5000 {
		n := 1 + r.IntN(10)
		switch r.IntN(4) {
		case 0:
			n = math.MaxInt - r.IntN(3)
		case 1:
			n = 1 + r.IntN(math.MaxInt-1)
		}
		rule := backoff.Must(backoff.NewRule(randPolicy(r, 4), n))
		s := rule.String()
		got, err := backoff.ParseRule(s)
		if err != nil {
			t.Fatalf("ParseRule(%q): %v", s, err)
		}
		if got != rule {
			t.Fatalf("ParseRule(%q) = %#v, want %#v", s, got, rule)
		}
		if got.String() != s {
			t.Fatalf("ParseRule(%q).String() = %q", s, got.String())
		}
		b, err := rule.MarshalText()
		if err != nil || string(b) != s {
			t.Fatalf("%v.MarshalText() = %q, %v; want its String", rule, b, err)
		}
	}
}

type ruleConfig struct {
	Retry backoff.Rule `json:"retry"`
	Next  backoff.Rule `json:"next,omitzero"`
}

func TestRuleJSON(t *testing.T) {
	in := `{"retry":"jitter(exponential(100ms, 10s)) x 5"}`
	var c ruleConfig
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	p := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))))
	if want := backoff.Must(backoff.NewRule(p, 5)); c.Retry != want {
		t.Fatalf("unmarshalled %v, want %v", c.Retry, want)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("Marshal = %s, want %s", out, in)
	}
	// A bad rule fails with the parse error, offset and all, and leaves the
	// field as it was.
	before := c.Retry
	err = json.Unmarshal([]byte(`{"retry":"exponential(1s, 1m) x 0"}`), &c)
	var se *backoff.SyntaxError
	if !errors.As(err, &se) || se.Offset != 22 || !strings.Contains(se.Msg, "MaxAttempts 0 is below 1") {
		t.Errorf("bad JSON rule gave %v", err)
	}
	if c.Retry != before {
		t.Errorf("a failed unmarshal changed the rule to %v", c.Retry)
	}
	if err := json.Unmarshal([]byte(`{"retry":""}`), &c); err == nil {
		t.Error(`"" unmarshalled into a Rule; it names no rule`)
	}
	// The zero Rule marshals to "" (and omitzero leaves it out).
	if b, err := (backoff.Rule{}).MarshalText(); err != nil || len(b) != 0 {
		t.Errorf("zero Rule marshals to %q, %v", b, err)
	}
	if out, err := json.Marshal(ruleConfig{}); err != nil || string(out) != `{"retry":""}` {
		t.Errorf("zero config marshals to %s, %v", out, err)
	}
}

func TestRuleFlag(t *testing.T) {
	def := backoff.Must(backoff.NewRule(backoff.Must(backoff.Exponential(time.Second, time.Minute)), 3))
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rule := def
	fs.Var(&rule, "retry", "retry rule")
	if got := fs.Lookup("retry").DefValue; got != "exponential(1s, 1m) x 3" {
		t.Errorf("flag default %q, want the rule's text", got)
	}
	if err := fs.Parse([]string{"-retry", "proportional(0.2, exponential(1s, 1m)) x 8"}); err != nil {
		t.Fatal(err)
	}
	if got, want := rule.String(), "proportional(0.2, exponential(1s, 1m)) x 8"; got != want {
		t.Errorf("flag set %q, want %q", got, want)
	}
	if g, ok := fs.Lookup("retry").Value.(flag.Getter); !ok || g.Get() != any(rule) {
		t.Error("*Rule is not a flag.Getter returning its rule")
	}
	err := fs.Parse([]string{"-retry", "exponential(1s, 1m)"})
	if err == nil || !strings.Contains(err.Error(), `expected "x" and MaxAttempts`) {
		t.Errorf("a policy without a cap gave %v", err)
	}
	if rule.MaxAttempts() != 8 {
		t.Errorf("a failed Set changed the rule to %v", rule)
	}
	// A zero Rule as a flag: usage output must not fail on it.
	var zero backoff.Rule
	fs.Var(&zero, "other", "another rule")
	fs.PrintDefaults()
}

func TestRuleFromEnvironment(t *testing.T) {
	t.Setenv("RETRY_RULE", "equal(linear(1s, 1s, 10s)) x 4")
	var r backoff.Rule
	if err := r.UnmarshalText([]byte(os.Getenv("RETRY_RULE"))); err != nil {
		t.Fatal(err)
	}
	if r.String() != "equal(linear(1s, 1s, 10s)) x 4" || r.MaxAttempts() != 4 {
		t.Errorf("rule from the environment = %v", r)
	}
	if d := r.Decide(1, io.EOF, backoff.Key("job-1")); d.Outcome != backoff.OutcomeRetry || d.Delay < 500*time.Millisecond || d.Delay > time.Second {
		t.Errorf("its first decision = %+v, want a retry in [500ms, 1s]", d)
	}
}

// TestDeepPolicyRoundTrip: what the package prints it reads back. A
// wrapper refuses, with an error that says why, to nest policies deeper
// than Parse reads (32 levels), so every policy the API builds, however
// deep, prints a text that parses back to it; and a chain of wrappers is
// built up to exactly that depth, through Specs too.
func TestDeepPolicyRoundTrip(t *testing.T) {
	r := newRand(41, 42)
	wrap := func(kind int, p backoff.Policy) (backoff.Policy, error) {
		switch kind % 4 {
		case 0:
			return backoff.Jitter(p)
		case 1:
			return backoff.EqualJitter(p)
		case 2:
			return backoff.Proportional(0.25, p)
		default:
			return backoff.Jitter(backoff.Spec{Policy: p})
		}
	}
	for range 300 {
		p := randPolicy(r, 0)
		depth := 1
		for range 40 {
			q, err := wrap(r.IntN(4), p)
			if err != nil {
				if depth < 32 {
					t.Fatalf("wrapping %d levels refused: %v", depth, err)
				}
				if !strings.Contains(err.Error(), "want at most 31") {
					t.Fatalf("error %q does not say how deep a policy may be", err)
				}
				break
			}
			p, depth = q, depth+1
			if depth > 32 {
				t.Fatalf("a wrapper built a policy %d deep, more than Parse reads", depth)
			}
			text := p.String()
			back, err := backoff.Parse(text)
			if err != nil {
				t.Fatalf("a policy %d deep prints %q, which Parse refuses: %v", depth, text, err)
			}
			if back.String() != text {
				t.Fatalf("%q parses back as %q", text, back)
			}
			if _, err := backoff.ParseRule(text + " x 3"); err != nil {
				t.Fatalf("a rule of a policy %d deep does not parse: %v", depth, err)
			}
		}
		if depth != 32 {
			t.Fatalf("the chain stopped at %d levels, want 32", depth)
		}
	}
}
