package conformance

import (
	"time"
)

// pollInterval is how often the suite asks the engine for states.
func (w *worker) pollInterval() time.Duration {
	return min(max(w.e.slack/4, 2*time.Millisecond), 50*time.Millisecond)
}

// waitFor polls cond until it holds or d passes, and reports whether it
// held.
func (w *worker) waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(w.pollInterval())
	}
}

// started reports whether run i (0-based) of the job has started.
func (w *worker) started(id string, i int) bool { return w.rec.count(id) > i }

// finished reports whether run i (0-based) of the job has returned.
func (w *worker) finished(id string, i int) bool {
	runs := w.rec.runs(id)
	return len(runs) > i && runs[i].ended
}

// settle waits until every job of the worker that is not parked is
// terminal, or until its budget runs out, and returns the states. A job
// still pending at the end, or a State error, is a violation.
func (w *worker) settle() map[string]State {
	var timeout time.Duration
	var pending []*job
	for _, j := range w.jobList() {
		if j.parked == 0 {
			timeout = max(timeout, w.budget(j))
			pending = append(pending, j)
		}
	}
	return w.settleJobs(pending, timeout, "want it completed or failed by now")
}

// settleJobs waits until every job of pending is terminal, or until
// timeout passes, and returns their states. A job still pending at the
// end is a violation, saying want; so is a State error.
func (w *worker) settleJobs(pending []*job, timeout time.Duration, want string) map[string]State {
	ctx := w.e.t.Context()
	deadline := time.Now().Add(timeout)
	states := make(map[string]State, len(pending))
	var lastFull time.Time
	for {
		// A job whose recorded runs are not all done yet is asked about
		// only in a full sweep, once a second (still soon enough to catch
		// an engine that ends a job too early), so that a waiting cohort
		// does not load the engine it is measuring.
		full := time.Since(lastFull) >= time.Second
		if full {
			lastFull = time.Now()
		}
		var still []*job
		for _, j := range pending {
			if !full && !w.looksDone(j) {
				still = append(still, j)
				continue
			}
			st, err := w.eng.State(ctx, j.id)
			if err != nil {
				// Reported once; the job's runs are still verified.
				w.errorf("State(%s): %v; want the state of every job the suite enqueued, until the worker stops (keep finished jobs, e.g. with a retention period)",
					j.id, err)
				states[j.id] = StatePending
				continue
			}
			states[j.id] = st
			if st == StatePending {
				still = append(still, j)
				continue
			}
			w.mu.Lock()
			j.terminalAt = time.Now()
			w.mu.Unlock()
		}
		pending = still
		if len(pending) == 0 {
			return states
		}
		if !time.Now().Before(deadline) {
			for _, j := range pending {
				w.errorf("%s is still pending after %d runs and %v of waiting; %s",
					j.what(), w.rec.count(j.id), timeout, want)
			}
			return states
		}
		time.Sleep(w.pollInterval())
	}
}

// looksDone reports whether the job has run as often as its script says
// and its last run has returned.
func (w *worker) looksDone(j *job) bool {
	want, _ := w.runsWanted(j)
	runs := w.rec.runs(j.id)
	if j.s.Dep {
		return len(runs) > 0 && runs[len(runs)-1].ended && runs[len(runs)-1].err == nil
	}
	return len(runs) >= want && runs[len(runs)-1].ended
}

// drain waits, within a bound, until the witness has been told the end of
// every attempt it was told the start of, and of a give-up for every job
// that failed, and until every run the handler started has returned, so
// that the story is complete before it is compared: adapters tell
// observers after the engine applied the outcome, which the suite may
// already have seen, and an engine may end an attempt at its timeout's
// deadline and run the job again, even to its end, while the handler that
// ignores its context still runs (the native queue does; Config.Timeout
// promises a counted failure, not a wait for the handler). The bound
// covers the longest overrun a script asks for.
func (w *worker) drain(states map[string]State) {
	failed := 0
	var overrun time.Duration
	jobs := w.jobList()
	for _, j := range jobs {
		if states[j.id] == StateFailed && j.cancel != cancelledWaiting {
			failed++
		}
		overrun = max(overrun, j.s.Hold+j.s.overrun())
	}
	w.waitFor(max(2*time.Second, 2*w.e.slack)+overrun, func() bool {
		w.wit.mu.Lock()
		gave := len(w.wit.giveUps)
		w.wit.mu.Unlock()
		if w.wit.unended() != 0 || gave < failed {
			return false
		}
		for _, j := range jobs {
			for _, r := range w.rec.runs(j.id) {
				if !r.ended {
					return false
				}
			}
		}
		return true
	})
}

// quiet waits long enough for a retry the engine should not have scheduled
// to show up: the policy's longest delay plus the allowed lateness.
func (w *worker) quiet() {
	time.Sleep(min(w.rule.Policy().Max(), time.Minute) + w.e.slack + 20*time.Millisecond)
}
