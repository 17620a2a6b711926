package conformance

import (
	"sort"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// herdCohort is the number of jobs in each cohort of the Herd check.
const herdCohort = 200

// herdWindow picks the Herd check's window from the engine's limits. A
// slice is the engine's own timing noise, Resolution + Lateness (at least
// 20 ms); the window is ten slices. For coarse engines, where ten slices
// would pass five seconds, the window shrinks to as many slices as fit in
// five seconds, but never fewer than four. bound is the largest share of
// the cohort any one slice may hold: 2.5 times the share a perfectly even
// spread would put there (25% of the cohort for ten slices, 62.5% for
// four).
func herdWindow(lim Limits) (window, slice time.Duration, bound float64) {
	slice = max(lim.Resolution+lim.Lateness, 20*time.Millisecond)
	n := 10
	if slice*10 > 5*time.Second {
		n = max(4, int(5*time.Second/slice))
	}
	return slice * time.Duration(n), slice, 2.5 / float64(n)
}

// checkHerd makes two cohorts of herdCohort jobs fail together on their
// first attempt. The cohort on fixed(window + 2 slices) must re-fire together: its
// busiest slice holds more than the bound, which shows the measure can see
// a herd on this engine. The cohort on jitter(fixed(window)) must spread:
// no slice of the window holds more than the bound. Each job's retry is
// measured from its own failure, so a cohort whose first attempts the
// engine spread out over time is still compared fairly; retries are never
// early but, under this load, not held to the declared lateness.
func checkHerd(e *env) {
	window, slice, bound := herdWindow(e.lim)
	// The unjittered cohort waits two slices longer than the window, so that
	// its burst lands after the jittered cohort's window instead of piling
	// its load onto the window's last slice.
	plain := e.start("herd unjittered", e.rule(backoff.Must(backoff.Fixed(window+2*slice)), 2))
	spread := e.start("herd jittered", e.rule(backoff.Must(backoff.Jitter(backoff.Must(backoff.Fixed(window)))), 2))
	plain.herd, spread.herd = true, true
	for range herdCohort {
		plain.enqueue(script{Fail: 1})
		spread.enqueue(script{Fail: 1})
	}
	for _, w := range []*worker{plain, spread} {
		w.verify(w.settle())
	}
	if n, share := busiest(plain, slice); share <= bound {
		e.errorf("%s: the unjittered cohort did not re-fire together: its busiest %v slice held %d of %d retries (%.0f%%), want more than %.0f%%; the engine spreads retries by itself (too few workers?), so this check cannot tell jitter from load",
			plain.label, slice, n, plain.len(), 100*share, 100*bound)
	}
	// A stall of the machine piles the retries due while it lasted onto its
	// end: a slice may then hold what a slice as long as the stall more
	// would, by the witness's longest single stall during the check.
	stall := e.lag.Max()
	allowed := bound * float64(slice+stall) / float64(slice)
	if n, share := busiest(spread, slice); share > allowed {
		e.errorf("%s: full jitter did not spread the cohort: %d of %d retries (%.0f%%) started within one %v slice of the %v window, want at most %.0f%% (%.0f%% for a %v slice, widened by the %v this process's timers stalled at most)",
			spread.label, n, spread.len(), 100*share, slice, window, 100*allowed, 100*bound, slice, stall.Round(time.Millisecond))
	}
}

// busiest returns the largest number of w's retries whose gaps (retry start
// minus the job's own failure end) fall within any interval of length
// slice, and that number as a share of w's jobs.
func busiest(w *worker, slice time.Duration) (int, float64) {
	jobs := w.jobList()
	var gaps []time.Duration
	for _, j := range jobs {
		if runs := w.rec.runs(j.id); len(runs) >= 2 && runs[0].ended {
			gaps = append(gaps, runs[1].start.Sub(runs[0].end))
		}
	}
	if len(jobs) == 0 {
		return 0, 0
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	most, j := 0, 0
	for i := range gaps {
		for gaps[i]-gaps[j] >= slice {
			j++
		}
		most = max(most, i-j+1)
	}
	return most, float64(most) / float64(len(jobs))
}
