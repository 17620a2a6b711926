// Package textscan is the scanner under the text forms of package backoff
// (policies and rules) and package breaker (breakers and budgets): tokens
// between delimiters, optional spaces, and the "expected X, found Y" of an
// error message, written once so that both forms read and report alike.
//
// It imports the standard library only, since package backoff, which must
// stay standard-library only, is built on it.
package textscan

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxFound is the most bytes of the input an error message quotes as what
// it found. A longer token is cut at a character boundary at or below it,
// and the message says so.
const MaxFound = 24

// Scanner reads a text form from left to right. Delims are the bytes that
// end a token besides spaces (space, tab, carriage return, newline).
type Scanner struct {
	// Src is the text being read.
	Src string
	// Pos is the byte offset of the next byte to read.
	Pos int
	// Delims are the bytes that end a token, besides spaces.
	Delims string
}

// isSpace reports whether c is one of the spaces a text form allows
// between its tokens.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// ends reports whether c ends a token.
func (s *Scanner) ends(c byte) bool { return isSpace(c) || strings.IndexByte(s.Delims, c) >= 0 }

// Space skips spaces.
func (s *Scanner) Space() {
	for s.Pos < len(s.Src) && isSpace(s.Src[s.Pos]) {
		s.Pos++
	}
}

// AtEnd skips spaces and reports whether the input is used up.
func (s *Scanner) AtEnd() bool {
	s.Space()
	return s.Pos >= len(s.Src)
}

// Peek skips spaces and reports whether the next byte is c, without
// reading it.
func (s *Scanner) Peek(c byte) bool {
	s.Space()
	return s.Pos < len(s.Src) && s.Src[s.Pos] == c
}

// Accept skips spaces and reads c if it is next, reporting whether it was.
func (s *Scanner) Accept(c byte) bool {
	if s.Peek(c) {
		s.Pos++
		return true
	}
	return false
}

// Token skips spaces and reads the run of bytes up to the next delimiter
// or space; it returns the run (empty at a delimiter or the end) and the
// offset where it starts.
func (s *Scanner) Token() (string, int) {
	s.Space()
	start := s.Pos
	for s.Pos < len(s.Src) && !s.ends(s.Src[s.Pos]) {
		s.Pos++
	}
	return s.Src[start:s.Pos], start
}

// Nested skips spaces and reads the text up to the next comma or closing
// bracket that stands outside brackets, or to the end: a nested form
// (such as a backoff policy inside a breaker) for its own parser. It
// returns the text and the offset where it starts.
func (s *Scanner) Nested() (string, int) {
	s.Space()
	start, depth := s.Pos, 0
	for ; s.Pos < len(s.Src); s.Pos++ {
		switch s.Src[s.Pos] {
		case '(':
			depth++
			continue
		case ')', ',':
			if depth > 0 {
				if s.Src[s.Pos] == ')' {
					depth--
				}
				continue
			}
		default:
			continue
		}
		break
	}
	return s.Src[start:s.Pos], start
}

// Found describes what stands at the current offset, for the "found" half
// of an error message: "end of input", or the token there (at least one
// byte, a delimiter standing alone) quoted by [Quote].
func (s *Scanner) Found() string {
	if s.Pos >= len(s.Src) {
		return "end of input"
	}
	end := s.Pos + 1
	if !s.ends(s.Src[s.Pos]) {
		for end < len(s.Src) && !s.ends(s.Src[end]) {
			end++
		}
	}
	return Quote(s.Src[s.Pos:end])
}

// Expected returns the message "expected WHAT, found ..." for the current
// offset, WHAT being format filled with args.
func (s *Scanner) Expected(format string, args ...any) string {
	return "expected " + fmt.Sprintf(format, args...) + ", found " + s.Found()
}

// Quote returns tok in Go quotes, as strconv.Quote does (so the result is
// valid UTF-8 whatever tok holds). A token longer than [MaxFound] bytes is
// cut first, never inside a UTF-8 character, and the cut is marked: the
// quoted prefix is followed by "... (N bytes)", N being the token's length.
func Quote(tok string) string {
	if len(tok) <= MaxFound {
		return strconv.Quote(tok)
	}
	cut := MaxFound
	// Step back to the start of the character the cut would split; a byte
	// that starts no character (invalid UTF-8) is cut before as it is.
	for i := cut; i > cut-utf8.UTFMax && i > 0; i-- {
		if utf8.RuneStart(tok[i]) {
			cut = i
			break
		}
	}
	return strconv.Quote(tok[:cut]) + "... (" + strconv.Itoa(len(tok)) + " bytes)"
}

// FormatDuration prints d in the largest unit that holds it exactly, so
// "1m" rather than "1m0s" and "1500ms" rather than "1.5s"; the result
// always parses back to d with time.ParseDuration.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	if d < 0 {
		if d == -d { // the most negative Duration has no positive twin
			return d.String()
		}
		return "-" + FormatDuration(-d)
	}
	units := [...]struct {
		size time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}}
	for _, u := range units {
		if d%u.size == 0 {
			return strconv.FormatInt(int64(d/u.size), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// CheckMessage says what is wrong with msg, an error message about input
// at offset, or returns nil: the message must be valid UTF-8, and what it
// quotes after "found " must be the token at offset, whole, or cut as
// [Quote] cuts it (at a character boundary, marked with its length). The
// fuzzers of both text forms hold every message to it.
func CheckMessage(input string, offset int, msg string) error {
	if !utf8.ValidString(msg) {
		return fmt.Errorf("message %q is not valid UTF-8", msg)
	}
	_, after, ok := strings.Cut(msg, ", found ")
	if !ok || !strings.HasPrefix(after, `"`) {
		return nil
	}
	quoted, err := strconv.QuotedPrefix(after)
	if err != nil {
		return fmt.Errorf("message %q: what it found is not quoted: %v", msg, err)
	}
	shown, _ := strconv.Unquote(quoted)
	if offset < 0 || offset > len(input) || !strings.HasPrefix(input[offset:], shown) {
		return fmt.Errorf("message %q quotes %q, which is not the input at offset %d", msg, shown, offset)
	}
	rest := after[len(quoted):]
	var n int
	if _, err := fmt.Sscanf(rest, "... (%d bytes)", &n); err == nil {
		if n <= len(shown) || offset+n > len(input) {
			return fmt.Errorf("message %q marks a cut token of %d bytes, but shows %d bytes of the input's %d from offset %d", msg, n, len(shown), len(input)-offset, offset)
		}
		if tok := input[offset : offset+n]; utf8.ValidString(tok) && !utf8.ValidString(shown) {
			return fmt.Errorf("message %q cuts a character of %q in two", msg, tok)
		}
		return nil
	}
	if len(shown) > MaxFound {
		return fmt.Errorf("message %q quotes %d bytes, more than %d", msg, len(shown), MaxFound)
	}
	// Unmarked, the quote must be the whole token: it ends where the input
	// does, or at a space or a delimiter of either form, or it is a
	// delimiter standing alone.
	end := offset + len(shown)
	lone := len(shown) == 1 && (isSpace(shown[0]) || strings.IndexByte(allDelims, shown[0]) >= 0)
	if end < len(input) && !lone && !isSpace(input[end]) && strings.IndexByte(allDelims, input[end]) < 0 {
		return fmt.Errorf("message %q quotes %q, a token cut at byte %d with no mark", msg, shown, end)
	}
	return nil
}

// allDelims are the delimiters of both text forms.
const allDelims = "(),="
