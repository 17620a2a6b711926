package conformance

import (
	"context"
	"strings"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// checkLookAlike runs jobs that look alike: one kind (the harness's
// default, so one task type or job name) and byte-identical, empty
// payloads, enqueued together. The suite tells them apart only by the ID
// Enqueue returned and the handler is given, and scripts each by that ID:
// they fail with different errors (plain, retry-after hints, permanent,
// panics) and end differently (completed after one or two retries,
// exhausted, permanent), under full jitter keyed by the ID, so each has
// a schedule of its own. Each run holds for a while first, the first
// enqueued the longest, so that their runs overlap and end in another
// order than they started. A second worker runs look-alike jobs that
// outlive Config.Timeout together (the engine's timeout ends several
// runs' contexts at once). Each job's runs, and what the observer and
// the give-up hook were told about it, must be its own: its attempt
// numbers, the delay the rule gives its own key for each attempt, its
// outcome. An adapter that finds "the" run of an ending attempt by what
// the engine hands back about the job's content (type and payload) swaps
// them.
func checkLookAlike(e *env) {
	p := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(4*unit, 16*unit))))
	w := e.start("look-alike", e.rule(p, 3))
	w.allow = w.allowUpTo(3, func(err error) bool {
		pe := panicError(err)
		return pe != nil && pe.Op == "handler"
	})
	hint := max(8*unit, 2*e.lim.Resolution)
	scripts := []script{
		{Always: true},
		{Fail: 1},
		{Permanent: true},
		{Fail: 2, After: hint},
		{Fail: 1, Panic: true},
		{},
		{Fail: 2},
		{Always: true, Panic: true},
	}
	for k, s := range scripts {
		s.Hold = time.Duration(len(scripts)-k) * unit / 4
		w.enqueueAlike("", s)
	}
	timeout, overrun := timeouts(e.lim)
	tp := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(2*unit, 8*unit))))
	tw := e.start("look-alike timeouts", e.rule(tp, 2), func(c *Config) { c.Timeout = timeout })
	for _, s := range []script{
		{Fail: 1, Overrun: overrun},
		{Always: true, Overrun: overrun, OverrunErr: true},
		{Fail: 1, Overrun: overrun, OverrunErr: true},
		{},
	} {
		tw.enqueueAlike("", s)
	}
	cw := lookAlikeCancels(e)
	states, tstates := w.settle(), tw.settle()
	w.drain(states)
	w.verifyToldDecisions()
	w.verify(states)
	tw.drain(tstates)
	tw.verifyToldDecisions()
	tw.verify(tstates)
	if cw != nil {
		cstates := cw.settle()
		cw.drain(cstates)
		cw.verifyToldDecisions()
		cw.verify(cstates)
	}
}

// lookAlikeCancels starts the LookAlike check's third worker, when the
// engine offers CancelEngine (the Cancel check says when it does not):
// look-alike jobs block on their first run and are cancelled with the
// engine's tool in the reverse of the order they started, so that an
// adapter that finds the run of a cancelled attempt by what the engine
// hands back about the job's content, oldest first, finds another job's.
// Each job's second run succeeds. It returns nil without CancelEngine.
func lookAlikeCancels(e *env) *worker {
	p := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(4*unit, 16*unit))))
	cw := e.start("look-alike cancels", e.rule(p, 3))
	ce, ok := cw.eng.(CancelEngine)
	if !ok {
		return nil
	}
	var ids []string
	for range 4 {
		if id := cw.enqueueAlike("", script{Fail: 1, Block: true}); id != "" {
			cw.job(id).cancel = cancelledRunning
			ids = append(ids, id)
		}
	}
	if !cw.waitFor(10*time.Second, func() bool {
		for _, id := range ids {
			if !cw.started(id, 0) {
				return false
			}
		}
		return true
	}) {
		cw.errorf("the look-alike jobs %v did not all start within 10s; want the worker to run them at once", ids)
		return cw
	}
	for i := len(ids) - 1; i >= 0; i-- {
		if err := ce.Cancel(cw.ctx(), ids[i]); err != nil {
			cw.errorf("Cancel(%s) of a running look-alike job: %v", ids[i], err)
		}
		// One at a time, so the engine ends them in this order.
		cw.waitFor(2*time.Second+e.slack, func() bool { return cw.finished(ids[i], 0) })
		time.Sleep(unit)
	}
	return cw
}

// verifyToldDecisions checks that every counted failed attempt of every
// job was told the decision the rule makes for that job: its own key
// (backoff.Key(ID)), its own attempt number and error. A retry's told
// delay is the rule's, rounded up by less than the engine's resolution
// (exactly the rule's when the harness declares exact resolution); an
// exhausted or permanent attempt is told that outcome. verify holds the
// fire times and the real gaps to the same delays; this names the
// decision that was someone else's. Jobs whose end is the engine's
// (cancelled, engine-retried, bound to a dependency, reclaimed) are not
// judged here.
func (w *worker) verifyToldDecisions() {
	e := w.e
	events, _, _, _, _ := w.wit.snapshot()
	for _, j := range w.jobList() {
		if j.engine || j.cancel == cancelledWaiting || j.s.Dep || j.s.Stale || j.parked > 0 {
			continue
		}
		counted := 0
		for i, r := range w.rec.runs(j.id) {
			if r.interrupt {
				continue
			}
			if !r.ended {
				// verify says the run never returned; a run the engine
				// ended and counted meanwhile still numbers the next.
				if w.toldEndedCounted(r) {
					counted++
				}
				continue
			}
			ev, ok := events[r.ev]
			if r.ev == nil || !ok || ev.ends == 0 {
				counted++ // verify says what is missing
				continue
			}
			res := ev.result
			if !res.Counts() {
				continue
			}
			counted++
			if res.Err == nil {
				continue
			}
			err := r.err
			if r.overran && err == nil {
				err = context.DeadlineExceeded
			}
			want, _ := w.decide(j, counted, err)
			got := res.Decision
			if j.cancel == cancelledRunning && (r.discarded || !got.Retry()) {
				// The cancel's end is the engine's (CancelStory); a retry
				// the engine makes of it is the rule's, for this job.
				if !got.Retry() || !want.Retry() {
					continue
				}
			}
			switch {
			case got.Outcome != want.Outcome:
				w.errorf("%s: run %d (attempt %d, %s) was told %s, but the rule decides %s for this job's attempt %d: was another job's decision told?",
					j.what(), i+1, ev.attempt.Number, errText(err), outcome(r.ev, res), outcome(r.ev, observe.Result{Err: err, Decision: want}), counted)
			case !want.Retry():
			case got.Delay < e.effDelay(want.Delay) ||
				(e.lim.Resolution == 0 && got.Delay != e.effDelay(want.Delay)) ||
				(e.lim.Resolution > 0 && got.Delay-e.effDelay(want.Delay) >= e.lim.Resolution):
				w.errorf("%s: run %d (attempt %d) was told a retry after %v, but the rule gives this job (backoff.Key(%q)) %v for attempt %d (rounded up by less than the resolution %v at most): was another job's delay told?",
					j.what(), i+1, ev.attempt.Number, got.Delay, j.id, e.effDelay(want.Delay), counted, e.lim.Resolution)
			}
		}
	}
}

// errText names an error for a violation, briefly and safely.
func errText(err error) string {
	msg := safe.Message(err)
	if len(msg) > 80 {
		msg = strings.ToValidUTF8(msg[:80], "") + "..."
	}
	return msg
}
