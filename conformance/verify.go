package conformance

import (
	"bytes"
	"context"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
)

// verify checks everything the suite knows about each job of the worker:
// its runs against its script and rule (verifyRuns), what the observer,
// the give-up hook and the error handler were told against what the
// engine did (verifyStory), and that the adapter's bookkeeping empties.
// states is settle's result.
func (w *worker) verify(states map[string]State) {
	w.drain(states)
	for _, j := range w.jobList() {
		w.verifyRuns(j, states[j.id])
	}
	w.verifyStory(states)
	w.verifyReports()
	w.verifyBookkeeping(states)
}

// verifyGroup verifies workers that share one witness, once all of them
// have settled.
func verifyGroup(ws []*worker, states []map[string]State) {
	for i, w := range ws {
		w.drain(states[i])
		for _, j := range w.jobList() {
			w.verifyRuns(j, states[i][j.id])
		}
	}
	for i, w := range ws {
		w.verifyStory(states[i])
		w.verifyBookkeeping(states[i])
	}
	ws[0].verifyReports()
}

// verifyRuns checks the job's runs against its script: final state, number
// of runs, attempt numbering, payload, and the gap before every retry.
func (w *worker) verifyRuns(j *job, got State) {
	e := w.e
	wantRuns, wantState := w.runsWanted(j)
	runs := w.rec.runs(j.id)
	what := j.what()
	custom := j.cancel != notCancelled // a cancelled job's end is the engine's choice
	if !custom && got != StatePending && got != wantState && j.parked == 0 {
		w.errorf("%s ended %v, want %v", what, got, wantState)
	}
	if !custom && !j.s.Dep && len(runs) != wantRuns {
		w.errorf("%s ran %d times, want %d (MaxAttempts %d counts every run, the first included)",
			what, len(runs), wantRuns, e.effCap(j.rule))
	}
	if !j.terminalAt.IsZero() {
		for i, r := range runs {
			if r.start.After(j.terminalAt) {
				w.errorf("%s: run %d started %v after the job was seen %v; a job never runs again once terminal",
					what, i+1, r.start.Sub(j.terminalAt), got)
			}
		}
	}
	counted := 0
	for i, r := range runs {
		n := i + 1
		if want := counted + 1; r.reported != want {
			w.errorf("%s: run %d was reported as Job.Attempt %d, want %d (attempts are 1-based and count every run but those cut short by a restart)",
				what, n, r.reported, want)
		}
		if !bytes.Equal(r.payload, j.payload) {
			w.errorf("%s: run %d got payload %q, want the enqueued %q unchanged", what, n, r.payload, j.payload)
		}
		if !r.ended {
			w.errorf("%s: run %d never returned, although the job is %v", what, n, got)
			if w.toldEndedCounted(r) {
				counted++ // the engine moved on: the next run is numbered after it
			}
			continue
		}
		uncounted := r.interrupt || (r.stale && !w.toldCounted(r))
		if uncounted {
			continue // the next run may start at once, with the same number
		}
		counted++
		// The engine spaces the retries of a job it retries by itself.
		if i+1 >= len(runs) || r.stale || j.engine {
			continue
		}
		err := r.err
		if r.overran && err == nil {
			err = context.DeadlineExceeded // what the engine records
		}
		dec, panicked := w.decide(j, counted, err)
		if !dec.Retry() {
			continue // a run that should not exist; reported above as too many runs
		}
		want := e.effDelay(dec.Delay)
		// The engine decides once the run has returned, or, for a run that
		// outlived its deadline, as early as the deadline.
		base := r.end
		if r.overran && r.deadline.Before(base) {
			base = r.deadline
		}
		next := runs[i+1].start
		gap := next.Sub(base)
		// The lateness table holds retries whose decision time is known:
		// not those of a run that outlived its deadline (the engine may
		// decide at the deadline or when the handler returns), nor those a
		// restart held up.
		if !j.lateOK && !r.overran {
			e.st.add(w.herd, gap-want)
		}
		hint, hinted := backoff.RetryAfterHint(err)
		bound, lag := e.allow(r.end, next, w.peers != nil || !w.herd && !j.lateOK)
		if w.peers != nil && (gap < want || next.Sub(r.end) > want+bound) {
			w.errorf("%s: run %d started %v after run %d ended, want %v: was another engine's decision for a job with the same ID applied? (the engines share one adapter value)",
				what, n+1, next.Sub(r.end), n, want)
		}
		// Engines schedule on the system's wall clock (Redis's and
		// PostgreSQL's clock, or the worker's): a forward step of that
		// clock between the decision and the next run brings the fire
		// time closer in elapsed time by exactly the step, which the two
		// readings of the recorder's times measure. Never early holds on
		// the clock the engine runs on.
		if step := wallStep(base, next); step > 0 && gap < want && gap+step >= want {
			w.e.t.Logf("%s: run %d started %v after run %d ended, %v before its computed delay %v, while the system's wall clock stepped %v ahead of elapsed time: on time by the clock the engine schedules on",
				what, n+1, gap, n, want-gap, want, step)
			gap = want
		}
		switch {
		case gap < want && hinted && gap < hint:
			w.errorf("%s: run %d started %v after run %d ended, before its retry-after hint %v (computed delay %v): retry-after hint ignored",
				what, n+1, gap, n, hint, want)
		case gap < want && panicked:
			w.errorf("%s: run %d started %v after run %d ended, %v before Config.FallbackDelay %v (the policy panicked at attempt %d): retry fired early after a policy panic",
				what, n+1, gap, n, want-gap, want, counted)
		case gap < want:
			w.errorf("%s: run %d started %v after run %d ended, %v before its computed delay %v: retry fired early",
				what, n+1, gap, n, want-gap, want)
		case !w.herd && !j.lateOK && next.Sub(r.end) > want+bound:
			late := next.Sub(r.end)
			if panicked {
				w.errorf("%s: run %d started %v after run %d ended, %v after Config.FallbackDelay %v (the policy panicked at attempt %d; pass Config.FallbackDelay to the adapter's WithFallbackDelay); the harness declares at most %v, and the witness (this process's own timers, and round trips to the server when the harness probes it) fell %v behind meanwhile: retry fired late after a policy panic",
					what, n+1, late, n, late-want, want, counted, e.slack, lag)
				break
			}
			w.errorf("%s: run %d started %v after run %d ended, %v after its computed delay %v; the harness declares at most %v (resolution %v + lateness %v), and the witness (this process's own timers, and round trips to the server when the harness probes it) fell %v behind meanwhile: retry fired late",
				what, n+1, late, n, late-want, want, e.slack, e.lim.Resolution, e.lim.Lateness, lag)
		}
	}
}

// toldCounted reports whether the observer was told that the run counted
// as an attempt; a run it was told nothing about counts.
func (w *worker) toldCounted(r run) bool {
	if r.ev == nil {
		return true
	}
	w.wit.mu.Lock()
	defer w.wit.mu.Unlock()
	return r.ev.ends == 0 || r.ev.result.Counts()
}

// toldEndedCounted reports whether the observer was told that the run
// ended and counted as an attempt, whether or not its handler returned.
func (w *worker) toldEndedCounted(r run) bool {
	if r.ev == nil {
		return false
	}
	w.wit.mu.Lock()
	defer w.wit.mu.Unlock()
	return r.ev.ends > 0 && r.ev.result.Counts()
}

// recheck verifies, after a quiet period, that no job ran again and no
// terminal state changed.
func (w *worker) recheck(states map[string]State) {
	for _, j := range w.jobList() {
		before := states[j.id]
		runs, _ := w.runsWanted(j)
		if n := w.rec.count(j.id); n > runs && j.cancel == notCancelled && !j.s.Dep {
			// verify already said "ran n times"; say when.
			w.errorf("job %s ran again after it was reported %v: %d runs, want %d", j.id, before, n, runs)
		}
		if !j.terminalAt.IsZero() {
			for i, r := range w.rec.runs(j.id) {
				if r.start.After(j.terminalAt) {
					w.errorf("%s: run %d started %v after the job was seen %v; a job never runs again once terminal",
						j.what(), i+1, r.start.Sub(j.terminalAt), before)
				}
			}
		}
		st, err := w.eng.State(w.ctx(), j.id)
		if err == nil && before != StatePending && st != before {
			w.errorf("job %s was %v, then %v; a terminal state must not change", j.id, before, st)
		}
	}
}

// verifyReports checks what the error handler was told: each panic of a
// hostile policy reported once as *observe.PanicError{Op: "policy"}, what
// the check allows, and nothing else (anything else is a false alarm).
func (w *worker) verifyReports() {
	_, _, _, reports, _ := w.wit.snapshot()
	policy := 0
	for _, err := range reports {
		if pe := panicError(err); pe != nil && pe.Op == "policy" && w.policyPanics != nil {
			policy++
			continue
		}
		if w.allow != nil && w.allow(err) {
			continue
		}
		w.errorf("the error handler was told %q, though nothing went wrong here: a false alarm (want reports only of what really failed)",
			safe.Message(err))
	}
	if w.policyPanics == nil {
		return
	}
	if panics := int(w.policyPanics.Load()); policy != panics {
		hint := ""
		if policy == 0 && len(reports) == 0 {
			hint = "; the harness must pass Config.OnError to the adapter (WithErrorHandler)"
		}
		w.errorf("the policy panicked %d times and the error handler was told %d policy panics, want one *observe.PanicError{Op: \"policy\"} per panic%s",
			panics, policy, hint)
	}
}

// verifyBookkeeping polls a BookkeepingEngine until it holds no entries,
// once every job of the worker is terminal.
func (w *worker) verifyBookkeeping(states map[string]State) {
	for _, j := range w.jobList() {
		if states[j.id] == StatePending {
			return // entries for waiting jobs are the adapter's business
		}
	}
	var engines []BookkeepingEngine
	for _, p := range w.group() {
		if b, ok := p.eng.(BookkeepingEngine); ok {
			engines = append(engines, b)
		}
	}
	if len(engines) == 0 {
		return
	}
	for _, p := range w.group() {
		for _, j := range p.jobList() {
			if j.parked > 0 {
				return
			}
		}
	}
	grace := BookkeepingGrace + w.e.slack
	held := 0
	if w.waitFor(grace, func() bool {
		held = 0
		for _, b := range engines {
			held = max(held, b.Pending())
		}
		return held == 0
	}) {
		return
	}
	w.errorf("Pending() is still %d, %v after every job ended; want 0: entries kept per job must be dropped when the job ends (bookkeeping leaks)",
		held, grace)
}

// wallStep is how far the wall clock moved ahead of elapsed (monotonic)
// time from a to b, both read by time.Now: positive after a forward step
// of the system clock, 0 when either time has no monotonic reading.
func wallStep(a, b time.Time) time.Duration {
	wall := b.Round(0).Sub(a.Round(0))
	return wall - b.Sub(a)
}
