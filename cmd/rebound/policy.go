package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/rebound-go/rebound/backoff"
)

// parsePolicy parses text with backoff.Parse. On a syntax error it writes the
// message to stderr followed by the input with a caret under the offending
// position, and returns false.
func parsePolicy(cmd, text string, stderr io.Writer) (backoff.Policy, bool) {
	p, err := backoff.Parse(text)
	if err == nil {
		return p, true
	}
	var se *backoff.SyntaxError
	if !errors.As(err, &se) {
		fmt.Fprintf(stderr, "rebound %s: invalid policy: %v\n", cmd, err)
		return nil, false
	}
	fmt.Fprintf(stderr, "rebound %s: invalid policy at offset %d: %s\n", cmd, se.Offset, se.Msg)
	fmt.Fprint(stderr, caret(se.Input, se.Offset))
	fmt.Fprintf(stderr, "run 'rebound %s -h' for the policy syntax\n", cmd)
	return nil, false
}

// caret returns input on one line, indented, and a caret under byte offset
// off on the next. Line breaks and tabs in input print as spaces so the caret
// stays aligned; the column counts runes, not bytes.
func caret(input string, off int) string {
	off = min(max(off, 0), len(input))
	line := strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, input)
	col := utf8.RuneCountInString(input[:off])
	return "    " + line + "\n    " + strings.Repeat(" ", col) + "^\n"
}

// inner is implemented by the jitter wrappers of package backoff.
type inner interface{ Inner() backoff.Policy }

// unjitter removes p's outermost jitter wrappers: jitter(equal(exponential(
// 1s, 1m))) becomes exponential(1s, 1m). It reports whether it removed any.
func unjitter(p backoff.Policy) (backoff.Policy, bool) {
	removed := false
	for {
		switch w := p.(type) {
		case backoff.Spec:
			p = w.Policy
			continue
		case inner:
			p = w.Inner()
			removed = true
			continue
		}
		return p, removed
	}
}

// random reports whether p draws from its Source: a jitter wrapper or a
// decorrelated policy anywhere in it. Policies this command does not know
// count as random.
func random(p backoff.Policy) bool {
	switch w := p.(type) {
	case backoff.FixedPolicy, backoff.ExponentialPolicy, backoff.LinearPolicy:
		return false
	case backoff.Spec:
		return random(w.Policy)
	case nil:
		return false
	}
	return true
}
