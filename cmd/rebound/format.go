package main

import (
	"errors"
	"strings"
	"time"
)

// fmtDur prints d to four significant digits in Go's duration syntax,
// without zero trailing units: 1.235s, 123.5ms, 2m3.5s, 1h, 1h30m.
// Unjittered schedules print exactly; jittered delays stay readable.
func fmtDur(d time.Duration) string {
	unit := time.Duration(1)
	for x := d; x >= 10000 || x <= -10000; x /= 10 {
		unit *= 10
	}
	return trimDur(d.Round(unit))
}

// trimDur prints d exactly, without zero trailing units: 1m rather than 1m0s.
func trimDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// timeFlag is a flag.Value holding an RFC 3339 time; unset, it means now.
type timeFlag struct {
	t   time.Time
	set bool
}

func (f *timeFlag) String() string {
	if f == nil || !f.set {
		return "now"
	}
	return f.t.Format(time.RFC3339Nano)
}

func (f *timeFlag) Set(s string) error {
	if s == "now" {
		*f = timeFlag{}
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return errBadTime
	}
	*f = timeFlag{t: t, set: true}
	return nil
}

var errBadTime = errors.New("want an RFC 3339 time such as 2025-06-01T12:00:00Z, or now")

// or returns the flag's time, or now when it is unset.
func (f *timeFlag) or(now func() time.Time) time.Time {
	if f.set {
		return f.t
	}
	return now()
}

// padLeft right-aligns s in a field of width runes.
func padLeft(s string, width int) string {
	if n := width - runeLen(s); n > 0 {
		return strings.Repeat(" ", n) + s
	}
	return s
}

// padRight left-aligns s in a field of width runes.
func padRight(s string, width int) string {
	if n := width - runeLen(s); n > 0 {
		return s + strings.Repeat(" ", n)
	}
	return s
}

func runeLen(s string) int { return len([]rune(s)) }
