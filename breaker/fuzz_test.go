package breaker_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/internal/textscan"
)

// FuzzParse: no input panics; a failure is a *SyntaxError whose offset
// lies inside the input; a success prints a text that parses back to an
// equal breaker whose text is the same.
func FuzzParse(f *testing.F) {
	for _, s := range append(breakers,
		"breaker(failures=5, cooldown=jitter(exponential(5s, 5m)), budget=budget(10%, 5/s, 20))",
		"breaker( failures = 1 , cooldown = fixed(1s) )", "breaker()", "breaker(failures=1,", "breaker(rate=50%)",
		"breaker(failures=1, failures=2, cooldown=fixed(1s))", "breaker(failures=1, cooldown=proportional(0.5, fixed(1s)), lease=1.5ms)",
		"breaker(failures=1, cooldown=fixed(1s), budget=budget(10.00001%, 5/s, 1))", "",
		"breaker(failures=5一二三四五六七八九十, cooldown=fixed(1s))", "breaker(failures=9223372036854775808, cooldown=fixed(1s))",
		"breaker(failures=1, cooldown=fixed(5一二三四五六七八九十))") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := breaker.Parse(s)
		if err != nil {
			checkSyntaxError(t, s, err)
			return
		}
		text := b.String()
		q, err := breaker.Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q) printed %q, which does not parse: %v", s, text, err)
		}
		if q != b {
			t.Fatalf("Parse(%q) = %#v, but its text %q parses to %#v", s, b, text, q)
		}
		if q.String() != text {
			t.Fatalf("text %q reprints as %q", text, q.String())
		}
		// Config holds counts in ints, which on GOARCH=386 saturate at the
		// largest int32; where the breaker's counts fit, it builds b again.
		if fits(text) {
			again, err := breaker.New(b.Config())
			if err != nil || again != b {
				t.Fatalf("New(%q.Config()) = %v, %v; want the same breaker", text, again, err)
			}
		}
	})
}

// fits reports whether every count in a breaker's text fits in an int.
func fits(text string) bool {
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r < '0' || r > '9' }) {
		if _, err := strconv.Atoi(f); err != nil {
			return false
		}
	}
	return true
}

// FuzzParseBudget is FuzzParse for budgets.
func FuzzParseBudget(f *testing.F) {
	for _, s := range []string{"budget(10%, 5/s, 20)", "budget(0%, 0.001/s, 1)", "budget(1000%, 1000000/s, 1000000000)",
		"budget(12.3456%, 2.125/s, 7)", "budget(10%, 0/s, 1)", "budget(10, 5/s, 1)", "budget(none)", "budget(1e1%, 5/s, 1)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := breaker.ParseBudget(s)
		if err != nil {
			checkSyntaxError(t, s, err)
			return
		}
		q, err := breaker.ParseBudget(b.String())
		if err != nil || q != b || q.String() != b.String() {
			t.Fatalf("ParseBudget(%q) = %v; its text parses to %v, %v", s, b, q, err)
		}
		again, err := breaker.NewBudget(b.Ratio(), b.Floor(), b.Burst())
		if err != nil || again != b {
			t.Fatalf("NewBudget of %v = %v, %v; want the same budget", b, again, err)
		}
	})
}

func checkSyntaxError(t *testing.T, s string, err error) {
	t.Helper()
	var se *breaker.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Parse(%q) error %T, want *SyntaxError", s, err)
	}
	if se.Offset < 0 || se.Offset > len(s) || se.Input != s || se.Msg == "" {
		t.Fatalf("Parse(%q): bad SyntaxError %+v", s, se)
	}
	// Valid UTF-8, and what it quotes as found is the token there, whole
	// or cut at a character boundary with the cut marked.
	if err := textscan.CheckMessage(s, se.Offset, se.Msg); err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	if !utf8.ValidString(err.Error()) {
		t.Fatalf("Parse(%q): error %q is not valid UTF-8", s, err)
	}
}

// FuzzCircuit drives a breaker through the events the fuzzer's bytes
// spell, at times they advance: nothing panics, every deferral names a
// later time, and the circuit's counters stay in range.
func FuzzCircuit(f *testing.F) {
	f.Add(0, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add(2, []byte{9, 9, 9, 0, 0, 0, 200, 3, 3, 3, 255})
	f.Add(4, []byte{1, 1, 1, 1, 128, 0, 0})
	f.Fuzz(func(t *testing.T, which int, ops []byte) {
		b := breaker.Must(breaker.Parse(breakers[uint(which)%uint(len(breakers))]))
		conf := b.Config()
		var c breaker.Circuit
		now := time0
		var out []breaker.Ticket
		for _, op := range ops {
			now = now.Add(time.Duration(op>>4) * time.Duration(op>>4) * 50 * time.Millisecond)
			switch op % 4 {
			case 0, 1:
				v := b.Allow(&c, now, breaker.Kind(op%2))
				if !v.Runs() && !v.Until.After(now) {
					t.Fatalf("%s until %v, not after %v", v.Decision, v.Until, now)
				}
				if v.Runs() {
					out = append(out, v.Ticket)
				}
			default:
				var tk breaker.Ticket
				if len(out) > 0 && op%8 != 2 {
					tk, out = out[0], out[1:]
				}
				b.Record(&c, "fuzz", now, tk, breaker.Outcome(1+int(op>>2)%3))
			}
			if c.Probes < 0 || c.Probes > int64(conf.Probes) || c.Trips < 0 || c.Failures < 0 || c.Budget.Units < 0 {
				t.Fatalf("circuit out of range: %+v", c)
			}
			if st := b.Status("fuzz", c, now); st.Tokens > float64(conf.Budget.Burst()) {
				t.Fatalf("status holds %v tokens, above the burst %d", st.Tokens, conf.Budget.Burst())
			}
		}
	})
}

// TestParseErrorQuotes: breaker's messages quote what they found as
// backoff's do, from the one scanner: a long token cut at a character
// boundary and marked, a number one past the largest int shown whole.
func TestParseErrorQuotes(t *testing.T) {
	for in, want := range map[string]string{
		"breaker(failures=5一二三四五六七八九十, cooldown=fixed(1s))":         `expected a whole number >= 1, found "5一二三四五六七"... (31 bytes)`,
		"breaker(failures=9223372036854775808, cooldown=fixed(1s))": `expected a whole number >= 1, found "9223372036854775808"`,
		"breaker(failures=1, cooldown=fixed(5一二三四五六七八九十))":          `cooldown: expected a duration such as 100ms, found "5一二三四五六七"... (31 bytes)`,
		"breaker(failures=1, cooldown=exponential(10s, 1s))":        `cooldown: cap 1s is below base 10s, want a cap of at least the base`,
	} {
		_, err := breaker.Parse(in)
		var se *breaker.SyntaxError
		if !errors.As(err, &se) || se.Msg != want {
			t.Errorf("Parse(%q) = %v, want the message %q", in, err, want)
			continue
		}
		checkSyntaxError(t, in, err)
	}
}
