package main

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

const from = "2025-01-01T00:00:00Z"

func TestPlanUnjittered(t *testing.T) {
	out, errOut, code := rebound(t, "plan", "exponential(100ms, 2s)", "-n", "8", "-from", from)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `policy  exponential(100ms, 2s)  (max delay 2s)
from    2025-01-01T00:00:00Z

attempt  delay  total  fires at
      1  100ms  100ms  00:00:00.100  ██
      2  200ms  300ms  00:00:00.300  ████
      3  400ms  700ms  00:00:00.700  ████████
      4  800ms   1.5s  00:00:01.500  ████████████████
      5   1.6s   3.1s  00:00:03.100  ████████████████████████████████
      6     2s   5.1s  00:00:05.100  ████████████████████████████████████████
      7     2s   7.1s  00:00:07.100  ████████████████████████████████████████
      8     2s   9.1s  00:00:09.100  ████████████████████████████████████████

attempt n is the run that failed; its retry waits delay. total is the wait since
the first failure (run time not counted); fires at is from + total.
`
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// TestPlanKeyedJitter pins one job's keyed schedule: it is what every
// adapter computes for job "job-42", so a change here is a change of every
// deployed schedule.
func TestPlanKeyedJitter(t *testing.T) {
	args := []string{"plan", "jitter(exponential(100ms, 2s))", "-key", "job-42", "-from", from}
	out, errOut, code := rebound(t, args...)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden(t, "plan-keyed.golden", out)
	for _, row := range []string{
		"      1  55.41ms  55.41ms  00:00:00.055  █▏\n",
		"      7   1.971s   4.058s  00:00:04.058  ████████████████████████████████████████\n",
	} {
		if !strings.Contains(out, row) {
			t.Errorf("output lacks the row %q:\n%s", row, out)
		}
	}
	if !strings.Contains(out, `note: jitter keyed by job "job-42"`) {
		t.Errorf("no keyed footnote:\n%s", out)
	}
	// The table is backoff.Schedule for the key, nothing computed here.
	p := backoff.Must(backoff.Parse("jitter(exponential(100ms, 2s))"))
	rows := strings.Split(out, "\n")[5:15]
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, s := range backoff.Schedule(p, backoff.Key("job-42"), 10) {
		f := strings.Fields(rows[i])
		want := []string{strconv.Itoa(s.Attempt), fmtDur(s.Delay), fmtDur(s.Total), start.Add(s.Total).Round(time.Millisecond).Format("15:04:05.000")}
		if len(f) < 4 || !slices.Equal(f[:4], want) {
			t.Errorf("row %q, want %q", rows[i], want)
		}
	}
	if again, _, _ := rebound(t, args...); again != out {
		t.Error("a keyed plan differs between two runs")
	}
}

func TestPlanUnkeyedJitterSaysSo(t *testing.T) {
	out, _, code := rebound(t, "plan", "equal(linear(1s, 1s, 5s))", "-n", "5", "-from", from)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out, "note: jitter is drawn unkeyed") || !strings.Contains(out, "pass -key JOB_ID") {
		t.Errorf("no unkeyed footnote suggesting -key:\n%s", out)
	}
	// Equal jitter keeps at least half of the curve: 500ms..1s, 1s..2s, ...
	p := backoff.Must(backoff.Parse("linear(1s, 1s, 5s)"))
	lines := strings.Split(out, "\n")[4:9]
	for i, line := range lines {
		f := strings.Fields(line)
		d, err := time.ParseDuration(f[1])
		if err != nil {
			t.Fatalf("row %q: %v", line, err)
		}
		if hi := backoff.Delay(p, i+1, backoff.Source{}); d < hi/2-time.Millisecond || d > hi {
			t.Errorf("attempt %d: delay %s outside [%s, %s]", i+1, d, hi/2, hi)
		}
	}
}

func TestPlanKeyWithoutJitter(t *testing.T) {
	keyed, _, _ := rebound(t, "plan", "fixed(1s)", "-n", "3", "-from", from, "-key", "job-1")
	plain, _, _ := rebound(t, "plan", "fixed(1s)", "-n", "3", "-from", from)
	if !strings.Contains(keyed, "note: fixed(1s) has no jitter, so -key changes nothing") {
		t.Errorf("no footnote that -key changes nothing:\n%s", keyed)
	}
	if strings.Contains(plain, "note:") {
		t.Errorf("an unjittered, unkeyed plan has a note:\n%s", plain)
	}
}

func TestPlanFireTimesCrossMidnight(t *testing.T) {
	out, _, code := rebound(t, "plan", "exponential(1m, 1h)", "-n", "4", "-from", "2025-03-31T23:58:30+02:00", "-ascii", "-width", "8")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"from    2025-03-31T23:58:30+02:00\n",
		"      1     1m     1m  2025-03-31 23:59:30.000  #\n",
		"      2     2m     3m  2025-04-01 00:01:30.000  ##\n",
		"      4     8m    15m  2025-04-01 00:13:30.000  ########\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanFromDefaultsToNow(t *testing.T) {
	before := time.Now().Truncate(time.Millisecond)
	out, _, code := rebound(t, "plan", "fixed(1s)", "-n", "1")
	after := time.Now()
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	line := strings.Split(out, "\n")[1]
	got, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(line, "from    "))
	if err != nil {
		t.Fatalf("from line %q: %v", line, err)
	}
	if got.Before(before) || got.After(after) {
		t.Errorf("from = %s, want the time the command ran (%s..%s)", got, before, after)
	}
}

func TestPlanSaturatesFarFuture(t *testing.T) {
	// A week-long cap for a thousand attempts: totals run to years without
	// overflowing, and fire times carry the date.
	out, _, code := rebound(t, "plan", "exponential(1h, 168h)", "-n", "1000", "-from", from)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(out, "\n")
	last := strings.Fields(lines[len(lines)-5])
	if len(last) < 5 || last[0] != "1000" || last[1] != "7d" || last[2] != "6954d15h" || last[3] != "2044-01-16" {
		t.Errorf("last row %q, want attempt 1000 waiting 7d, 6954d15h in, firing on 2044-01-16", last)
	}
}

// Example_plan shows the schedule of an unjittered policy.
func Example_plan() {
	run([]string{"plan", "linear(500ms, 500ms, 2s)", "-n", "5", "-from", "2025-06-01T12:00:00Z", "-width", "20"}, os.Stdout, os.Stderr)
	// Output:
	// policy  linear(500ms, 500ms, 2s)  (max delay 2s)
	// from    2025-06-01T12:00:00Z
	//
	// attempt  delay  total  fires at
	//       1  500ms  500ms  12:00:00.500  █████
	//       2     1s   1.5s  12:00:01.500  ██████████
	//       3   1.5s     3s  12:00:03.000  ███████████████
	//       4     2s     5s  12:00:05.000  ████████████████████
	//       5     2s     7s  12:00:07.000  ████████████████████
	//
	// attempt n is the run that failed; its retry waits delay. total is the wait since
	// the first failure (run time not counted); fires at is from + total.
}

// TestPlanLongestDelays: delays near the largest Duration add up past what
// a Duration holds. The totals and fire times must keep growing, exactly
// as the delays add up, not stop at the largest Duration as if every later
// retry fired at the same instant.
func TestPlanLongestDelays(t *testing.T) {
	const most = "2562047h47m16.854775807s"
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	out, errOut, code := rebound(t, "plan", "fixed("+most+")", "-n", "3", "-from", "2025-06-01T12:00:00Z")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	layout := "2006-01-02 15:04:05.000"
	for _, row := range []string{
		"      1  106751d23h  106751d23h  " + start.Add(maxDuration).Round(time.Millisecond).Format(layout) + "  ",
		// 2 x 2562047h47m16.85s = 213503d23h34m33.7s, to the hour.
		"      2  106751d23h     213504d  " + start.Add(maxDuration).Add(maxDuration).Round(time.Millisecond).Format(layout) + "  ",
		// 3 x = 320255d23h21m50.6s.
		"      3  106751d23h  320255d23h  " + start.Add(maxDuration).Add(maxDuration).Add(maxDuration).Round(time.Millisecond).Format(layout) + "  ",
	} {
		if !strings.Contains(out, row) {
			t.Errorf("output lacks the row %q:\n%s", row, out)
		}
	}

	// Whatever the policy, the last fire time is from plus every delay.
	for _, policy := range []string{
		"linear(0s, " + most + ", " + most + ")",
		"exponential(1h, " + most + ")",
		"jitter(fixed(" + most + "))",
		"proportional(1, fixed(" + most + "))",
		"decorrelated(1h, " + most + ")",
	} {
		out, errOut, code := rebound(t, "plan", policy, "-n", "20", "-key", "job-1", "-from", "2025-06-01T12:00:00Z")
		if code != exitOK || errOut != "" {
			t.Fatalf("%s: exit %d, stderr %q", policy, code, errOut)
		}
		p := backoff.Must(backoff.Parse(policy))
		fire := start
		for a := 1; a <= 20; a++ {
			fire = fire.Add(backoff.Delay(p, a, backoff.Key("job-1")))
		}
		var last []string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == "20" {
				last = f
			}
		}
		if len(last) < 5 || last[3]+" "+last[4] != fire.Round(time.Millisecond).Format(layout) {
			t.Errorf("%s: last row %q, want attempt 20 firing at %s:\n%s", policy, last, fire.Round(time.Millisecond).Format(layout), out)
		}
	}
}
