package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rebound-go/rebound/bench/contention"
	"github.com/rebound-go/rebound/bench/outage"
)

// runOutage runs issue 16's outage measurement (go run ./bench/cmd/outage,
// which starts its own worker processes) and keeps its results. A failing
// run is recorded, not fatal: the section says why it was not measured.
func (r *report) runOutage(ctx context.Context, root string) error {
	dir, err := os.MkdirTemp("", "rebound-outage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "outage.json")
	args := []string{"go", "run", "./bench/cmd/outage", "-json", out}
	line := shellJoin(args[:len(args)-2])
	fmt.Fprintf(os.Stderr, "report: %s\n", line)
	r.commands = append(r.commands, line)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = root
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if runErr != nil {
		r.runErrs["outage"] = fmt.Sprintf("`%s` failed: %v", line, runErr)
		return nil
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	var rep outage.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return fmt.Errorf("read %s: %w", out, err)
	}
	r.outage = &rep
	return nil
}

// writeOutage writes the outage section.
func (r *report) writeOutage(m *md) {
	m.p("## Outage")
	m.p("")
	m.p("<a id=\"outage\"></a>")
	m.p("")
	if r.outage == nil {
		reason := r.notRun["outage"]
		if reason == "" {
			reason = r.runErrs["outage"]
		}
		m.p("**not measured**: %s", reason)
		m.p("")
		return
	}
	m.p("Issue 16's measurement (`bench/cmd/outage`): a dependency, an HTTP server in the measuring")
	m.p("process, answers 503 for the outage, then 200; the jobs, enqueued before the workers start,")
	m.p("each make one call into it, from worker processes (the same binary run again) on every")
	m.p("engine's real server, and every call is recorded. Each engine runs twice in the same run: its")
	m.p("retry rule alone (**plain** full jitter) and with rebound's circuit breaker (**breaker**: the")
	m.p("breaker in the engine's own store, redisstore for native and asynq, pgstore for River). **calls")
	m.p("while down** counts every call during the outage; **exhausted** the jobs it used up;")
	m.p("**recovery to empty backlog** runs from the recovery to the last job's end; **peak calls/s**")
	m.p("is the most calls in any one second from the recovery until the backlog was empty, against")
	m.p("the breaker budget's rate (its floor over one minus its share of the successes); **lost** the")
	m.p("jobs neither completed nor exhausted at the end. Targets: calls while down at most 2%% of plain")
	m.p("full jitter's, none exhausted, peak at most 1.2x the budget, none lost.")
	m.p("")
	m.WriteString(r.outage.Markdown())
	m.p("")
}

// contentionBreakerClients are the client counts of the breaker's replay.
var contentionBreakerClients = []int{10, 50, 100, 200}

// runContentionBreaker replays the study with the breaker beside full
// jitter alone.
func runContentionBreaker(runs int) ([]contention.Point, error) {
	return contention.Sweep([]contention.Strategy{contention.StudyStrategies()[1], contention.BreakerStrategy()},
		contention.Config{Clients: contentionBreakerClients, Runs: runs, Seed: 1})
}

// writeContentionBreaker writes the breaker's replay of the study.
func (c *contentionResult) writeContentionBreaker(w io.Writer) {
	if len(c.guarded) == 0 {
		return
	}
	var m md
	m.p("<a id=\"contention-breaker\"></a>")
	m.p("")
	m.p("**With a circuit breaker** shared by the clients (package `breaker`, run by the adapters'")
	m.p("own code on an in-memory store in virtual time): a conflict is a failure of the row's")
	m.p("server; `%s` holds the clients back while", contention.StudyBreaker)
	m.p("open and releases them at its budget's rate, about one write per round trip; deferred")
	m.p("attempts are not writes. Full jitter (`exponential(10, 2000)`) stays each client's retry policy.")
	m.p("")
	m.p("| clients | full jitter calls | + breaker calls | share | full jitter time | + breaker time | ratio |")
	m.p("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, n := range contentionBreakerClients {
		f, ok1 := c.at(c.guarded, n, contention.FullJitter)
		g, ok2 := c.at(c.guarded, n, contention.BreakerStrategy().Name)
		if !ok1 || !ok2 {
			continue
		}
		m.p("| %d | %.0f | %.0f | %.0f%% | %.0f | %.0f | %.2fx |", n, f.Calls, g.Calls, 100*g.Calls/f.Calls, f.Time, g.Time, g.Time/f.Time)
	}
	m.p("")
	m.p("The breaker turns contention into a queue: after the first round, where every client's")
	m.p("first attempt runs (a first run never waits for the budget), each write it lets through")
	m.p("mostly succeeds, so the calls fall to about two per client; the last client finishes when the")
	m.p("budget has let everyone through, which with many clients is later than full jitter's herd.")
	m.p("")
	_, _ = io.WriteString(w, strings.TrimRight(m.String(), "\n")+"\n\n")
}
