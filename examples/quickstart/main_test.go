package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// table is the side-by-side table as printed: per job, the gap rows and the
// final states, in engine order.
type table struct {
	engines []string
	gaps    map[string][]gapRow // by job key
	final   map[string][]string // by job key
}

type gapRow struct {
	attempt int
	planned time.Duration
	cells   []string
}

var (
	cellSep = regexp.MustCompile(`\s{2,}`)
)

// parseTable reads the table run printed after the progress lines.
func parseTable(t *testing.T, out string) table {
	t.Helper()
	tb := table{gaps: map[string][]gapRow{}, final: map[string][]string{}}
	in := false
	for line := range strings.SplitSeq(out, "\n") {
		fields := cellSep.Split(strings.TrimSpace(line), -1)
		switch {
		case !in && len(fields) > 3 && fields[0] == "job" && fields[1] == "attempt" && fields[2] == "planned":
			in = true
			tb.engines = fields[3:]
		case in && line == "":
			return tb
		case in && len(fields) >= 2 && fields[1] == "final":
			tb.final[fields[0]] = fields[2:]
		case in:
			if len(fields) != 3+len(tb.engines) {
				t.Fatalf("table row %q: %d cells, want %d", line, len(fields), 3+len(tb.engines))
			}
			n, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatalf("table row %q: attempt: %v", line, err)
			}
			p, err := time.ParseDuration(fields[2])
			if err != nil {
				t.Fatalf("table row %q: planned: %v", line, err)
			}
			tb.gaps[fields[0]] = append(tb.gaps[fields[0]], gapRow{attempt: n, planned: p, cells: fields[3:]})
		}
	}
	if !in {
		t.Fatalf("no table in the output:\n%s", out)
	}
	return tb
}

// TestQuickstart runs the quickstart as a user would, on the embedded
// stores, and checks what its table says.
func TestQuickstart(t *testing.T) {
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, nil, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	out := stdout.String()
	t.Log("\n" + out)
	if stderr.Len() > 0 {
		t.Errorf("stderr is not empty:\n%s", &stderr)
	}
	checkTable(t, out, 5, []string{"asynq", "river", "native"})

	// The default policy, keyed by each job's key, is the planned column.
	policy := backoff.Must(backoff.Parse(defaultPolicy))
	tb := parseTable(t, out)
	for key, rows := range tb.gaps {
		for _, r := range rows {
			want := backoff.Delay(policy, r.attempt, backoff.Key(key)).Round(time.Millisecond)
			if r.planned != want {
				t.Errorf("%s attempt %d: planned %s, want %s", key, r.attempt, r.planned, want)
			}
		}
	}
}

// checkTable checks the outcome every quickstart run must show, whatever
// the backends: the flaky job completes on its third run, the failing job
// runs maxAttempts times and fails, the permanent one runs once; no gap is
// shorter than planned; every engine decided the planned delays.
func checkTable(t *testing.T, out string, maxAttempts int, engines []string) {
	t.Helper()
	tb := parseTable(t, out)
	if strings.Join(tb.engines, ",") != strings.Join(engines, ",") {
		t.Fatalf("engines %v, want %v", tb.engines, engines)
	}
	want := map[string][]string{
		"flaky":        {"completed, 3 runs", "completed, 3 runs", "completed, 3 runs"},
		"always-fails": {"archived, " + strconv.Itoa(maxAttempts) + " runs", "discarded, " + strconv.Itoa(maxAttempts) + " runs", "failed, " + strconv.Itoa(maxAttempts) + " runs"},
		"permanent":    {"archived, 1 run", "cancelled, 1 run", "failed, 1 run"},
	}
	for key, w := range want {
		if got := tb.final[key]; strings.Join(got, "|") != strings.Join(w, "|") {
			t.Errorf("%s final states %q, want %q", key, got, w)
		}
	}
	wantRows := map[string]int{"flaky": 2, "always-fails": maxAttempts - 1, "permanent": 0}
	for key, n := range wantRows {
		rows := tb.gaps[key]
		if len(rows) != n {
			t.Errorf("%s: %d retry rows, want %d", key, len(rows), n)
			continue
		}
		for i, r := range rows {
			if r.attempt != i+1 {
				t.Errorf("%s row %d: attempt %d, want %d", key, i, r.attempt, i+1)
			}
			for e, cell := range r.cells {
				gap, err := time.ParseDuration(cell)
				if err != nil {
					t.Errorf("%s attempt %d on %s: cell %q is not a plain gap: %v", key, r.attempt, tb.engines[e], cell, err)
					continue
				}
				if gap < r.planned {
					t.Errorf("%s attempt %d on %s: gap %s below the planned %s", key, r.attempt, tb.engines[e], gap, r.planned)
				}
			}
		}
	}
	if !strings.Contains(out, "every engine decided exactly the planned delay") {
		t.Errorf("the output does not say every engine decided the planned delays")
	}
	if strings.Contains(out, "EARLY") || strings.Contains(out, "\n! ") {
		t.Errorf("the output reports an early retry or a mismatched delay")
	}
	for _, e := range engines {
		if !strings.Contains(out, "* "+e) {
			t.Errorf("no footnote for %s", e)
		}
	}
}

// TestRaceExact checks the measured runs themselves, not their rounded
// display, with another policy and cap given as flags and asynq in precise
// mode.
func TestRaceExact(t *testing.T) {
	cfg, err := parseFlags([]string{"-policy", "equal(fixed(60ms))", "-attempts", "3", "-precise"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	rep, err := race(context.Background(), cfg, &progress, io.Discard)
	if err != nil {
		t.Fatalf("race: %v\n%s", err, &progress)
	}
	wantRuns := map[string]int{"flaky": 3, "always-fails": 3, "permanent": 1}
	wantState := map[string]map[string]string{
		"flaky":        {"asynq": "completed", "river": "completed", "native": "completed"},
		"always-fails": {"asynq": "archived", "river": "discarded", "native": "failed"},
		"permanent":    {"asynq": "archived", "river": "cancelled", "native": "failed"},
	}
	for _, j := range rep.jobs {
		if len(j.planned) != 2 {
			t.Fatalf("%s: %d planned delays, want 2", j.key, len(j.planned))
		}
		for _, e := range rep.engines {
			o := j.on[e]
			if o.state != wantState[j.key][e] {
				t.Errorf("%s on %s: ended %s, want %s", j.key, e, o.state, wantState[j.key][e])
			}
			if len(o.runs) != wantRuns[j.key] {
				t.Errorf("%s on %s: %d runs, want %d", j.key, e, len(o.runs), wantRuns[j.key])
				continue
			}
			for i, r := range o.runs {
				if r.attempt != i+1 {
					t.Errorf("%s on %s: run %d has attempt %d", j.key, e, i+1, r.attempt)
				}
			}
			for n := 1; n < len(o.runs); n++ {
				gap, _ := o.gap(n)
				planned := j.planned[n-1]
				if gap < planned {
					t.Errorf("%s on %s: retry after attempt %d came %s after the failure, before the planned %s", j.key, e, n, gap, planned)
				}
				if d := o.decisions[n]; d.Delay != planned || d.Outcome != backoff.OutcomeRetry {
					t.Errorf("%s on %s: attempt %d decided %v after %s, want retry after %s", j.key, e, n, d.Outcome, d.Delay, planned)
				}
			}
			last := o.decisions[len(o.runs)]
			switch j.key {
			case "always-fails":
				if last.Outcome != backoff.OutcomeExhausted {
					t.Errorf("%s on %s: last attempt decided %v, want exhausted", j.key, e, last.Outcome)
				}
			case "permanent":
				if last.Outcome != backoff.OutcomePermanent {
					t.Errorf("%s on %s: decided %v, want permanent", j.key, e, last.Outcome)
				}
			}
		}
		// Jitter is keyed by the job: the plan is the keyed schedule.
		for n, p := range j.planned {
			if want := backoff.Delay(cfg.rule.Policy(), n+1, backoff.Key(j.key)); p != want {
				t.Errorf("%s: planned %s after attempt %d, want %s", j.key, p, n+1, want)
			}
		}
	}
	// Every attempt was reported as it ended: 7 runs on each engine.
	if got := strings.Count(progress.String(), " attempt "); got != 3*7 {
		t.Errorf("%d progress lines, want %d:\n%s", got, 3*7, &progress)
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-policy", "exponential(100ms"}, "-policy"},
		{[]string{"-policy", "exponential(2s, 1s)"}, "cap"},
		{[]string{"-attempts", "0"}, "-attempts 0"},
		{[]string{"-timeout", "-1s"}, "-timeout"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var stderr bytes.Buffer
		err := run(context.Background(), tc.args, io.Discard, &stderr)
		if err == nil {
			t.Errorf("run %q: no error", tc.args)
			continue
		}
		if msg := err.Error() + stderr.String(); !strings.Contains(msg, tc.want) {
			t.Errorf("run %q: %q does not mention %q", tc.args, msg, tc.want)
		}
	}
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, io.Discard, &stderr); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
	for _, f := range []string{"-policy", "-attempts", "-redis", "-postgres", "-precise", "-namespace", "-timeout"} {
		if !strings.Contains(stderr.String(), f) {
			t.Errorf("-h does not document %s:\n%s", f, &stderr)
		}
	}
}

// TestTimeout checks that a policy too slow for -timeout ends with an error
// naming the flag and the jobs still waiting for their retries.
func TestTimeout(t *testing.T) {
	var stdout bytes.Buffer
	err := run(context.Background(), []string{"-policy", "fixed(1h)", "-timeout", "1s"}, &stdout, io.Discard)
	if err == nil {
		t.Fatalf("run: no error\n%s", &stdout)
	}
	for _, want := range []string{"-timeout 1s", "asynq/always-fails", "river/flaky", "native/flaky"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
