package native

import "strings"

// MaxFingerprintInput is how much of an error's text [Fingerprint] reads:
// the first 1 KiB. Two errors that differ only past it share a
// fingerprint.
const MaxFingerprintInput = 1 << 10

// The placeholders [Fingerprint] folds values to.
const (
	// FoldNumber stands for a run of decimal digits, or a 0x number.
	FoldNumber = "<n>"
	// FoldID stands for an identifier: a UUID, or a run of letters and
	// digits mixing both that is at least 8 hex digits long or at least 16
	// long (hex IDs, base62 IDs, ULIDs, tokens).
	FoldID = "<id>"
	// FoldAddr stands for an IPv4 address, an IPv6 address (bracketed or
	// not), either with a port.
	FoldAddr = "<addr>"
	// FoldQuoted stands for what is between a pair of quotes: "...",
	// `...`, or '...' when the quote starts and ends a word (an
	// apostrophe, as in "can't", opens nothing). The quotes are kept.
	FoldQuoted = "<q>"
)

// Fingerprint returns the fingerprint of an error's text: the text with
// the values that change from one failure to the next folded to
// placeholders, so that failures of one cause share it ("dial tcp
// 10.0.0.7:6379: i/o timeout after 30s" and "dial tcp 10.0.0.9:6379: i/o
// timeout after 5s" both give "dial tcp <addr>: i/o timeout after <n>s").
// It reads at most the first [MaxFingerprintInput] bytes of text, once
// (its time is linear in that), and folds, in this order of precedence:
//
//   - quoted values to [FoldQuoted] between their quotes ("user \"bob\"
//     not found" gives "user \"<q>\" not found"; a backslash escapes a
//     quote within "..."); a quote that is never closed is kept as it is;
//   - a word (a run of letters, digits and '.', ':', '-', '_', '[', ']'
//     and '%') that is an IP address, with or without a port, to
//     [FoldAddr], one that is a UUID to [FoldID]; within other words, an
//     IPv4 address (with its port) and a UUID that stand apart from the
//     letters and digits around them likewise;
//   - within the rest of the word, each run of letters and digits that is
//     an identifier to [FoldID], a 0x number to [FoldNumber], and else each
//     run of decimal digits to [FoldNumber] ("shard-12" gives "shard-<n>",
//     "v2" gives "v<n>").
//
// Every other byte is kept as it is, invalid UTF-8 included. The empty
// text's fingerprint is "".
func Fingerprint(text string) string {
	if len(text) > MaxFingerprintInput {
		text = text[:MaxFingerprintInput]
	}
	var b strings.Builder
	b.Grow(len(text))
	// unclosed[c] records a quote c that found no closing quote: none
	// after it can find one either, so no quote of that kind is searched
	// again (which keeps the whole linear).
	var unclosed [3]bool
	for i := 0; i < len(text); {
		c := text[i]
		if k := quoteKind(c); k >= 0 && !unclosed[k] && (c != '\'' || i == 0 || !isAlnum(text[i-1])) {
			if end := closingQuote(text, i); end > 0 {
				b.WriteByte(c)
				b.WriteString(FoldQuoted)
				b.WriteByte(c)
				i = end + 1
				continue
			}
			unclosed[k] = true
		}
		if !isWordByte(c) {
			b.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(text) && isWordByte(text[j]) {
			j++
		}
		foldWord(&b, text[i:j])
		i = j
	}
	return b.String()
}

func quoteKind(c byte) int {
	switch c {
	case '"':
		return 0
	case '`':
		return 1
	case '\'':
		return 2
	}
	return -1
}

// closingQuote returns the index of the quote that closes the one at
// text[open], or -1. Within "..." a backslash escapes the next byte; a
// closing ' must end a word (not be followed by a letter or digit).
func closingQuote(text string, open int) int {
	q := text[open]
	for i := open + 1; i < len(text); i++ {
		switch {
		case q == '"' && text[i] == '\\':
			i++
		case text[i] == q && (q != '\'' || i+1 == len(text) || !isAlnum(text[i+1])):
			return i
		}
	}
	return -1
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isWordByte(c byte) bool {
	return isAlnum(c) || strings.IndexByte(".:-_[]%", c) >= 0
}

// foldWord writes word w folded. The word less the punctuation it ends
// with (a sentence's full stop, an error's "addr:") is an address or a
// UUID as a whole, or else its runs of letters and digits fold one by
// one.
func foldWord(b *strings.Builder, w string) {
	core := strings.TrimRight(w, ".:-_%")
	tail := w[len(core):]
	switch {
	case isAddr(core):
		b.WriteString(FoldAddr)
		b.WriteString(tail)
		return
	case isUUID(core):
		b.WriteString(FoldID)
		b.WriteString(tail)
		return
	}
	for i := 0; i < len(w); {
		if !isAlnum(w[i]) {
			b.WriteByte(w[i])
			i++
			continue
		}
		if (i == 0 || !isAlnum(w[i-1])) && i+36 <= len(w) && isUUID(w[i:i+36]) && (i+36 == len(w) || !isAlnum(w[i+36])) {
			b.WriteString(FoldID)
			i += 36
			continue
		}
		if end := ipv4At(w, i); end > 0 {
			b.WriteString(FoldAddr)
			i = end
			continue
		}
		j := i
		for j < len(w) && isAlnum(w[j]) {
			j++
		}
		foldRun(b, w[i:j])
		i = j
	}
}

// foldRun writes a run of letters and digits folded: an identifier to
// FoldID, a 0x number to FoldNumber, else each run of digits in it to
// FoldNumber.
func foldRun(b *strings.Builder, r string) {
	digits, letters, hex := 0, 0, true
	for i := 0; i < len(r); i++ {
		if isDigit(r[i]) {
			digits++
		} else {
			letters++
		}
		hex = hex && isHex(r[i])
	}
	switch {
	case digits > 0 && letters > 0 && (hex && len(r) >= 8 || len(r) >= 16):
		b.WriteString(FoldID)
		return
	case len(r) > 2 && r[0] == '0' && (r[1] == 'x' || r[1] == 'X') && allHex(r[2:]):
		b.WriteString(FoldNumber)
		return
	}
	for i := 0; i < len(r); {
		if !isDigit(r[i]) {
			b.WriteByte(r[i])
			i++
			continue
		}
		for i < len(r) && isDigit(r[i]) {
			i++
		}
		b.WriteString(FoldNumber)
	}
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return s != ""
}

// isUUID reports the 8-4-4-4-12 hex form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return false
			}
		} else if !isHex(s[i]) {
			return false
		}
	}
	return true
}

// isAddr reports an IPv4 or IPv6 address, bracketed or not, with or
// without a port (and an IPv6 zone).
func isAddr(s string) bool {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return false
		}
		rest := s[end+1:]
		return isIPv6(s[1:end]) && (rest == "" || rest[0] == ':' && isPort(rest[1:]))
	}
	if isIPv4(s) {
		return true
	}
	if c := strings.LastIndexByte(s, ':'); c >= 0 && isIPv4(s[:c]) && isPort(s[c+1:]) {
		return true
	}
	return isIPv6(s)
}

// ipv4At returns the end of the IPv4 address, with its port if one
// follows, that starts at w[i] and is not part of a longer run of digits
// and dots, or -1. It reads at most 21 bytes.
func ipv4At(w string, i int) int {
	if i > 0 && (isAlnum(w[i-1]) || w[i-1] == '.') {
		return -1
	}
	j := i
	for part := 0; part < 4; part++ {
		if part > 0 {
			if j >= len(w) || w[j] != '.' {
				return -1
			}
			j++
		}
		n := 0
		for j < len(w) && n < 4 && isDigit(w[j]) {
			j++
			n++
		}
		if n == 0 || n > 3 {
			return -1
		}
	}
	if j < len(w) && (isAlnum(w[j]) || w[j] == '.' && j+1 < len(w) && isDigit(w[j+1])) {
		return -1
	}
	if j+1 < len(w) && w[j] == ':' && isDigit(w[j+1]) {
		k := j + 1
		for k < len(w) && k-j <= 5 && isDigit(w[k]) {
			k++
		}
		if isPort(w[j+1:k]) && (k == len(w) || !isAlnum(w[k])) {
			j = k
		}
	}
	return j
}

func isPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// isIPv4 reports four dot-separated runs of one to three digits.
func isIPv4(s string) bool {
	parts := 0
	for len(s) > 0 {
		n := 0
		for n < len(s) && n < 4 && isDigit(s[n]) {
			n++
		}
		if n == 0 || n > 3 {
			return false
		}
		parts++
		s = s[n:]
		if s == "" {
			break
		}
		if s[0] != '.' {
			return false
		}
		s = s[1:]
		if s == "" {
			return false
		}
	}
	return parts == 4
}

// isIPv6 reports hex groups of at most four digits separated by colons,
// at least two colons, a hex digit somewhere, an optional IPv4 tail and
// an optional %zone.
func isIPv6(s string) bool {
	if z := strings.IndexByte(s, '%'); z >= 0 {
		s = s[:z]
	}
	colons, group, hexes := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ':':
			colons++
			group = 0
		case isHex(c):
			group++
			hexes++
			if group > 4 {
				return false
			}
		case c == '.':
			start := strings.LastIndexByte(s[:i], ':') + 1
			return (colons == 6 || strings.Contains(s, "::")) && isIPv4(s[start:])
		default:
			return false
		}
	}
	return (colons == 7 || strings.Contains(s, "::")) && hexes > 0
}
