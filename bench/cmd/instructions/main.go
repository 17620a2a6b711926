// Command instructions counts the machine instructions one delay
// computation takes, for rebound's core beside cenkalti/backoff and
// sethvargo/go-retry, with valgrind's callgrind tool. An instruction count
// does not move with the load of a shared machine the way a time does, so
// it tells apart changes of a few instructions that ns/op cannot.
//
// Run it from inside the module (valgrind and callgrind_annotate must be on
// PATH):
//
//	go run ./bench/cmd/instructions
//
// It prints a Markdown table: per policy and library, the instructions per
// call. With -format bench it prints the same figures as benchmark lines
// ("BenchmarkInstructions/proportional/cenkalti 1 124.0 instr/op"), which
// bench/cmd/report reads into BENCHMARKS.md.
//
// It builds the driver it measures, this same command, with go build (go
// run strips the symbol table by which callgrind names functions), and runs
// each case in a child process of it under callgrind. The count is the
// inclusive cost of the case's loop function, so the runtime's start-up and
// background threads are not counted. Each case runs twice, for -n and 2*-n
// calls, and the difference divided by -n is the cost of one call with the
// loop's entry and exit taken out; the cost of the library's bare loop (the
// same loop with no delay computed) is subtracted too.
//
// The libraries are called the way bench/core_test.go calls them: rebound
// through backoff.Delay over a Policy held in a package variable, attempts
// cycling 1..16; cenkalti through its BackOff interface, Reset every 16
// calls; go-retry through its Backoff interface, running on.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	cenkalti "github.com/cenkalti/backoff/v5"
	goretry "github.com/sethvargo/go-retry"

	"github.com/rebound-go/rebound/backoff"
)

// The policies, with bench/core_test.go's numbers: base 100ms, cap 10s.
const (
	base    = 100 * time.Millisecond
	ceiling = 10 * time.Second
	cycle   = 16
)

var (
	reboundFixed        backoff.Policy = backoff.Must(backoff.Fixed(time.Second))
	reboundExponential  backoff.Policy = backoff.Must(backoff.Exponential(base, ceiling))
	reboundLinear       backoff.Policy = backoff.Must(backoff.Linear(base, base, ceiling))
	reboundJitter       backoff.Policy = backoff.Must(backoff.Jitter(reboundExponential))
	reboundEqual        backoff.Policy = backoff.Must(backoff.EqualJitter(reboundExponential))
	reboundProportional backoff.Policy = backoff.Must(backoff.Proportional(0.5, reboundExponential))
	reboundDecorrelated backoff.Policy = backoff.Must(backoff.Decorrelated(base, ceiling))

	keyless backoff.Source
	jobKey  = backoff.Key("0190f3a2-7c1e-7d4b-9a51-3f6c2e8b1d47")
)

func cenkaltiExponential(factor float64) cenkalti.BackOff {
	return &cenkalti.ExponentialBackOff{
		InitialInterval:     base,
		RandomizationFactor: factor,
		Multiplier:          2,
		MaxInterval:         ceiling,
	}
}

func goretryExponential() goretry.Backoff {
	return goretry.WithCappedDuration(ceiling, goretry.NewExponential(base))
}

// A measured case: its policy, its library, and how to run it n times.
type measured struct {
	policy, lib string
	run         func(n int) time.Duration // the sum of the delays
}

// bareOf returns the bare loop of lib's cases: each library's loop has its
// own shape (rebound computes the attempt number, cenkalti counts to its
// Reset, go-retry only counts), and each case is charged for its own.
func bareOf(lib string) measured {
	switch {
	case strings.HasPrefix(lib, "rebound"):
		return measured{"loop", "rebound", loopBareRebound}
	case lib == "cenkalti":
		return measured{"loop", "cenkalti", loopBareCenkalti}
	}
	return measured{"loop", "go-retry", loopBareGoretry}
}

var cases = []measured{
	{"fixed", "rebound", func(n int) time.Duration { return loopRebound(reboundFixed, keyless, n) }},
	{"fixed", "cenkalti", func(n int) time.Duration { return loopCenkalti(cenkalti.NewConstantBackOff(time.Second), n) }},
	{"fixed", "go-retry", func(n int) time.Duration { return loopGoretry(goretry.NewConstant(time.Second), n) }},
	{"exponential", "rebound", func(n int) time.Duration { return loopRebound(reboundExponential, keyless, n) }},
	{"exponential", "cenkalti", func(n int) time.Duration { return loopCenkalti(cenkaltiExponential(0), n) }},
	{"exponential", "go-retry", func(n int) time.Duration { return loopGoretry(goretryExponential(), n) }},
	{"linear", "rebound", func(n int) time.Duration { return loopRebound(reboundLinear, keyless, n) }},
	{"full-jitter", "rebound", func(n int) time.Duration { return loopRebound(reboundJitter, keyless, n) }},
	{"full-jitter", "rebound-keyed", func(n int) time.Duration { return loopRebound(reboundJitter, jobKey, n) }},
	{"full-jitter", "go-retry", func(n int) time.Duration { return loopGoretry(goretry.WithFullJitter(goretryExponential()), n) }},
	{"proportional", "rebound", func(n int) time.Duration { return loopRebound(reboundProportional, keyless, n) }},
	{"proportional", "rebound-keyed", func(n int) time.Duration { return loopRebound(reboundProportional, jobKey, n) }},
	{"proportional", "cenkalti", func(n int) time.Duration { return loopCenkalti(cenkaltiExponential(0.5), n) }},
	{"proportional", "go-retry", func(n int) time.Duration { return loopGoretry(goretry.WithJitterPercent(50, goretryExponential()), n) }},
	{"equal-jitter", "rebound", func(n int) time.Duration { return loopRebound(reboundEqual, keyless, n) }},
	{"equal-jitter", "rebound-keyed", func(n int) time.Duration { return loopRebound(reboundEqual, jobKey, n) }},
	{"decorrelated", "rebound", func(n int) time.Duration { return loopRebound(reboundDecorrelated, keyless, n) }},
	{"decorrelated", "rebound-keyed", func(n int) time.Duration { return loopRebound(reboundDecorrelated, jobKey, n) }},
}

// The bare loops, with no delay computed, subtracted from their library's
// cases.
var bares = []measured{bareOf("rebound"), bareOf("cenkalti"), bareOf("go-retry")}

// The loop functions are what callgrind counts (--toggle-collect=main.loop*).
// They are never inlined, so that each is a function of its own; the
// compiler inlines backoff.Delay into loopRebound, as it does at an
// adapter's call site.

//go:noinline
func loopRebound(p backoff.Policy, src backoff.Source, n int) time.Duration {
	var d time.Duration
	for i := range n {
		d += backoff.Delay(p, i%cycle+1, src)
	}
	return d
}

//go:noinline
func loopCenkalti(bo cenkalti.BackOff, n int) time.Duration {
	var d time.Duration
	for i := range n {
		if i%cycle == 0 {
			bo.Reset()
		}
		d += bo.NextBackOff()
	}
	return d
}

//go:noinline
func loopGoretry(bo goretry.Backoff, n int) time.Duration {
	var d time.Duration
	for range n {
		v, _ := bo.Next()
		d += v
	}
	return d
}

//go:noinline
func loopBareRebound(n int) time.Duration {
	var d time.Duration
	for i := range n {
		d += time.Duration(i%cycle + 1)
	}
	return d
}

//go:noinline
func loopBareCenkalti(n int) time.Duration {
	var d time.Duration
	for i := range n {
		if i%cycle == 0 {
			d++
		}
		d += time.Duration(i)
	}
	return d
}

//go:noinline
func loopBareGoretry(n int) time.Duration {
	var d time.Duration
	for i := range n {
		d += time.Duration(i)
	}
	return d
}

func main() {
	child := flag.String("child", "", "run one case (policy/library) in this process and exit; the parent runs it under callgrind")
	n := flag.Int("n", 100_000, "calls per measurement (each case is measured at n and 2n calls)")
	valgrind := flag.String("valgrind", "valgrind", "the valgrind command")
	annotate := flag.String("annotate", "callgrind_annotate", "the callgrind_annotate command")
	format := flag.String("format", "markdown", "what to print: markdown (a table) or bench (benchmark lines, for bench/cmd/report)")
	flag.Parse()
	if *n < 1 {
		fmt.Fprintln(os.Stderr, "instructions: -n must be at least 1")
		os.Exit(2)
	}
	if *format != "markdown" && *format != "bench" {
		fmt.Fprintf(os.Stderr, "instructions: -format %q, want markdown or bench\n", *format)
		os.Exit(2)
	}
	if *child != "" {
		// The scheduler preempts a goroutine that runs long (at a call's
		// stack check) and may resume it on another thread, where
		// callgrind's call graph of the loop would lose it: keep it on one.
		runtime.LockOSThread()
		for _, c := range append(cases, bares...) {
			if c.policy+"/"+c.lib == *child {
				if d := c.run(*n); d < 0 {
					fmt.Fprintf(os.Stderr, "instructions: %s summed to a negative delay, %v\n", *child, d)
					os.Exit(1)
				}
				return
			}
		}
		fmt.Fprintf(os.Stderr, "instructions: no case %q\n", *child)
		os.Exit(2)
	}
	if err := parent(*valgrind, *annotate, *n, *format == "bench"); err != nil {
		fmt.Fprintln(os.Stderr, "instructions:", err)
		os.Exit(1)
	}
}

func parent(valgrind, annotate string, n int, benchLines bool) error {
	dir, err := os.MkdirTemp("", "instructions")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The children run a binary built by go build, with its symbol table:
	// go run strips it, and callgrind then names no function.
	self := filepath.Join(dir, "driver")
	build := exec.Command("go", "build", "-o", self, "github.com/rebound-go/rebound/bench/cmd/instructions")
	if msg, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build of the driver: %v\n%s", err, msg)
	}
	perCall := func(c measured) (float64, error) {
		one, err := count(valgrind, annotate, self, dir, c, n)
		if err != nil {
			return 0, err
		}
		two, err := count(valgrind, annotate, self, dir, c, 2*n)
		if err != nil {
			return 0, err
		}
		return float64(two-one) / float64(n), nil
	}
	loops := map[string]float64{}
	for _, b := range bares {
		v, err := perCall(b)
		if err != nil {
			return err
		}
		loops[b.lib] = v
	}
	if !benchLines {
		fmt.Printf("Instructions per delay computation, counted by callgrind (`go run ./bench/cmd/instructions -n %d`),\n", n)
		fmt.Printf("each library's bare loop subtracted (rebound %.1f, cenkalti %.1f, go-retry %.1f per call).\n\n",
			loops["rebound"], loops["cenkalti"], loops["go-retry"])
		fmt.Println("| policy | library | instructions per call |")
		fmt.Println("| --- | --- | ---: |")
	}
	for _, c := range cases {
		v, err := perCall(c)
		if err != nil {
			return err
		}
		v -= loops[bareOf(c.lib).lib]
		if benchLines {
			fmt.Printf("BenchmarkInstructions/%s/%s\t1\t%.1f instr/op\n", c.policy, c.lib, v)
		} else {
			fmt.Printf("| %s | %s | %.0f |\n", c.policy, c.lib, v)
		}
	}
	return nil
}

// count runs case c for n calls under callgrind and returns the
// instructions of its loop function, callees included. It reads them from
// the loop function's inclusive cost (callgrind_annotate --inclusive),
// which follows the call graph of the thread that ran it: callgrind's
// --toggle-collect, which would count only inside the loop, also counts
// (and loses) instructions when valgrind switches threads, so Go's
// background threads make it wander.
func count(valgrind, annotate, self, dir string, c measured, n int) (int64, error) {
	out := filepath.Join(dir, "callgrind.out")
	cmd := exec.Command(valgrind, "--tool=callgrind", "--separate-threads=yes", "--callgrind-out-file="+out,
		self, "-child", c.policy+"/"+c.lib, "-n", strconv.Itoa(n))
	// The runtime's asynchronous preemption would signal a loop that runs
	// long, and a signal handler's instructions are not the loop's.
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, msg)
	}
	files, err := filepath.Glob(out + "*") // one per thread
	if err != nil {
		return 0, err
	}
	var best int64 = -1
	var failed error
	for _, f := range files {
		// A thread that ran nothing of note leaves a file callgrind_annotate
		// refuses; only the loop's thread matters.
		text, err := exec.Command(annotate, "--inclusive=yes", f).Output()
		if err != nil {
			failed = fmt.Errorf("%s --inclusive=yes %s: %v", annotate, f, err)
		} else if v, ok := loopCost(string(text)); ok {
			best = max(best, v)
		}
		if err := os.Remove(f); err != nil {
			return 0, err
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("callgrind counted no main.loop function for %s/%s (%v)", c.policy, c.lib, failed)
	}
	return best, nil
}

// loopCost finds the inclusive cost of the main.loop function in
// callgrind_annotate's listing: the line "6,802,495 (95.07%)
// path/main.go:main.loopRebound [binary]" (the percentage may be padded,
// "( 4.04%)").
func loopCost(listing string) (int64, bool) {
	for line := range strings.Lines(listing) {
		fields := strings.Fields(line)
		for i := 1; i+1 < len(fields); i++ {
			_, fn, ok := strings.Cut(fields[i], ":main.loop")
			if !ok || strings.Contains(fn, ":") || !strings.HasPrefix(fields[i+1], "[") {
				continue
			}
			if v, err := strconv.ParseInt(strings.ReplaceAll(fields[0], ",", ""), 10, 64); err == nil {
				return v, true
			}
		}
	}
	return 0, false
}
