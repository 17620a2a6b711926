package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rebound runs the command line args and returns its output and exit status.
func rebound(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestNoArguments(t *testing.T) {
	out, errOut, code := rebound(t)
	if code != exitUsage || out != "" {
		t.Errorf("code %d, stdout %q; want %d and nothing on stdout", code, out, exitUsage)
	}
	if !strings.Contains(errOut, "Commands:") || !strings.Contains(errOut, "plan") || !strings.Contains(errOut, "herd") {
		t.Errorf("stderr does not list the commands:\n%s", errOut)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		out, errOut, code := rebound(t, args...)
		if code != exitOK || errOut != "" {
			t.Errorf("%q: code %d, stderr %q; want 0 and nothing on stderr", args, code, errOut)
		}
		for _, want := range []string{"plan", "herd", "exponential(BASE, CAP)", "Exit status"} {
			if !strings.Contains(out, want) {
				t.Errorf("%q: help lacks %q:\n%s", args, want, out)
			}
		}
	}
	viaHelp, _, code := rebound(t, "help", "herd")
	direct, _, _ := rebound(t, "herd", "-h")
	if code != exitOK || viaHelp != direct {
		t.Errorf("rebound help herd (code %d) differs from rebound herd -h", code)
	}
}

func TestUnknownCommand(t *testing.T) {
	out, errOut, code := rebound(t, "plot", "fixed(1s)")
	if code != exitUsage || out != "" {
		t.Errorf("code %d, stdout %q; want %d and nothing on stdout", code, out, exitUsage)
	}
	want := "rebound: unknown command \"plot\"; known commands: plan, herd, ui, breaker, queue, help\n"
	if errOut != want {
		t.Errorf("stderr = %q, want %q", errOut, want)
	}
	_, errOut, code = rebound(t, "-n", "3")
	if code != exitUsage || !strings.Contains(errOut, "want a command first (plan, herd, ui, breaker, queue, help)") {
		t.Errorf("flag before command: code %d, stderr %q", code, errOut)
	}
}

// TestCommandHelpDocumentsEveryFlag checks that -h prints every flag the
// command defines, to stdout, with exit status 0.
func TestCommandHelpDocumentsEveryFlag(t *testing.T) {
	planFS, _ := planFlags()
	herdFS, _ := herdFlags()
	for _, fs := range []*flag.FlagSet{planFS, herdFS} {
		name := strings.TrimPrefix(fs.Name(), "rebound ")
		for _, h := range []string{"-h", "-help", "--help"} {
			out, errOut, code := rebound(t, name, h)
			if code != exitOK || errOut != "" {
				t.Errorf("%s %s: code %d, stderr %q; want 0 and nothing on stderr", name, h, code, errOut)
			}
			n := 0
			fs.VisitAll(func(f *flag.Flag) {
				n++
				if !strings.Contains(out, "  -"+f.Name+" ") && !strings.Contains(out, "  -"+f.Name+"\n") {
					t.Errorf("%s %s does not document -%s:\n%s", name, h, f.Name, out)
				}
				if _, usage := flag.UnquoteUsage(f); !strings.Contains(out, usage) {
					t.Errorf("%s %s lacks the usage of -%s", name, h, f.Name)
				}
			})
			if n < 5 {
				t.Errorf("%s defines %d flags, want at least 5", name, n)
			}
			if !strings.Contains(out, "Usage: rebound "+name+" POLICY") || !strings.Contains(out, "jitter(P)") {
				t.Errorf("%s %s lacks the synopsis or the policy syntax:\n%s", name, h, out)
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"plan"}, "rebound plan: missing POLICY"},
		{[]string{"plan", "exponential(100ms,", "2s)"}, `got 2 arguments ["exponential(100ms," "2s)"], want one POLICY (quote it`},
		{[]string{"plan", "fixed(1s)", "-n", "0"}, "rebound plan: -n 0 is out of range, want the number of attempts to table, 1..1000"},
		{[]string{"plan", "fixed(1s)", "-n", "1001"}, "-n 1001 is out of range"},
		{[]string{"plan", "fixed(1s)", "-n", "ten"}, `rebound plan: invalid value "ten" for flag -n`},
		{[]string{"plan", "fixed(1s)", "-from", "yesterday"}, `invalid value "yesterday" for flag -from: want an RFC 3339 time such as 2025-06-01T12:00:00Z, or now`},
		{[]string{"plan", "fixed(1s)", "-width", "0"}, "-width 0 is out of range, want 1..500 cells"},
		{[]string{"plan", "fixed(1s)", "-x"}, "rebound plan: flag provided but not defined: -x"},
		{[]string{"herd"}, "rebound herd: missing POLICY"},
		{[]string{"herd", "fixed(1s)", "-jobs", "0"}, "rebound herd: -jobs 0 is out of range, want 1..1000000 jobs"},
		{[]string{"herd", "fixed(1s)", "-attempt", "0"}, "rebound herd: -attempt 0 is below 1, want the 1-based number of the attempt that failed"},
		{[]string{"herd", "fixed(1s)", "-buckets", "201"}, "rebound herd: -buckets 201 is out of range, want 1..200"},
		{[]string{"herd", "fixed(1s)", "-buckets", "0"}, "-buckets 0 is out of range"},
		{[]string{"herd", "fixed(1s)", "-width", "501"}, "-width 501 is out of range"},
		{[]string{"herd", "fixed(1s)", "-jobs"}, "rebound herd: flag needs an argument: -jobs"},
		{[]string{"herd", "fixd(1s)"}, `rebound herd: invalid policy at offset 0: expected a policy name`},
	}
	for _, tt := range tests {
		out, errOut, code := rebound(t, tt.args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d", tt.args, code, exitUsage)
		}
		if out != "" {
			t.Errorf("%q: wrote to stdout: %q", tt.args, out)
		}
		if !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: stderr = %q, want it to contain %q", tt.args, errOut, tt.want)
		}
		if !strings.Contains(errOut, " -h' for") {
			t.Errorf("%q: stderr does not point at -h: %q", tt.args, errOut)
		}
	}
}

// TestBadPolicyPointsAtOffset checks the caret sits under the byte the
// parser stopped at, for syntax errors and for values a constructor refused.
func TestBadPolicyPointsAtOffset(t *testing.T) {
	tests := []struct {
		policy string
		col    int    // where the caret must be
		msg    string // the first line of stderr
	}{
		{
			"jitter(exponential(10x, 1s))", 19,
			`rebound plan: invalid policy at offset 19: expected a duration such as 100ms, found "10x"`,
		},
		{
			"exponential(2s, 1s)", 0,
			"rebound plan: invalid policy at offset 0: cap 1s is below base 2s, want a cap of at least the base",
		},
		{
			"jitter(exponential(100ms, 2s)", 29,
			`rebound plan: invalid policy at offset 29: expected ")", found end of input`,
		},
		{
			"equal(\texponential(1s,\t1m)) x", 28,
			`rebound plan: invalid policy at offset 28: expected end of input, found "x"`,
		},
		{
			"proportional(1.5, fixed(1s))", 13,
			`rebound plan: invalid policy at offset 13: expected a fraction in (0, 1], found "1.5"`,
		},
	}
	for _, tt := range tests {
		_, errOut, code := rebound(t, "plan", tt.policy)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d", tt.policy, code, exitUsage)
		}
		lines := strings.Split(errOut, "\n")
		if len(lines) < 3 {
			t.Fatalf("%q: stderr has %d lines, want message, input and caret:\n%s", tt.policy, len(lines), errOut)
		}
		if lines[0] != tt.msg {
			t.Errorf("%q: first line = %q, want %q", tt.policy, lines[0], tt.msg)
		}
		wantInput := "    " + strings.ReplaceAll(tt.policy, "\t", " ")
		wantCaret := "    " + strings.Repeat(" ", tt.col) + "^"
		if lines[1] != wantInput || lines[2] != wantCaret {
			t.Errorf("%q: got\n%s\n%s\nwant\n%s\n%s", tt.policy, lines[1], lines[2], wantInput, wantCaret)
		}
	}
}

func TestCaretCountsRunes(t *testing.T) {
	// "é" is two bytes: a caret at byte 8 sits under the 8th rune, column 7.
	if got, want := caret("fixed(é)x", 8), "    fixed(é)x\n           ^\n"; got != want {
		t.Errorf("caret = %q, want %q", got, want)
	}
	if got, want := caret("", 5), "    \n    ^\n"; got != want {
		t.Errorf("caret past the end = %q, want %q", got, want)
	}
}

func TestFlagsAroundPolicy(t *testing.T) {
	const from = "2025-01-01T00:00:00Z"
	want, _, code := rebound(t, "plan", "-n", "3", "-from", from, "linear(1s, 1s, 5s)")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, args := range [][]string{
		{"plan", "linear(1s, 1s, 5s)", "-n", "3", "-from", from},
		{"plan", "-n=3", "linear(1s, 1s, 5s)", "-from=" + from},
		{"plan", "-n", "3", "-from", from, "--", "linear(1s, 1s, 5s)"},
	} {
		got, errOut, code := rebound(t, args...)
		if code != exitOK || got != want {
			t.Errorf("%q: exit %d, stderr %q, output\n%s\nwant\n%s", args, code, errOut, got, want)
		}
	}
	// After "--" everything is an argument, even what looks like a flag.
	if _, errOut, code := rebound(t, "plan", "--", "fixed(1s)", "-n", "3"); code != exitUsage || !strings.Contains(errOut, "got 3 arguments") {
		t.Errorf("after --: exit %d, stderr %q; want -n counted as an argument", code, errOut)
	}
}
