package outage

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestMeasure(t *testing.T) {
	s := time.Second
	var calls []Call
	// 50 calls while down, then 30 in the first second after recovery and
	// 10 in the next.
	for i := range 50 {
		calls = append(calls, Call{At: time.Duration(i) * 100 * time.Millisecond})
	}
	for i := range 30 {
		calls = append(calls, Call{At: 5*s + time.Duration(i)*30*time.Millisecond, OK: true})
	}
	for i := range 10 {
		calls = append(calls, Call{At: 6*s + time.Duration(i)*90*time.Millisecond, OK: true})
	}
	var r Result
	r.measure(calls, 5*s, 7*s)
	if r.OutageCalls != 50 || r.TotalCalls != 90 || r.Drain != 2*s {
		t.Errorf("outage calls %d, total %d, drain %v; want 50, 90, 2s", r.OutageCalls, r.TotalCalls, r.Drain)
	}
	if fmt.Sprint(r.PerSecond) != "[30 10]" {
		t.Errorf("per second after recovery %v, want [30 10]", r.PerSecond)
	}
	if r.Peak != 30 || r.PeakAt != 0 {
		t.Errorf("peak %d/s at %v after recovery, want 30 at 0s", r.Peak, r.PeakAt)
	}
}

func TestVerdicts(t *testing.T) {
	rep := Report{Results: []Result{
		{Engine: "native", Mode: "plain", OutageCalls: 10000, Exhausted: 5000},
		{Engine: "native", Mode: "breaker", OutageCalls: 150, BudgetRate: 100, Peak: 110},
		{Engine: "river", Mode: "plain", OutageCalls: 10000},
		{Engine: "river", Mode: "breaker", OutageCalls: 300, Exhausted: 2, BudgetRate: 100, Peak: 130, Lost: 1},
		{Engine: "asynq", Mode: "breaker", Err: "Redis does not answer"},
	}}
	got := strings.Join(rep.Verdicts(), "\n")
	for _, want := range []string{
		"river: 300 outage calls are 3.0% of plain full jitter's 10000, want at most 2%",
		"river: 2 jobs exhausted by the outage, want 0",
		"river: peak 130 calls/s after recovery is 1.30x the budget's 100/s, want at most 1.2x",
		"river/breaker: 1 jobs lost, want 0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("verdicts miss %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "native") {
		t.Errorf("native met every target, but the verdicts say:\n%s", got)
	}
	if md := rep.Markdown(); !strings.Contains(md, "| asynq | breaker | not measured: Redis does not answer |") || !strings.Contains(md, "| native | breaker | 150 | 1.50% | 0 |") {
		t.Errorf("table:\n%s", md)
	}
}
