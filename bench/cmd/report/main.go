// Command report regenerates BENCHMARKS.md from a fresh run on the machine at
// hand: it runs rebound's benchmarks beside the peers' with go test, takes
// the median of every figure over -count runs, computes rebound's ratio to
// each peer, replays the AWS contention study in virtual time (with and
// without a circuit breaker), runs issue 16's outage measurement (a
// dependency down for 30 s, each engine with and without the breaker, from
// worker processes of its own), and writes the file and the contention
// chart.
//
// Run it from anywhere inside the module:
//
//	go run ./bench/cmd/report
//
// It uses the real Redis and PostgreSQL servers named by REBOUND_REDIS_ADDR
// and REBOUND_POSTGRES_URL (defaults 127.0.0.1:6379 and
// 127.0.0.1:5432/test) when they answer, and says in the file which ones did.
// A section whose benchmarks do not exist, or skipped for want of a server,
// is written as "not measured" with the reason; no number is ever carried
// over from an earlier run. A full run takes about twenty minutes on 2
// cores, the outage section about ten of them; -only picks sections (core,
// contention, outage, or scenarios: lateness, throughput, promotion, herd,
// memory, enqueue), -quick runs the throughput,
// memory and enqueue scenarios at a tenth of their jobs and one round, to
// check that they work.
//
// The core section also counts the core's instructions per call beside the
// peers' with bench/cmd/instructions, when valgrind is on PATH (a few
// minutes); without it, that table says it was not measured.
//
// BullMQ, a peer in the lateness, throughput, memory and enqueue sections,
// runs on Node from bench/bullmq, whose packages the report installs there
// with npm ci from the committed lock file when they are missing. Without
// node or npm, or when npm ci fails, the BullMQ rows say why they were not
// measured.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rebound-go/rebound/bench/bullmq"
)

type options struct {
	out, svg       string
	count          int
	benchtime      string
	scenarioCount  int
	contentionRuns int
	only           string
	quick          bool
	timeout        time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.out, "o", "BENCHMARKS.md", "the Markdown file to write, relative to the module root")
	flag.StringVar(&o.svg, "svg", "bench/contention.svg", "the contention chart to write, relative to the module root")
	flag.IntVar(&o.count, "count", 6, "runs of each core micro-benchmark; the report shows their median")
	flag.StringVar(&o.benchtime, "benchtime", "150ms", "-benchtime of each core micro-benchmark run")
	flag.IntVar(&o.scenarioCount, "scenario-count", 1, "runs of each server scenario (lateness, throughput, herd, ...)")
	flag.IntVar(&o.contentionRuns, "contention-runs", 100, "simulated runs averaged per contention point (the study used 100)")
	flag.StringVar(&o.only, "only", "", "comma-separated sections to run: core, contention, outage, scenarios (all of: "+strings.Join(scenarioAnchors(), ", ")+"), or any of those; the others are written as not measured")
	flag.BoolVar(&o.quick, "quick", false, "run the throughput, memory and enqueue scenarios at a tenth of their jobs and one round: a check that they work, not figures to publish")
	flag.DurationVar(&o.timeout, "timeout", 9*time.Minute, "-timeout of each go test run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, args []string) error {
	if o.count < 1 || o.scenarioCount < 1 || o.contentionRuns < 1 {
		return fmt.Errorf("-count %d, -scenario-count %d and -contention-runs %d must all be at least 1", o.count, o.scenarioCount, o.contentionRuns)
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return err
	}
	want, err := parseOnly(o.only)
	if err != nil {
		return err
	}
	start := time.Now()
	m := detect(ctx, root)
	rep := &report{machine: m, command: "go run ./bench/cmd/report" + quoteArgs(args), results: newResults(), quick: o.quick}
	rep.init()
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}

	if want("core") {
		cmd := goTest(coreBenchPattern, o.count, o.benchtime, o.timeout)
		if err := rep.goTest(ctx, root, cmd, "core", nil); err != nil {
			return err
		}
		if err := rep.countInstructions(ctx, root); err != nil {
			return err
		}
	} else {
		rep.notRun["core"] = "not selected with -only"
		rep.notRun["core-instructions"] = "not selected with -only"
	}
	var env []string
	if o.quick {
		env = append(env, quickEnv+"=1")
	}
	bullmqReady := false
	for _, s := range scenarios {
		if !want("scenarios") && !want(s.anchor) {
			rep.notRun[s.anchor] = "not selected with -only"
			continue
		}
		if s.bullmq && !bullmqReady {
			bullmqReady = true
			env = append(env, rep.prepareBullMQ(ctx, root)...)
		}
		cmd := goTest(scenarioPattern(s), o.scenarioCount, "1x", o.timeout)
		if err := rep.goTest(ctx, root, cmd, s.anchor, env); err != nil {
			return err
		}
	}
	if want("contention") {
		fmt.Fprintf(os.Stderr, "report: simulating contention (%d runs per point)\n", o.contentionRuns)
		c, err := runContention(o.contentionRuns)
		if err != nil {
			return err
		}
		rep.contention = c
		rep.svgPath = filepath.ToSlash(o.svg)
		svg, err := os.Create(abs(o.svg))
		if err != nil {
			return err
		}
		if err := c.writeSVG(svg); err != nil {
			svg.Close()
			return err
		}
		if err := svg.Close(); err != nil {
			return err
		}
	} else {
		rep.notRun["contention"] = "not selected with -only"
	}
	if want("outage") {
		if err := rep.runOutage(ctx, root); err != nil {
			return err
		}
	} else {
		rep.notRun["outage"] = "not selected with -only"
	}
	rep.elapsed = time.Since(start)

	var buf bytes.Buffer
	rep.write(&buf)
	if err := os.WriteFile(abs(o.out), buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "report: wrote %s in %s\n", o.out, rep.elapsed.Round(time.Second))
	return nil
}

// The benchmarks each run selects. Core micro-benchmarks run many short
// times; scenarios (a whole queue run per iteration) run once each.
const (
	coreBenchPattern = `^BenchmarkDelay(Parallel)?$`
)

// goTest returns the arguments of one go test run over the bench package.
func goTest(pattern string, count int, benchtime string, timeout time.Duration) []string {
	return []string{"go", "test", "./bench", "-run", "^$", "-bench", pattern, "-benchmem",
		"-count", strconv.Itoa(count), "-benchtime", benchtime, "-timeout", timeout.String(), "-v"}
}

// goTest runs one go test command in root, with env added to the
// environment, echoing its output to stderr, and parses what it printed. A
// failing run is recorded, not fatal: its sections say why they were not
// measured.
func (r *report) goTest(ctx context.Context, root string, args []string, group string, env []string) error {
	line := shellJoin(args)
	for _, e := range slices.Backward(env) {
		// The reason BullMQ cannot run is told in its rows, not here.
		if !strings.HasPrefix(e, bullmq.UnavailableEnv+"=") {
			line = shellQuote(e) + " " + line
		}
	}
	fmt.Fprintf(os.Stderr, "report: %s\n", line)
	r.commands = append(r.commands, line)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, os.Stderr)
	cmd.Stderr = io.MultiWriter(&out, os.Stderr)
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := r.results.parse(&out); err != nil {
		return err
	}
	if runErr != nil {
		r.runErrs[group] = fmt.Sprintf("`%s` failed: %v", line, runErr)
		if tail := lastLines(out.String(), 3); tail != "" {
			r.runErrs[group] += " (" + tail + ")"
		}
	}
	return nil
}

// countInstructions runs bench/cmd/instructions, which counts the core's
// instructions per call under callgrind, when valgrind is at hand.
func (r *report) countInstructions(ctx context.Context, root string) error {
	for _, tool := range []string{"valgrind", "callgrind_annotate"} {
		if _, err := exec.LookPath(tool); err != nil {
			r.notRun["core-instructions"] = tool + " is not on PATH"
			return nil
		}
	}
	return r.goTest(ctx, root, instructionsCommand, "core-instructions", nil)
}

// instructionsCommand counts the core's instructions per call.
var instructionsCommand = []string{"go", "run", "./bench/cmd/instructions", "-format", "bench", "-n", "100000"}

// parseOnly reads -only: an empty list selects every section, else each
// name must be a run group (core, scenarios, contention) or a scenario's
// anchor.
func parseOnly(only string) (func(string) bool, error) {
	if strings.TrimSpace(only) == "" {
		return func(string) bool { return true }, nil
	}
	known := append([]string{"core", "scenarios", "contention", "outage"}, scenarioAnchors()...)
	chosen := map[string]bool{}
	for _, x := range strings.Split(only, ",") {
		x = strings.TrimSpace(x)
		if !slices.Contains(known, x) {
			return nil, fmt.Errorf("-only: unknown section %q, want some of %s", x, strings.Join(known, ", "))
		}
		chosen[x] = true
	}
	return func(s string) bool { return chosen[s] }, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the rebound module: run the report from the repository")
	}
	return filepath.Dir(mod), nil
}

func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func quoteArgs(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return " " + shellJoin(args)
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func itoa(i int) string { return strconv.Itoa(i) }
