package contention

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

func TestSimulateInvariants(t *testing.T) {
	for _, s := range StudyStrategies() {
		for _, n := range []int{1, 2, 10, 57} {
			for run := range 5 {
				r, err := Simulate(s.Policy, n, StudyNetwork, 7, run)
				if err != nil {
					t.Fatalf("%s, %d clients: %v", s.Name, n, err)
				}
				if r.Version != n {
					t.Errorf("%s, %d clients: %d successful writes, want one per client", s.Name, n, r.Version)
				}
				if r.Calls-r.Failures != n {
					t.Errorf("%s, %d clients: %d calls - %d failures != %d clients", s.Name, n, r.Calls, r.Failures, n)
				}
				if r.Reads != r.Calls {
					t.Errorf("%s, %d clients: %d reads for %d writes, want one read per write", s.Name, n, r.Reads, r.Calls)
				}
				if r.MaxBackoff > s.Policy.Max() || r.MaxBackoff < 0 {
					t.Errorf("%s: backoff %s outside [0, %s]", s.Name, r.MaxBackoff, s.Policy.Max())
				}
				if r.MaxAttempts < 1 || r.MaxAttempts > r.Calls {
					t.Errorf("%s: max attempts %d outside [1, calls %d]", s.Name, r.MaxAttempts, r.Calls)
				}
				// Four network hops of at least 0 each, and a lone client
				// never fails.
				if r.Completion <= 0 {
					t.Errorf("%s: completion %s, want > 0", s.Name, r.Completion)
				}
				if n == 1 && (r.Calls != 1 || r.Failures != 0 || r.MaxBackoff != 0) {
					t.Errorf("%s: a lone client made %d calls, %d failures, waited %s; want 1, 0, 0", s.Name, r.Calls, r.Failures, r.MaxBackoff)
				}
			}
		}
	}
}

func TestSimulateIsDeterministic(t *testing.T) {
	p := StudyStrategies()[1].Policy
	a, err := Simulate(p, 40, StudyNetwork, 3, 9)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Simulate(p, 40, StudyNetwork, 3, 9)
	if a != b {
		t.Fatalf("same arguments gave %+v then %+v", a, b)
	}
	c, _ := Simulate(p, 40, StudyNetwork, 3, 10)
	d, _ := Simulate(p, 40, StudyNetwork, 4, 9)
	if a == c || a == d {
		t.Fatalf("another run or seed replayed the same draws: %+v", a)
	}
}

// With no network variance and no backoff every client moves in lock step:
// each round every remaining client writes and exactly one wins, so n
// clients make n + (n-1) + ... + 1 calls.
func TestSimulateLockStep(t *testing.T) {
	zero := backoff.Must(backoff.Fixed(0))
	for _, n := range []int{1, 2, 5, 30} {
		r, err := Simulate(zero, n, Network{Mean: 10, SD: 0}, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := n * (n + 1) / 2; r.Calls != want {
			t.Errorf("%d clients in lock step: %d calls, want %d", n, r.Calls, want)
		}
		if want := time.Duration(n) * 40 * Unit; r.Completion != want {
			t.Errorf("%d clients in lock step: done at %s, want %d rounds of 4 hops = %s", n, r.Completion, n, want)
		}
	}
}

func TestSimulateRejectsBadInput(t *testing.T) {
	p := StudyStrategies()[0].Policy
	for name, f := range map[string]func() error{
		"nil policy":  func() error { _, err := Simulate(nil, 3, StudyNetwork, 0, 0); return err },
		"no clients":  func() error { _, err := Simulate(p, 0, StudyNetwork, 0, 0); return err },
		"negative sd": func() error { _, err := Simulate(p, 3, Network{Mean: 10, SD: -1}, 0, 0); return err },
		"no runs":     func() error { _, err := Sweep(StudyStrategies(), Config{Clients: []int{3}}); return err },
		"bad curve":   func() error { _, err := Strategies(10, 5); return err },
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestSweepShape(t *testing.T) {
	ss := StudyStrategies()
	pts, err := Sweep(ss, Config{Clients: []int{5, 15}, Runs: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2*len(ss) {
		t.Fatalf("%d points, want %d", len(pts), 2*len(ss))
	}
	for i, p := range pts {
		if want := ss[i%len(ss)].Name; p.Strategy != want {
			t.Errorf("point %d is %q, want %q", i, p.Strategy, want)
		}
		if p.Runs != 3 || p.Calls < float64(p.Clients) || p.Time <= 0 {
			t.Errorf("point %+v: want 3 runs, calls >= clients, time > 0", p)
		}
	}
}

// The study's finding, replayed: without jitter clients collide round after
// round (most calls, slowest), and full jitter does the least work. The
// outcome is deterministic for a seed; no clock is involved.
func TestRankingMatchesStudy(t *testing.T) {
	if testing.Short() {
		t.Skip("a 100-client sweep")
	}
	pts, err := Sweep(StudyStrategies(), Config{Clients: []int{100}, Runs: 30, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	byCalls := Ranked(pts, 100, func(p Point) float64 { return p.Calls })
	byTime := Ranked(pts, 100, func(p Point) float64 { return p.Time })
	if byCalls[0].Strategy != FullJitter {
		t.Errorf("least work: %s (%.0f calls), want full jitter; ranking %v", byCalls[0].Strategy, byCalls[0].Calls, byCalls)
	}
	if byCalls[3].Strategy != NoJitter || byTime[3].Strategy != NoJitter {
		t.Errorf("worst: %s by calls, %s by time, want no jitter for both", byCalls[3].Strategy, byTime[3].Strategy)
	}
	// The study's simulator (100 clients, base 5, cap 2000) reports 1859
	// calls without jitter and 796 with full jitter; the replay must land
	// near them, not merely in the same order.
	for _, p := range byCalls {
		want := map[string]float64{NoJitter: 1859, FullJitter: 796, EqualJitter: 812, Decorrelated: 1001}[p.Strategy]
		if p.Calls < want*0.9 || p.Calls > want*1.1 {
			t.Errorf("%s: %.0f calls, want within 10%% of the study's %.0f", p.Strategy, p.Calls, want)
		}
	}
}

func TestWriteSVGIsWellFormed(t *testing.T) {
	pts, err := Sweep(StudyStrategies(), Config{Clients: []int{10, 20, 30}, Runs: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteSVG(&buf, `clients & "jitter" <test>`, pts); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&buf)
	var root string
	lines, texts := 0, map[string]bool{}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
				if el.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q, want the SVG namespace", el.Name.Space)
				}
			}
			if el.Name.Local == "polyline" {
				lines++
			}
		case xml.CharData:
			texts[strings.TrimSpace(string(el))] = true
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	if lines != 2*4 {
		t.Errorf("%d series lines, want 4 strategies x 2 panels", lines)
	}
	for _, want := range []string{NoJitter, FullJitter, EqualJitter, Decorrelated, "clients", `clients & "jitter" <test>`} {
		if !texts[want] {
			t.Errorf("no text %q in the chart", want)
		}
	}
	if err := WriteSVG(io.Discard, "", nil); err == nil {
		t.Error("an empty sweep drew a chart")
	}
}
