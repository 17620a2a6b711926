package ui

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Job text (IDs, names, errors) is written by whoever enqueued or ran the
// job, and rebound prints it to an operator's terminal and shows it on
// the page. A terminal acts on some of those bytes: ESC starts a sequence
// that can clear the screen, move the cursor or set the window title, and
// so can the C1 controls; a carriage return or a backspace overwrites
// what was printed; bidi controls reorder what follows, on a page too.
// Printable writes each such character as an escape instead, so the text
// reads as it is stored.

// Printable returns s with every character a terminal would act on, or
// that would not read as itself, written as a Go-style escape: control
// characters (C0, DEL, C1) as \xNN or \u0085, bidi and other format
// characters, line and paragraph separators and other non-graphic
// characters as \uNNNN, and each byte that is not UTF-8 as \xNN. A
// newline is kept when keepNewlines, else escaped too. Printable text,
// spaces included, is kept as it is.
func Printable(s string, keepNewlines bool) string {
	if printable(s, keepNewlines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case r == '\n' && keepNewlines, shownAsIs(r):
			b.WriteString(s[i : i+size])
		case r < 0x80:
			b.WriteString(`\x`)
			b.WriteString(hex2(byte(r)))
		case r <= 0xffff:
			b.WriteString(`\u`)
			b.WriteString(padHex(r, 4))
		default:
			b.WriteString(`\U`)
			b.WriteString(padHex(r, 8))
		}
		i += size
	}
	return b.String()
}

// printable reports whether Printable would return s unchanged.
func printable(s string, keepNewlines bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || !(shownAsIs(r) || r == '\n' && keepNewlines) {
			return false
		}
		i += size
	}
	return true
}

// shownAsIs reports whether a terminal shows r as itself: a graphic
// character (letters, marks, numbers, punctuation, symbols, spaces).
// Format characters (bidi controls among them), line and paragraph
// separators, control characters and unassigned code points are not.
func shownAsIs(r rune) bool {
	return unicode.IsGraphic(r)
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}

func padHex(r rune, width int) string {
	s := strconv.FormatInt(int64(r), 16)
	return strings.Repeat("0", max(0, width-len(s))) + s
}
