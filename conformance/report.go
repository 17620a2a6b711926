package conformance

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// stats collects lateness samples across the checks of one run.
type stats struct {
	mu         sync.Mutex
	idle, herd []time.Duration
	widest     time.Duration // the most the witness widened a lateness bound
}

// witnessed records that the witness widened a lateness bound by lag.
func (s *stats) witnessed(lag time.Duration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.widest = max(s.widest, lag)
	s.mu.Unlock()
}

func (s *stats) add(herd bool, late time.Duration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if herd {
		s.herd = append(s.herd, late)
	} else {
		s.idle = append(s.idle, late)
	}
}

func (s *stats) report(name string, lim Limits) Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Report{Harness: name, Limits: lim, Idle: summarize(s.idle), Herd: summarize(s.herd), Stall: s.widest}
}

// Report is what one run of the suite measured about an adapter.
type Report struct {
	// Harness is the harness's Name.
	Harness string
	// Limits is what the harness declared.
	Limits Limits
	// Idle is the lateness of retries on a lightly loaded engine: every
	// retry of every check except Herd. The suite holds these to
	// [Limits.Resolution] + [Limits.Lateness], plus what the load added
	// (see Stall).
	Idle Lateness
	// Herd is the lateness of the retries of the Herd check's cohorts,
	// hundreds of jobs retrying together. Only "never early" applies.
	Herd Lateness
	// Lacks is what the harness declared its engine lacks (see
	// [LackingHarness]), with the reasons; the checks needing it were
	// skipped.
	Lacks map[Feature]string
	// Elapsed is how long the whole run took.
	Elapsed time.Duration
	// Stall is the most any lateness bound was widened beyond Resolution +
	// Lateness: how far this process's own timers, measured beside the
	// engine during the check, fell behind over a retry's interval. It is
	// near zero on an idle machine and grows with the load.
	Stall time.Duration
}

// Lateness summarises how late retries started: each sample is the gap
// between a failed attempt's end and the next attempt's start, minus the
// delay the core computed for it. Negative samples are early retries.
type Lateness struct {
	// Retries is the number of retries measured.
	Retries int
	// P50, P99 and Max are the median, 99th percentile (nearest rank) and
	// largest lateness.
	P50, P99, Max time.Duration
	// Early counts retries that started before their computed delay.
	Early int
}

func summarize(late []time.Duration) Lateness {
	if len(late) == 0 {
		return Lateness{}
	}
	s := append([]time.Duration(nil), late...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	l := Lateness{Retries: len(s), P50: rank(0.50), P99: rank(0.99), Max: s[len(s)-1]}
	for _, d := range s {
		if d < 0 {
			l.Early++
		}
	}
	return l
}

// String returns the lateness table the suite logs.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "conformance: lateness of %s (declared resolution %v, lateness %v; suite took %v)\n",
		r.Harness, r.Limits.Resolution, r.Limits.Lateness, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "  %-5s %7s %12s %12s %12s %6s\n", "load", "retries", "p50", "p99", "max", "early")
	row := func(name string, l Lateness) {
		fmt.Fprintf(&b, "  %-5s %7d %12v %12v %12v %6d\n", name, l.Retries, round(l.P50), round(l.P99), round(l.Max), l.Early)
	}
	row("idle", r.Idle)
	row("herd", r.Herd)
	fmt.Fprintf(&b, "  the load widened the lateness bound by at most %v (the lag the witness, this process's own timers and its probes of the server, saw over a retry's interval)\n", round(r.Stall))
	fs := make([]string, 0, len(r.Lacks))
	for f := range r.Lacks {
		fs = append(fs, string(f))
	}
	sort.Strings(fs)
	for _, f := range fs {
		fmt.Fprintf(&b, "  lacks %s: %s\n", f, r.Lacks[Feature(f)])
	}
	return strings.TrimRight(b.String(), "\n")
}

func round(d time.Duration) time.Duration {
	if d > 10*time.Millisecond || d < -10*time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
