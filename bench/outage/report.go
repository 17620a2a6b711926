package outage

import (
	"fmt"
	"strings"
	"time"
)

// Report is one run of every engine and mode.
type Report struct {
	Scenario ScenarioText `json:"scenario"`
	Results  []Result     `json:"results"`
}

// ScenarioText is a scenario in words, for the report.
type ScenarioText struct {
	Jobs          int     `json:"jobs"`
	Workers       int     `json:"workers"`
	Concurrency   int     `json:"concurrency"`
	Outage        string  `json:"outage"`
	Rule          string  `json:"rule"`
	ScheduleTotal string  `json:"schedule_total"`
	Breaker       string  `json:"breaker"`
	BudgetRate    float64 `json:"budget_rate"`
}

// Describe puts s in words.
func Describe(s Scenario) ScenarioText {
	return ScenarioText{Jobs: s.Jobs, Workers: s.Workers, Concurrency: s.Concurrency, Outage: s.Outage.String(),
		Rule: s.Rule.String(), ScheduleTotal: s.ScheduleTotal().String(), Breaker: s.Breaker.String(), BudgetRate: s.BudgetRate()}
}

// Targets are issue 16's, checked per engine.
const (
	// MaxOutageShare is the most outage calls the breaker may make, as a
	// share of plain full jitter's in the same run.
	MaxOutageShare = 0.02
	// MaxPeakRatio is the highest peak call rate after recovery, as a
	// multiple of the budget's rate.
	MaxPeakRatio = 1.2
)

// Verdicts checks the breaker runs against the targets, engine by engine,
// and returns one line per target missed (none when all are met).
func (rep Report) Verdicts() []string {
	var out []string
	plain := map[string]Result{}
	for _, r := range rep.Results {
		if r.Mode == "plain" {
			plain[r.Engine] = r
		}
	}
	for _, r := range rep.Results {
		if r.Mode != "breaker" || r.Err != "" {
			continue
		}
		if p, ok := plain[r.Engine]; ok && p.Err == "" && p.OutageCalls > 0 {
			if share := float64(r.OutageCalls) / float64(p.OutageCalls); share > MaxOutageShare {
				out = append(out, fmt.Sprintf("%s: %d outage calls are %.1f%% of plain full jitter's %d, want at most %.0f%%",
					r.Engine, r.OutageCalls, 100*share, p.OutageCalls, 100*MaxOutageShare))
			}
		}
		if r.Exhausted > 0 {
			out = append(out, fmt.Sprintf("%s: %d jobs exhausted by the outage, want 0", r.Engine, r.Exhausted))
		}
		if r.BudgetRate > 0 && float64(r.Peak) > MaxPeakRatio*r.BudgetRate {
			out = append(out, fmt.Sprintf("%s: peak %d calls/s after recovery is %.2fx the budget's %.0f/s, want at most %.1fx",
				r.Engine, r.Peak, float64(r.Peak)/r.BudgetRate, r.BudgetRate, MaxPeakRatio))
		}
	}
	for _, r := range rep.Results {
		if r.Err == "" && r.Lost > 0 {
			out = append(out, fmt.Sprintf("%s/%s: %d jobs lost, want 0", r.Engine, r.Mode, r.Lost))
		}
	}
	return out
}

// Markdown is the table of the results, one row per engine and mode, and
// the targets missed.
func (rep Report) Markdown() string {
	var b strings.Builder
	s := rep.Scenario
	fmt.Fprintf(&b, "%d jobs, %d worker processes x %d handlers, the dependency down %s; rule `%s` (whole schedule up to %s); breaker `%s` (budget rate %.0f/s)\n\n",
		s.Jobs, s.Workers, s.Concurrency, s.Outage, s.Rule, s.ScheduleTotal, s.Breaker, s.BudgetRate)
	b.WriteString("| engine | mode | calls while down | vs plain | exhausted | recovery to empty backlog | peak calls/s after recovery | vs budget | lost |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	plain := map[string]Result{}
	for _, r := range rep.Results {
		if r.Mode == "plain" {
			plain[r.Engine] = r
		}
	}
	for _, r := range rep.Results {
		if r.Err != "" {
			fmt.Fprintf(&b, "| %s | %s | not measured: %s | | | | | | |\n", r.Engine, r.Mode, strings.ReplaceAll(r.Err, "|", "/"))
			continue
		}
		share, vsBudget := "", ""
		if p, ok := plain[r.Engine]; ok && r.Mode != "plain" && p.Err == "" && p.OutageCalls > 0 {
			share = fmt.Sprintf("%.2f%%", 100*float64(r.OutageCalls)/float64(p.OutageCalls))
		}
		if r.BudgetRate > 0 {
			vsBudget = fmt.Sprintf("%.2fx", float64(r.Peak)/r.BudgetRate)
		}
		drain := r.Drain.Round(100 * time.Millisecond).String()
		if r.TimedOut {
			drain = "> " + drain + " (deadline)"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %d | %s | %d | %s | %d |\n",
			r.Engine, r.Mode, r.OutageCalls, share, r.Exhausted, drain, r.Peak, vsBudget, r.Lost)
	}
	if v := rep.Verdicts(); len(v) > 0 {
		b.WriteString("\nTargets missed:\n\n")
		for _, line := range v {
			fmt.Fprintf(&b, "- %s\n", line)
		}
	} else {
		b.WriteString("\nEvery target met: outage calls at most 2% of plain full jitter's, no job exhausted, peak after recovery at most 1.2x the budget, none lost.\n")
	}
	return b.String()
}
