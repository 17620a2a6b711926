package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/chart"
)

const maxPlanAttempts = 1000

func planHelp(fs *flag.FlagSet) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprint(w, `Usage: rebound plan POLICY [-n 10] [-key ID] [-from TIME] [-width 40] [-ascii]

plan tables the schedule one job follows under POLICY: for each failed
attempt, the delay before its retry, the total wait since the first failure,
and the time the retry fires, with a bar chart of the delays.

Jittered policies draw fresh randomness on every run unless -key names the
job: with -key, jitter is keyed by the job ID exactly as rebound's adapters
key it (backoff.Key), so the table is the schedule that job follows on asynq,
River or the native path.

Flags:
`)
		printFlags(w, fs)
		fmt.Fprint(w, "\n"+policyHelp)
	}
}

// planOptions are plan's flags.
type planOptions struct {
	n     int
	key   string
	from  timeFlag
	width int
	ascii bool
}

func planFlags() (*flag.FlagSet, *planOptions) {
	fs := newFlagSet("plan")
	o := new(planOptions)
	fs.IntVar(&o.n, "n", 10, "number of attempts to table, 1.."+strconv.Itoa(maxPlanAttempts))
	fs.StringVar(&o.key, "key", "", "job `ID` to key jitter by, as the adapters do (backoff.Key); empty draws unkeyed randomness")
	fs.Var(&o.from, "from", "`TIME` of the first failure, RFC 3339 (e.g. 2025-06-01T12:00:00Z) or now, the default; fire times count from it")
	fs.IntVar(&o.width, "width", 40, "width of the longest bar, in terminal cells")
	fs.BoolVar(&o.ascii, "ascii", false, "draw bars with '#' instead of Unicode blocks")
	return fs, o
}

func runPlan(args []string, stdout, stderr io.Writer) int {
	fs, o := planFlags()
	text, code, ok := parseCommandLine(fs, planHelp(fs), args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case o.n < 1 || o.n > maxPlanAttempts:
		return usageError(stderr, fs, "-n %d is out of range, want the number of attempts to table, 1..%d", o.n, maxPlanAttempts)
	case o.width < 1 || o.width > 500:
		return usageError(stderr, fs, "-width %d is out of range, want 1..500 cells", o.width)
	}
	p, ok := parsePolicy("plan", text, stderr)
	if !ok {
		return exitUsage
	}
	writePlan(stdout, plan{
		policy: p,
		key:    o.key,
		from:   o.from.or(func() time.Time { return time.Now().Truncate(time.Millisecond) }),
		n:      o.n,
		width:  o.width,
		ascii:  o.ascii,
	})
	return exitOK
}

type plan struct {
	policy backoff.Policy
	key    string // "" for an unkeyed Source
	from   time.Time
	n      int
	width  int
	ascii  bool
}

// planRows returns the schedule pl tables (pl.n at least 1) and its rows
// as plan prints them: attempt, delay, total and fire time. The ui command's
// page shows the same rows.
func planRows(pl plan) ([]backoff.Step, [][]string) {
	src := backoff.Source{}
	if pl.key != "" {
		src = backoff.Key(pl.key)
	}
	steps := backoff.Schedule(pl.policy, src, pl.n)

	// Fire times are added up as times, not from Schedule's totals: those
	// stop at the largest Duration (292 years), and delays near it add up
	// past that.
	fires := make([]time.Time, len(steps))
	fire := pl.from
	for i, s := range steps {
		fire = fire.Add(s.Delay)
		fires[i] = fire
	}

	// Fire times print as a time of day when they all fall on the first
	// failure's date, with the date otherwise.
	layout := "15:04:05.000"
	last := fire.Round(time.Millisecond)
	if y, m, d := last.Date(); y != pl.from.Year() || m != pl.from.Month() || d != pl.from.Day() {
		layout = "2006-01-02 15:04:05.000"
	}
	rows := make([][]string, len(steps))
	for i, s := range steps {
		total := fmtDur(s.Total)
		if !pl.from.Add(s.Total).Equal(fires[i]) { // Total saturated
			total = fmtSpan(pl.from, fires[i])
		}
		rows[i] = []string{strconv.Itoa(s.Attempt), fmtDur(s.Delay), total, fires[i].Round(time.Millisecond).Format(layout)}
	}
	return steps, rows
}

func writePlan(w io.Writer, pl plan) {
	steps, rows := planRows(pl)
	jittered := random(pl.policy)

	fmt.Fprintf(w, "policy  %s  (max delay %s)\n", pl.policy, fmtDur(pl.policy.Max()))
	if pl.key != "" {
		fmt.Fprintf(w, "key     %s\n", strconv.Quote(pl.key))
	}
	fmt.Fprintf(w, "from    %s\n\n", pl.from.Format(time.RFC3339Nano))

	header := []string{"attempt", "delay", "total", "fires at"}
	var longest time.Duration
	for _, s := range steps {
		longest = max(longest, s.Delay)
	}
	widths := make([]int, len(header))
	for c, h := range header {
		widths[c] = runeLen(h)
		for _, r := range rows {
			widths[c] = max(widths[c], runeLen(r[c]))
		}
	}
	cells := func(r []string) string {
		// Numbers right-aligned, the fire time left-aligned, two spaces apart.
		return padLeft(r[0], widths[0]) + "  " + padLeft(r[1], widths[1]) + "  " + padLeft(r[2], widths[2]) + "  " + padRight(r[3], widths[3])
	}
	fmt.Fprintln(w, strings.TrimRight(cells(header), " "))
	for i, r := range rows {
		bar := chart.Bar(float64(steps[i].Delay), float64(longest), pl.width, pl.ascii)
		fmt.Fprintln(w, strings.TrimRight(cells(r)+"  "+bar, " "))
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "attempt n is the run that failed; its retry waits delay. total is the wait since")
	fmt.Fprintln(w, "the first failure (run time not counted); fires at is from + total.")
	switch {
	case jittered && pl.key == "":
		fmt.Fprintln(w, "note: jitter is drawn unkeyed, so every run of this command prints different delays;")
		fmt.Fprintln(w, "      pass -key JOB_ID for the reproducible schedule that job follows on every adapter.")
	case jittered:
		fmt.Fprintf(w, "note: jitter keyed by job %s: the schedule this job follows on every adapter.\n", strconv.Quote(pl.key))
	case pl.key != "":
		fmt.Fprintf(w, "note: %s has no jitter, so -key changes nothing: every job follows this schedule.\n", pl.policy)
	}
}
