package conformance

import (
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// timeouts returns the Timeout check's Config.Timeout, at least twice the
// engine's TimeoutResolution and at least 80 ms, and how long its
// overrunning handlers run: half as long again, so they are well past the
// deadline.
func timeouts(lim Limits) (timeout, overrun time.Duration) {
	timeout = max(2*lim.TimeoutResolution, 4*unit)
	return timeout, timeout + max(timeout/2, 2*unit)
}

// checkTimeout runs jobs under Config.Timeout whose handlers ignore their
// context and outlive the deadline, returning nil or an error late. Every
// overrun is exactly one counted failed attempt, whatever the handler
// returned: retried under the rule, the next attempt numbered after it, a
// job that overruns every run exhausted once. What the observer is told
// must be what the engine applied. A handler's context must carry the
// deadline, and a handler that returns in time succeeds. An engine may end
// the attempt at its deadline and run the job again while the handler
// still runs: a job alone on a worker of its own overruns once and then
// succeeds, so an engine that moves on completes it before the first run
// returns, and the suite must wait for that run before it judges the
// story (the Mix met this by chance on the native queue).
func checkTimeout(e *env) {
	timeout, overrun := timeouts(e.lim)
	rule := e.rule(backoff.Must(backoff.Fixed(unit)), 2)
	first := e.start("timeout, then done before the overrun returns", rule, func(c *Config) { c.Timeout = timeout })
	first.enqueue(script{Fail: 1, Overrun: overrun})
	w := e.start("timeout", rule, func(c *Config) { c.Timeout = timeout })
	w.enqueue(script{Fail: 1, Overrun: overrun})
	w.enqueue(script{Always: true, Overrun: overrun})
	w.enqueue(script{Always: true, Overrun: overrun, OverrunErr: true})
	w.enqueue(script{})
	first.verify(first.settle())
	w.verify(w.settle())
	w.checkDeadlines(timeout)
	first.checkDeadlines(timeout)
}

// checkDeadlines checks that every run of the worker's jobs had a context
// deadline of at most timeout (plus the declared TimeoutResolution) after
// it started.
func (w *worker) checkDeadlines(timeout time.Duration) {
	e := w.e
	limit := timeout + e.lim.TimeoutResolution
	for _, j := range w.jobList() {
		for i, r := range w.rec.runs(j.id) {
			switch {
			case r.deadline.IsZero():
				w.errorf("job %s: run %d: the handler's context has no deadline; want Config.Timeout (%v) applied to every attempt", j.id, i+1, timeout)
				return
			case r.deadline.Sub(r.start) > limit:
				w.errorf("job %s: run %d: the handler's context deadline is %v after it started, want at most Config.Timeout %v (plus the declared TimeoutResolution %v)",
					j.id, i+1, r.deadline.Sub(r.start), timeout, e.lim.TimeoutResolution)
				return
			}
		}
	}
}

// checkCancel cancels, with the engine's own operator tool (CancelEngine),
// a job whose handler is running (blocked until its context is done), a
// job waiting for its retry, and one shortly before its retry's fire time. Cancelling the running job must cancel its
// handler's context. Whatever state the engine then gives each job, what
// the observer and the give-up hook were told must match it (a job that
// ends failed was told exhausted or permanent, and given up once; the
// waiting job, cancelled between attempts, may have been told nothing
// more), and a job that is terminal never runs again. Other jobs keep
// running.
func checkCancel(e *env) {
	long := max(15*unit, 2*e.lim.Resolution+e.slack)
	w := e.start("cancel", e.rule(backoff.Must(backoff.Fixed(unit)), 3))
	ce, ok := w.eng.(CancelEngine)
	if !e.need(FeatureCancel, ok, "Cancel cancels a running or waiting job with the engine's operator tool") {
		return
	}
	running := w.enqueue(script{Fail: 1, Block: true})
	waiting := w.enqueue(script{Fail: 1, After: long})
	due := w.enqueue(script{Fail: 1, After: long})
	if running == "" || waiting == "" || due == "" {
		return
	}
	w.job(running).cancel = cancelledRunning
	w.job(waiting).cancel = cancelledWaiting
	w.job(due).cancel = cancelledWaiting
	if !w.waitFor(10*time.Second, func() bool { return w.started(running, 0) }) {
		w.errorf("job %s never started", running)
	}
	if err := ce.Cancel(w.ctx(), running); err != nil {
		w.errorf("Cancel(%s) of a running job: %v", running, err)
	}
	// Cancel the others once they failed and the observer was told: they
	// wait for their retries. One at once; the other shortly before its
	// fire time, when an engine that holds a job before running it (a
	// precise wait for the exact fire time) may have it in hand.
	w.waitFor(10*time.Second, func() bool { return w.finished(waiting, 0) && w.finished(due, 0) && w.wit.unended() == 0 })
	if err := ce.Cancel(w.ctx(), waiting); err != nil {
		w.errorf("Cancel(%s) of a waiting job: %v", waiting, err)
	}
	if fire := w.firesAt(due); !fire.IsZero() {
		time.Sleep(time.Until(fire.Add(-min(200*time.Millisecond, long/4))))
	}
	if err := ce.Cancel(w.ctx(), due); err != nil {
		w.errorf("Cancel(%s) of a job about to run: %v", due, err)
	}
	w.enqueueN(2, script{Fail: 1})
	states := w.settle()
	// Past the cancelled jobs' old fire times, nothing may have run.
	for _, id := range []string{waiting, due} {
		if runs := w.rec.runs(id); len(runs) > 0 && runs[0].ended {
			time.Sleep(time.Until(runs[0].end.Add(long + e.slack + 20*time.Millisecond)))
		}
	}
	w.verify(states)
	w.recheck(states)
	if runs := w.rec.runs(running); len(runs) > 0 && runs[0].err == errNotCancelled {
		w.errorf("job %s: Cancel did not cancel the running attempt's context within %v; want the handler's context cancelled", running, blockBound)
	}
}

// checkRestart restarts the worker (RestartEngine) while a handler is
// blocked on its context and another job waits for its retry. The blocked
// run must be cut short and reported as interrupted (observe.Interrupted:
// not a failure, not a success), and the job must run again with the same
// attempt number and complete; the waiting job keeps its fire time (never
// early; a restart may make it late); the new worker serves new jobs.
func checkRestart(e *env) {
	w := e.start("restart", e.rule(backoff.Must(backoff.Fixed(unit)), 3))
	re, ok := w.eng.(RestartEngine)
	if !e.need(FeatureRestart, ok, "Restart shuts the worker down as a deploy does and starts a fresh one") {
		return
	}
	cut := w.enqueue(script{Fail: 1, Block: true})
	waiting := w.enqueue(script{Fail: 1, After: max(6*unit, 2*e.lim.Resolution)})
	if cut == "" || waiting == "" {
		return
	}
	w.job(waiting).lateOK = true
	if !w.waitFor(10*time.Second, func() bool { return w.started(cut, 0) && w.finished(waiting, 0) }) {
		w.errorf("jobs %s and %s did not start", cut, waiting)
	}
	w.rec.mark(cut, 0, func(r *run) { r.interrupt = true })
	if err := re.Restart(w.ctx()); err != nil {
		w.errorf("Restart: %v", err)
	}
	w.enqueue(script{})
	w.enqueue(script{Fail: 1})
	w.verify(w.settle())
	if runs := w.rec.runs(cut); len(runs) > 0 && runs[0].err == errNotCancelled {
		w.errorf("job %s: Restart did not cut the running handler short within %v; want its context cancelled (a short shutdown timeout)", cut, blockBound)
	}
}

// checkReclaim has the engine take a running job back as if its worker had
// died (ReclaimEngine, optional), while the stale handler still runs. The
// job runs again and fails permanently; then the stale handler returns a
// success. That late outcome must not change the job's state, and must not
// be reported to the observer as a success or as a decision the engine did
// not apply. The error handler may be told that the lease was lost, by the
// side that reclaimed the job and by the stale worker.
func checkReclaim(e *env) {
	w := e.start("reclaim", e.rule(backoff.Must(backoff.Fixed(unit)), 3))
	rc, ok := w.eng.(ReclaimEngine)
	if !ok {
		e.t.Logf("conformance: skipped: harness %s's engine does not implement ReclaimEngine (optional)", e.h.Name())
		w.rec.release()
		return
	}
	// The lost lease may be reported by the side that reclaimed the job
	// and by the stale worker when it finds out.
	w.allow = w.allowUpTo(2, func(err error) bool { return panicError(err) == nil })
	id := w.enqueue(script{Stale: true})
	if id == "" {
		return
	}
	defer w.rec.release()
	if !w.waitFor(10*time.Second, func() bool { return w.started(id, 0) }) {
		w.errorf("job %s never started", id)
	}
	w.rec.mark(id, 0, func(r *run) { r.stale = true })
	if err := rc.Reclaim(w.ctx(), id); err != nil {
		w.errorf("Reclaim(%s): %v", id, err)
	}
	if !w.waitFor(w.budget(w.job(id))-blockBound, func() bool { return w.finished(id, 1) }) {
		w.errorf("job %s did not run again after Reclaim; want the engine to run a reclaimed job again", id)
	}
	states := w.settle()
	w.rec.release()
	w.waitFor(10*time.Second, func() bool { return w.finished(id, 0) })
	// Give a wrongly applied late outcome time to show.
	time.Sleep(e.slack + 5*unit)
	w.verify(states)
	w.recheck(states)
}
