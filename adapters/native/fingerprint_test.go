package native

import (
	"strings"
	"testing"
	"time"
)

func TestFingerprint(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"connection refused", "connection refused"},
		{"dial tcp 10.0.0.7:6379: i/o timeout after 30s", "dial tcp <addr>: i/o timeout after <n>s"},
		{"dial tcp 192.168.1.20:5432: connect: connection refused", "dial tcp <addr>: connect: connection refused"},
		{"dial tcp [::1]:6379: connection refused", "dial tcp <addr>: connection refused"},
		{"dial tcp [fe80::1%eth0]:80: no route", "dial tcp <addr>: no route"},
		{"host 2001:db8::8a2e:370:7334 is down", "host <addr> is down"},
		{"upstream=10.1.2.3:8080, status 503", "upstream=<addr>, status <n>"},
		{"at 10:30:00 the lock expired", "at <n>:<n>:<n> the lock expired"},
		{"job 550e8400-e29b-41d4-a716-446655440000 not found", "job <id> not found"},
		{"job-550E8400-E29B-41D4-A716-446655440000: gone", "job-<id>: gone"},
		{"order 4f3c2a1b9e8d7c6b failed", "order <id> failed"},
		{"request id 01HXYZ3K9Q2M4N5P6R7S8T9V0W failed", "request id <id> failed"},
		{"charge ch_3MqL0e2eZvKYlo2C1abcdefg declined", "charge ch_<id> declined"},
		{"got 0x1f, want 0xFF", "got <n>, want <n>"},
		{"shard-12 of 64 is read-only", "shard-<n> of <n> is read-only"},
		{"took 12345678 ms", "took <n> ms"},
		{"deadbeef is not a number", "deadbeef is not a number"},
		{"http2: stream 7 reset", "http<n>: stream <n> reset"},
		{"latency 1.5s over 250ms budget", "latency <n>.<n>s over <n>ms budget"},
		{`user "bob" not found`, `user "<q>" not found`},
		{`key "a \"quoted\" 42" missing`, `key "<q>" missing`},
		{"column `email` is null", "column `<q>` is null"},
		{"can't open 'report-17.csv': denied", "can't open '<q>': denied"},
		{"it's the user's fault", "it's the user's fault"},
		{`unclosed "quote 12`, `unclosed "quote <n>`},
		{`a "b" c "d`, `a "<q>" c "d`},
		{"café 12 \xff\xfe 7", "café <n> \xff\xfe <n>"},
		{"version 1.2.3.4.5 is bad", "version <n>.<n>.<n>.<n>.<n> is bad"},
		{"panic: runtime error: index out of range [5] with length 3", "panic: runtime error: index out of range [<n>] with length <n>"},
	} {
		if got := Fingerprint(c.in); got != c.want {
			t.Errorf("Fingerprint(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestFingerprintBounded: a text past MaxFingerprintInput is read up to it
// only, and a long text takes time linear in what is read.
func TestFingerprintBounded(t *testing.T) {
	head := strings.Repeat("x", MaxFingerprintInput)
	if a, b := Fingerprint(head+"tail one 1"), Fingerprint(head+"another tail"); a != b || a != head {
		t.Errorf("texts that differ past %d bytes: fingerprints %q and %q, want both the first %d bytes", MaxFingerprintInput, a[len(a)-10:], b[len(b)-10:], MaxFingerprintInput)
	}
	// The worst inputs for a search for closing quotes: quotes never
	// closed, each of which could have scanned to the end.
	for _, worst := range []string{strings.Repeat(`"\`, MaxFingerprintInput), strings.Repeat("' a", MaxFingerprintInput), strings.Repeat("`", MaxFingerprintInput)} {
		start := time.Now()
		for range 100 {
			Fingerprint(worst)
		}
		if d := time.Since(start) / 100; d > 20*time.Millisecond {
			t.Errorf("Fingerprint of %q...: %v per call, want well under 20ms for %d bytes", worst[:6], d, MaxFingerprintInput)
		}
	}
}

func FuzzFingerprint(f *testing.F) {
	for _, s := range []string{"dial tcp 10.0.0.7:6379: i/o timeout", `user "bob" 12`, "job 550e8400-e29b-41d4-a716-446655440000", "[::1]:80", "can't 'x'", "0x1f", "\xff1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fp := Fingerprint(s)
		if strings.ContainsAny(fp, "0123456789") {
			t.Fatalf("Fingerprint(%q) = %q holds a digit, want every digit folded", s, fp)
		}
		if len(fp) > 3*min(len(s), MaxFingerprintInput) {
			t.Fatalf("Fingerprint(%q) is %d bytes, want at most 3 times the %d read", s, len(fp), min(len(s), MaxFingerprintInput))
		}
		// Other digits in the same places fold to the same fingerprint
		// (a zero stays a zero: 0x numbers start with one).
		other := []byte(s)
		for i, c := range other {
			if c >= '1' && c <= '9' {
				other[i] = '1' + (c-'1'+4)%9
			}
		}
		if o := Fingerprint(string(other)); o != fp {
			t.Fatalf("Fingerprint(%q) = %q, but Fingerprint(%q) = %q: other digits in the same places should fold alike", s, fp, other, o)
		}
	})
}
