package main

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// fmtDur prints d for reading: to four significant digits below a minute
// (1.235s, 123.5ms), to a tenth of a second below an hour, a second below a
// day, a minute below ten days and an hour beyond, without zero trailing
// units and with whole days as "d": 1h30m, 7d, 12d3h. Unjittered schedules
// of round durations print exactly.
func fmtDur(d time.Duration) string {
	const day = 24 * time.Hour
	if d < 0 {
		return "-" + fmtDur(-max(d, -maxDuration))
	}
	switch {
	case d < time.Minute:
		unit := time.Duration(1)
		for x := d; x >= 10000; x /= 10 {
			unit *= 10
		}
		d = d.Round(unit)
	case d < time.Hour:
		d = d.Round(100 * time.Millisecond)
	case d < day:
		d = d.Round(time.Second)
	case d < 10*day:
		d = d.Round(time.Minute)
	case d > maxDuration-time.Hour:
		d = d.Truncate(time.Hour) // rounding up would not fit
	default:
		d = d.Round(time.Hour)
	}
	if d < day {
		return trimDur(d)
	}
	s := strconv.FormatInt(int64(d/day), 10) + "d"
	if rest := d % day; rest > 0 {
		s += trimDur(rest)
	}
	return s
}

const maxDuration = time.Duration(1<<63 - 1)

// fmtSpan prints the time from a to b, b after a, like fmtDur does for a
// span of ten days or more, to the hour, but also for spans longer than
// the largest Duration.
func fmtSpan(a, b time.Time) string {
	secs := b.Unix() - a.Unix()
	if b.Nanosecond() < a.Nanosecond() {
		secs-- // borrow; the fraction of a second left cannot change the rounding
	}
	hours := secs / 3600
	if secs%3600 >= 1800 {
		hours++
	}
	s := strconv.FormatInt(hours/24, 10) + "d"
	if h := hours % 24; h > 0 {
		s += strconv.FormatInt(h, 10) + "h"
	}
	return s
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
