// Command rebound shows a retry policy at a glance: the schedule one job
// follows, and where a cohort of jobs that failed together retries. From a
// Redis or PostgreSQL URL it also shows the fleet's shared circuit breakers,
// and a native queue's jobs, which it can retry, run now, delete, cancel or
// pause.
//
// The guide, with sample output of every command: https://github.com/rebound-go/rebound/blob/main/docs/cli.md
//
// Usage:
//
//	rebound plan POLICY [-n 10] [-key ID] [-from TIME]
//	rebound herd POLICY [-jobs 1000] [-attempt 3] [-buckets 20] [-seed S] [-svg FILE]
//	rebound ui [POLICY] [-addr 127.0.0.1:0] [-redis URL -queue NAME ...]
//	rebound breaker -redis URL [-prefix P] | -postgres URL [-schema S]
//	rebound queue -redis URL [-prefix P] [-json] COMMAND QUEUE [ARGS]
//
// POLICY is rebound's text form of a policy, as backoff.Parse reads it, for
// example 'jitter(exponential(100ms, 2s))'. Quote it: the shell treats
// parentheses specially. Flags may come before or after POLICY. Every command
// documents its flags with -h.
//
// Exit status is 0 on success, 1 when the work itself fails (such as writing
// the SVG file) and 2 for bad input: an unknown command or flag, an
// unparsable policy or a value out of range.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the command could not do its work
	exitUsage = 2 // the input was wrong
)

// A command is one subcommand of rebound.
type command struct {
	name     string
	synopsis string // one line for the command list
	run      func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"plan", "the schedule one job follows: delays, total wait, fire times and a bar chart", runPlan},
		{"herd", "where a cohort that failed together retries, with and without jitter", runHerd},
		{"ui", "the curve, the herd and the native queues in a browser, live", runUI},
		{"breaker", "each dependency's shared circuit breaker, from a Redis or PostgreSQL URL", runBreaker},
		{"queue", "a native queue's jobs: list, show, retry, run now, delete, cancel, pause", runQueue},
	}
}

func commandNames() string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	return strings.Join(append(names, "help"), ", ")
}

// run is the whole program: it runs the command named by args[0] with the
// rest of args, writes its output to stdout and its diagnostics to stderr,
// and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		if name == "help" && len(rest) > 0 {
			// "rebound help plan" is "rebound plan -h".
			return run([]string{rest[0], "-h"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(rest, stdout, stderr)
		}
	}
	if strings.HasPrefix(name, "-") {
		fmt.Fprintf(stderr, "rebound: flag %s comes before a command; want a command first (%s), e.g. rebound plan -h\n", name, commandNames())
	} else {
		fmt.Fprintf(stderr, "rebound: unknown command %q; known commands: %s\n", name, commandNames())
	}
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprint(w, `rebound shows a retry policy at a glance.

Usage:

  rebound COMMAND POLICY [flags]

Commands:

`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.synopsis)
	}
	fmt.Fprint(w, `  help    this text; "rebound help COMMAND" documents a command's flags

`+policyHelp+`
Exit status: 0 on success, 1 if the command fails (e.g. writing a file),
2 for bad input (unknown command or flag, unparsable policy, value out of range).
`)
}

// policyHelp describes the text form of a policy; both commands print it.
const policyHelp = `POLICY is a retry policy in rebound's text form (quote it for the shell):

  fixed(D)                 every retry waits D
  exponential(BASE, CAP)   BASE * 2^(attempt-1), at most CAP
  linear(BASE, STEP, CAP)  BASE + STEP*(attempt-1), at most CAP
  decorrelated(BASE, CAP)  AWS decorrelated jitter
  jitter(P)                full jitter: uniform in [0, P's delay]
  equal(P)                 equal jitter: half of P's delay plus up to the other half
  proportional(F, P)       P's delay +- fraction F, F in (0, 1]

Durations use Go syntax: 250ms, 1.5s, 2m, 1h30m.
Example: 'jitter(exponential(100ms, 2s))'
`

// newFlagSet returns a flag set whose errors and help the caller reports:
// it prints nothing itself.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("rebound "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs, allowing flags before and after the
// positional arguments (flag stops at the first positional one), and
// returns the positional arguments. Everything after "--" is positional.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseCommandLine parses a command's flags and its single POLICY argument.
// On -h it prints help to stdout; on bad input it prints the problem to
// stderr. ok is false when the command should return code.
func parseCommandLine(fs *flag.FlagSet, help func(io.Writer), args []string, stdout, stderr io.Writer) (policyText string, code int, ok bool) {
	pos, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		help(stdout)
		return "", exitOK, false
	}
	if err != nil {
		return "", usageError(stderr, fs, "%v", err), false
	}
	switch len(pos) {
	case 0:
		return "", usageError(stderr, fs, "missing POLICY, want one such as 'jitter(exponential(100ms, 2s))'"), false
	case 1:
		return pos[0], 0, true
	default:
		return "", usageError(stderr, fs, "got %d arguments %q, want one POLICY (quote it: 'exponential(100ms, 2s)')", len(pos), pos), false
	}
}

// usageError reports bad input to the command of fs and returns the usage
// exit code.
func usageError(stderr io.Writer, fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fmt.Fprintf(stderr, "run '%s -h' for usage\n", fs.Name())
	return exitUsage
}

// printFlags writes fs's flag documentation to w.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
