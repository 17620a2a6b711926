package main

import (
	"testing"
	"time"
)

func TestFmtDur(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{1, "1ns"},
		{999, "999ns"},
		{21_156_789, "21.16ms"},
		{100 * time.Millisecond, "100ms"},
		{1_234_567_891, "1.235s"},
		{59_999_999_999, "1m"},
		{2*time.Minute + 3456*time.Millisecond, "2m3.5s"},
		{time.Hour, "1h"},
		{time.Hour + 30*time.Minute, "1h30m"},
		{23*time.Hour + 59*time.Minute + 59*time.Second + 600*time.Millisecond, "1d"},
		{7 * 24 * time.Hour, "7d"},
		{3*24*time.Hour + 5*time.Hour + 7*time.Minute + 9*time.Second, "3d5h7m"},
		{12*24*time.Hour + 3*time.Hour + 40*time.Minute, "12d4h"},
		{-1500 * time.Millisecond, "-1.5s"},
		{maxDuration, "106751d23h"},
	}
	for _, tt := range tests {
		if got := fmtDur(tt.d); got != tt.want {
			t.Errorf("fmtDur(%d) = %q, want %q", int64(tt.d), got, tt.want)
		}
	}
}

func TestTimeFlag(t *testing.T) {
	var f timeFlag
	if f.String() != "now" {
		t.Errorf("unset String = %q, want now", f.String())
	}
	if err := f.Set("2025-06-01T12:00:00.5+02:00"); err != nil {
		t.Fatal(err)
	}
	if got := f.or(time.Now); !got.Equal(time.Date(2025, 6, 1, 10, 0, 0, 5e8, time.UTC)) {
		t.Errorf("or = %s", got)
	}
	if err := f.Set("now"); err != nil || f.set {
		t.Errorf("Set(now): err %v, set %v; want unset", err, f.set)
	}
	if err := f.Set("2025-06-01"); err == nil {
		t.Error("a date without a time was accepted")
	}
}
