package textscan

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestQuote: a token of up to MaxFound bytes is quoted whole; a longer one
// is cut at a character boundary and marked with its length.
func TestQuote(t *testing.T) {
	long := "5一二三四五六七八九十" // 31 bytes; byte 24 is inside 八
	cases := []struct{ tok, want string }{
		{"fixed", `"fixed"`},
		{"9223372036854775808", `"9223372036854775808"`},
		{long, `"5一二三四五六七"... (31 bytes)`},
		{strings.Repeat("9", 30), `"` + strings.Repeat("9", 24) + `"... (30 bytes)`},
		{"\xff\xfe" + strings.Repeat("a", 30), `"\xff\xfe` + strings.Repeat("a", 22) + `"... (32 bytes)`},
	}
	for _, c := range cases {
		got := Quote(c.tok)
		if got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.tok, got, c.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("Quote(%q) = %q, not valid UTF-8", c.tok, got)
		}
	}
}

// TestCheckMessage: the checker the fuzzers use refuses the messages the
// scanner used to print (a character cut in two, a long number cut with
// no mark) and accepts the ones it prints now.
func TestCheckMessage(t *testing.T) {
	in := "fixed(5一二三四五六七八九十)"
	bad := map[string]string{
		"cut character": `expected a duration such as 100ms, found "5一二三\xe5\x9b"`,
		"no mark":       `expected a duration such as 100ms, found "5一二三"`,
		"invalid":       "expected x, found \"5\xe5\"",
	}
	for name, msg := range bad {
		if err := CheckMessage(in, 6, msg); err == nil {
			t.Errorf("%s: CheckMessage(%q) = nil, want an error", name, msg)
		}
	}
	if err := CheckMessage("x 9223372036854775808", 2, `expected MaxAttempts, found "922337203685"`); err == nil {
		t.Error("a number cut with no mark passed")
	}
	s := Scanner{Src: in, Pos: 6, Delims: "(),"}
	if err := CheckMessage(in, 6, s.Expected("a duration")); err != nil {
		t.Error(err)
	}
	s = Scanner{Src: "x 9223372036854775808", Pos: 2, Delims: "(),"}
	if err := CheckMessage(s.Src, 2, s.Expected("MaxAttempts")); err != nil {
		t.Error(err)
	}
}

// FuzzQuote: whatever the token, the quote is valid UTF-8 and passes the
// checker the text forms' fuzzers use.
func FuzzQuote(f *testing.F) {
	f.Add("5一二三四五六七八九十", 0)
	f.Add(strings.Repeat("\xe5", 40), 3)
	f.Fuzz(func(t *testing.T, src string, pos int) {
		if pos < 0 || pos > len(src) {
			return
		}
		s := Scanner{Src: src, Pos: pos, Delims: "(),="}
		msg := s.Expected("something")
		if err := CheckMessage(src, pos, msg); err != nil {
			t.Fatal(err)
		}
	})
}
