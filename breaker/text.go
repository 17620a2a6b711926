package breaker

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/textscan"
)

// String returns b in its text form, the form [Parse] reads back:
//
//	breaker(failures=5, rate=50%, min=20, window=1m, cooldown=exponential(5s, 5m), probes=1, close=1, lease=1m, budget=budget(10%, 5/s, 20))
//
// A trip condition that is off is left out, and so is a zero budget.
func (b Breaker) String() string {
	var s strings.Builder
	s.WriteString("breaker(")
	sep := ""
	field := func(k, v string) {
		s.WriteString(sep + k + "=" + v)
		sep = ", "
	}
	if b.failures > 0 {
		field("failures", strconv.FormatInt(b.failures, 10))
	}
	if b.rate > 0 {
		field("rate", formatPercent(b.rate))
		field("min", strconv.FormatInt(b.minCalls, 10))
		field("window", formatMillis(b.bucket*Buckets))
	}
	cd := ""
	if b.cooldown != nil {
		cd = b.cooldown.String()
	}
	field("cooldown", cd)
	field("probes", strconv.FormatInt(b.probes, 10))
	field("close", strconv.FormatInt(b.successes, 10))
	field("lease", formatMillis(b.lease))
	if !b.budget.IsZero() {
		field("budget", b.budget.String())
	}
	s.WriteString(")")
	return s.String()
}

// String returns the budget in its text form, "budget(RATIO%, FLOOR/s,
// BURST)", such as "budget(10%, 5/s, 20)"; the zero Budget prints as
// "budget(none)".
func (b Budget) String() string {
	if b.IsZero() {
		return "budget(none)"
	}
	return "budget(" + formatPercent(b.ratio) + ", " + formatRate(b.floor) + ", " + strconv.FormatInt(b.burst/unit, 10) + ")"
}

// Parse reads a breaker in its text form, the form [Breaker.String]
// prints. Settings are NAME=VALUE pairs, in any order, each at most once:
//
//	failures=N          N failures in a row trip the breaker
//	rate=P%             P% of failed calls in the window trip it ...
//	min=N               ... once the window holds N calls
//	window=D            how far back the rate looks (at least 10ms)
//	cooldown=POLICY     the open breaker's cool-down, a backoff policy
//	                    asked with the number of consecutive trips
//	probes=N            probes let through at once when half-open (1)
//	close=N             probe successes that close the breaker (1)
//	lease=D             how long a probe may run before its slot is
//	                    given to another (1m)
//	budget=budget(...)  the retry budget, as ParseBudget reads it
//
// cooldown and a trip condition (failures, or rate with min and window)
// are required; the others default to the values in brackets. Durations
// use time.ParseDuration syntax, percentages have at most four decimals.
// Parse(b.String()) returns a Breaker equal to b. An error is a
// *[SyntaxError] that names the offset in s where the input went wrong and
// what was expected there.
func Parse(s string) (Breaker, error) {
	p := newParser(s)
	b, err := p.breaker()
	if err != nil {
		return Breaker{}, err
	}
	if err := p.end(); err != nil {
		return Breaker{}, err
	}
	return b, nil
}

// ParseBudget reads a budget in its text form, "budget(RATIO%, FLOOR/s,
// BURST)": each success earns RATIO% of a token (at most four decimals,
// up to 1000%), the floor earns FLOOR tokens a second (at most three
// decimals, 0.001/s to 1000000/s), and the budget holds at most BURST
// tokens. ParseBudget(b.String()) returns a Budget equal to b for every
// non-zero b.
func ParseBudget(s string) (Budget, error) {
	p := newParser(s)
	b, err := p.budget()
	if err != nil {
		return Budget{}, err
	}
	if err := p.end(); err != nil {
		return Budget{}, err
	}
	return b, nil
}

// SyntaxError is the error [Parse] and [ParseBudget] return for text that
// is not a breaker or a budget.
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
	return fmt.Sprintf("breaker: parse %q: at offset %d: %s", e.Input, e.Offset, e.Msg)
}

type parser struct{ textscan.Scanner }

// newParser returns a parser of s; a token ends at a bracket, a comma, an
// equals sign or a space.
func newParser(s string) parser { return parser{textscan.Scanner{Src: s, Delims: "(),="}} }

func (p *parser) end() error {
	if !p.AtEnd() {
		return p.errorf("end of input")
	}
	return nil
}

func (p *parser) errorf(expected string, args ...any) *SyntaxError {
	return &SyntaxError{Input: p.Src, Offset: p.Pos, Msg: p.Expected(expected, args...)}
}

// at returns an error at offset off saying msg.
func (p *parser) at(off int, msg string, args ...any) *SyntaxError {
	return &SyntaxError{Input: p.Src, Offset: off, Msg: fmt.Sprintf(msg, args...)}
}

func (p *parser) expect(c byte) error {
	if p.Accept(c) {
		return nil
	}
	return p.errorf("%q", string(c))
}

// keyword reads the name word and the "(" after it.
func (p *parser) keyword(word string) error {
	tok, at := p.Token()
	if tok != word {
		p.Pos = at
		return p.errorf("%q", word+"(")
	}
	return p.expect('(')
}

const breakerKeys = "failures, rate, min, window, cooldown, probes, close, lease or budget"

func (p *parser) breaker() (Breaker, error) {
	start := p.Pos
	if err := p.keyword("breaker"); err != nil {
		return Breaker{}, err
	}
	c := settings{}
	seen := map[string]bool{}
	var window time.Duration
	for first := true; ; first = false {
		if first && p.Peek(')') {
			break
		}
		key, at := p.Token()
		switch key {
		case "failures", "rate", "min", "window", "cooldown", "probes", "close", "lease", "budget":
		default:
			p.Pos = at
			return Breaker{}, p.errorf("a setting (%s)", breakerKeys)
		}
		if seen[key] {
			return Breaker{}, p.at(at, "%s is set twice, want each setting at most once", key)
		}
		seen[key] = true
		if err := p.expect('='); err != nil {
			return Breaker{}, err
		}
		var err error
		switch key {
		case "failures":
			c.failures, err = p.count(1)
		case "min":
			c.minCalls, err = p.count(1)
		case "probes":
			c.probes, err = p.count(1)
		case "close":
			c.successes, err = p.count(1)
		case "rate":
			var ppm int64
			ppm, err = p.percent(1, 1_000_000, "a failure rate in (0%, 100%] such as 50%")
			c.rate = float64(ppm) / 1e6
		case "window":
			window, err = p.duration(MinWindow)
			c.window = window
		case "lease":
			c.lease, err = p.duration(time.Millisecond)
		case "cooldown":
			c.cooldown, err = p.policy()
		case "budget":
			c.budget, err = p.budget()
		}
		if err != nil {
			return Breaker{}, err
		}
		if p.Accept(',') {
			continue
		}
		break
	}
	if err := p.expect(')'); err != nil {
		return Breaker{}, err
	}
	b, err := build(c)
	if err != nil {
		// Settings each well formed, but not a breaker together.
		return Breaker{}, p.at(start, "%s", strings.TrimPrefix(err.Error(), "breaker: "))
	}
	return b, nil
}

func (p *parser) budget() (Budget, error) {
	start := p.Pos
	if err := p.keyword("budget"); err != nil {
		return Budget{}, err
	}
	ratio, err := p.percent(0, MaxRatio*unit, "the share of a token one success earns, 0% to 1000%, such as 10%")
	if err != nil {
		return Budget{}, err
	}
	if err := p.expect(','); err != nil {
		return Budget{}, err
	}
	floor, err := p.rate()
	if err != nil {
		return Budget{}, err
	}
	if err := p.expect(','); err != nil {
		return Budget{}, err
	}
	burst, err := p.count(1)
	if err != nil {
		return Budget{}, err
	}
	if err := p.expect(')'); err != nil {
		return Budget{}, err
	}
	b, err := newBudget(ratio, floor, burst)
	if err != nil {
		return Budget{}, p.at(start, "%s", strings.TrimPrefix(err.Error(), "breaker: "))
	}
	return b, nil
}

// count reads a whole number of at least lo, up to the largest int64 on
// every GOARCH.
func (p *parser) count(lo int64) (int64, error) {
	tok, at := p.Token()
	n, err := strconv.ParseInt(tok, 10, 64)
	if err != nil || n < lo || tok[0] == '+' {
		p.Pos = at
		return 0, p.errorf("a whole number >= %d", lo)
	}
	return n, nil
}

// percent reads "D%" with at most four decimals, as parts per million,
// within [lo, hi].
func (p *parser) percent(lo, hi int64, what string) (int64, error) {
	tok, at := p.Token()
	v, ok := parseFixed(strings.TrimSuffix(tok, "%"), 4)
	if !ok || !strings.HasSuffix(tok, "%") || v < lo || v > hi {
		p.Pos = at
		return 0, p.errorf("%s (at most four decimals)", what)
	}
	return v, nil
}

// rate reads "D/s" with at most three decimals, in thousandths.
func (p *parser) rate() (int64, error) {
	tok, at := p.Token()
	num, ok := strings.CutSuffix(tok, "/s")
	v, vok := parseFixed(num, 3)
	if !ok || !vok || v < 1 || v > MaxFloor*1000 {
		p.Pos = at
		return 0, p.errorf("a floor rate such as 5/s, 0.001/s to 1000000/s (at most three decimals)")
	}
	return v, nil
}

// duration reads a time.ParseDuration duration of at least lo.
func (p *parser) duration(lo time.Duration) (time.Duration, error) {
	tok, at := p.Token()
	d, err := time.ParseDuration(tok)
	if err != nil || d < lo {
		p.Pos = at
		return 0, p.errorf("a duration of at least %s, such as 30s", formatDuration(lo))
	}
	return d, nil
}

// policy reads a backoff policy: the text up to the comma or bracket that
// closes it, parsed by backoff.Parse.
func (p *parser) policy() (backoff.Policy, error) {
	text, start := p.Nested()
	if strings.TrimSpace(text) == "" {
		return nil, p.errorf("a cooldown policy such as exponential(5s, 5m)")
	}
	pol, err := backoff.Parse(text)
	if err != nil {
		if se, ok := err.(*backoff.SyntaxError); ok {
			return nil, p.at(start+se.Offset, "cooldown: %s", se.Msg)
		}
		return nil, p.at(start, "cooldown: %v", err)
	}
	return pol, nil
}

// parseFixed reads a non-negative decimal with at most frac decimals as a
// whole number of 10^-frac units.
func parseFixed(s string, frac int) (int64, bool) {
	whole, dec, hasDot := strings.Cut(s, ".")
	if whole == "" || len(whole) > 12 || len(dec) > frac || hasDot && dec == "" {
		return 0, false
	}
	var v int64
	for _, part := range []string{whole, dec} {
		for i := 0; i < len(part); i++ {
			c := part[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int64(c-'0')
		}
	}
	for range frac - len(dec) {
		v *= 10
	}
	return v, true
}

// formatFixed prints v units of 10^-frac with trailing zeros dropped.
func formatFixed(v int64, frac int) string {
	scale := int64(1)
	for range frac {
		scale *= 10
	}
	s := strconv.FormatInt(v/scale, 10)
	if r := v % scale; r != 0 {
		d := strconv.FormatInt(r+scale, 10)[1:]
		s += "." + strings.TrimRight(d, "0")
	}
	return s
}

// formatPercent prints parts per million as a percentage.
func formatPercent(ppm int64) string { return formatFixed(ppm, 4) + "%" }

// formatRate prints thousandths of a token a second as "D/s".
func formatRate(milli int64) string { return formatFixed(milli, 3) + "/s" }

// formatMillis prints a whole number of milliseconds as a duration.
func formatMillis(ms int64) string { return formatDuration(millisDuration(ms)) }

// formatDuration prints d in the largest unit that holds it exactly, so
// "1m" rather than "1m0s"; the result parses back to d.
func formatDuration(d time.Duration) string { return textscan.FormatDuration(d) }

// MarshalText returns b's text form.
func (b Breaker) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText parses a breaker into b, so a Breaker loads from JSON,
// YAML or an environment variable.
func (b *Breaker) UnmarshalText(text []byte) error {
	v, err := Parse(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalText returns b's text form.
func (b Budget) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText parses a budget into b.
func (b *Budget) UnmarshalText(text []byte) error {
	v, err := ParseBudget(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}
