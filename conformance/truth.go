package conformance

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// verifyStory checks what the worker's observer and give-up hook were told
// against what the handler saw and the state the engine gave each job.
// Each attempt the observer was told about is tied to the handler's run by
// the context (see witness), so the story of a job is compared run by run.
func (w *worker) verifyStory(states map[string]State) {
	events, order, giveUps, _, problems := w.wit.snapshot()
	jobs := w.jobList()
	ids := make(map[string]bool, len(jobs))
	runsOf := make(map[string][]run, len(jobs))
	owner := map[*event]string{} // the job of each attempt, in this worker
	total, linked := 0, 0
	for _, j := range jobs {
		ids[j.id] = true
		rs := w.rec.runs(j.id)
		runsOf[j.id] = rs
		for i, r := range rs {
			total++
			if r.ev == nil || r.ev.w != w.wit {
				continue
			}
			linked++
			if prev, dup := owner[r.ev]; dup {
				w.errorf("the observer's context of one attempt reached two runs (job %s, and run %d of job %s); want a fresh AttemptStarted per run",
					prev, i+1, j.id)
			}
			owner[r.ev] = j.id
		}
	}
	if total == 0 {
		return
	}
	if len(order) == 0 {
		w.errorf("the observer was told about none of the %d runs: the harness must pass Config.Observer to the adapter (WithObserver), and the adapter must tell it every attempt",
			total)
		return
	}
	if linked == 0 {
		w.errorf("the handler never got the context Observer.AttemptStarted returned (%d runs, %d attempts told): the adapter must run the handler with that context",
			total, len(order))
		return
	}
	// Attempts of peers sharing the witness are theirs.
	peer := map[*event]bool{}
	for _, p := range w.group() {
		if p == w {
			continue
		}
		for _, j := range p.jobList() {
			for _, r := range p.rec.runs(j.id) {
				if r.ev != nil {
					peer[r.ev] = true
				}
			}
		}
	}
	// An attempt no run points to is attributed by its job ID, when only
	// this worker has such a job.
	mine := func(id string) bool {
		if !ids[id] {
			return false
		}
		for _, p := range w.group() {
			if p != w && p.job(id) != nil {
				return false
			}
		}
		return true
	}
	for _, ev := range order {
		if _, ok := owner[ev]; ok || peer[ev] {
			continue
		}
		a := events[ev].attempt
		switch {
		case mine(a.JobID):
			owner[ev] = a.JobID
		case w.peers == nil:
			w.errorf("the observer was told about attempt %d of job %q, which the suite never enqueued on this engine", a.Number, a.JobID)
		}
	}
	if w == w.group()[0] {
		for _, p := range problems {
			w.errorf("%s", p)
		}
	}
	byJob := map[string][]*event{}
	for ev, id := range owner {
		byJob[id] = append(byJob[id], ev)
	}
	gByJob := map[string][]giveUp{}
	for _, g := range giveUps {
		if g.ev != nil {
			if id, ok := owner[g.ev]; ok {
				gByJob[id] = append(gByJob[id], g)
				continue
			}
			if peer[g.ev] {
				continue
			}
		}
		id := g.g.Attempt.JobID
		switch {
		case mine(id):
			gByJob[id] = append(gByJob[id], g)
		case w.peers == nil:
			w.errorf("the give-up hook was called for job %q, which the suite never enqueued on this engine", id)
		case ids[id]:
			w.errorf("the give-up hook was called for job %q without the attempt's context; engines sharing the adapter both have such a job, so it cannot be told whose it is (call it with the context AttemptStarted returned)", id)
		}
	}
	failed := 0
	for _, j := range jobs {
		if states[j.id] == StateFailed && j.cancel != cancelledWaiting {
			failed++
		}
	}
	hooked := len(giveUps) > 0
	if failed > 0 && !hooked {
		w.errorf("the give-up hook was never called, though %d jobs failed for good: the harness must pass Config.GiveUp to the adapter (WithGiveUp)", failed)
	}
	for _, j := range jobs {
		evs := byJob[j.id]
		sort.SliceStable(evs, func(a, b int) bool { return events[evs[a]].startedAt.Before(events[evs[b]].startedAt) })
		w.storyOf(j, runsOf[j.id], evs, events, gByJob[j.id], states[j.id], hooked)
	}
}

// storyOf checks one job's story; evs are its attempts in the order they
// started.
func (w *worker) storyOf(j *job, runs []run, evs []*event, events map[*event]event, gs []giveUp, state State, hooked bool) {
	e := w.e
	what := j.what()
	runOf := map[*event]*run{}
	for i := range runs {
		r := &runs[i]
		if r.ev == nil || r.ev.w != w.wit {
			w.errorf("%s: run %d ran without the observer being told: AttemptStarted was not called, or its context not passed to the handler", what, i+1)
			continue
		}
		runOf[r.ev] = r
	}
	story := tell(evs, events)
	successes, gaveUps := 0, 0
	var last *event
	for k, p := range evs {
		ev := events[p]
		a := ev.attempt
		r := runOf[p]
		if a.JobID != j.id {
			w.errorf("%s: the observer was told job ID %q for one of its runs", what, a.JobID)
		}
		if r != nil && a.Number != r.reported {
			w.errorf("%s: the observer was told attempt %d for the run the handler got as Job.Attempt %d", what, a.Number, r.reported)
		}
		if c, ec := j.rule.MaxAttempts(), e.effCap(j.rule); a.MaxAttempts != c && a.MaxAttempts != ec {
			w.errorf("%s: the observer was told MaxAttempts %d for attempt %d, want the rule's cap %d", what, a.MaxAttempts, a.Number, ec)
		}
		if j.kind != "" && a.Kind != j.kind {
			w.errorf("%s: the observer was told Kind %q for attempt %d, want %q", what, a.Kind, a.Number, j.kind)
		}
		if k == 0 && a.Number != 1 {
			w.errorf("%s: the observer was told its first attempt is number %d, want 1", what, a.Number)
		}
		switch {
		case ev.ends == 0:
			if r == nil || r.ended {
				w.errorf("%s: AttemptEnded was never called for attempt %d (story %q)", what, a.Number, story)
			}
			continue
		case ev.ends > 1:
			w.errorf("%s: AttemptEnded was called %d times for attempt %d; want once (an attempt is ended once)", what, ev.ends, a.Number)
		}
		last = p
		res := ev.result
		success := res.Counting == observe.Counted && res.Err == nil
		if success {
			successes++
		}
		if res.GaveUp() {
			gaveUps++
		}
		switch res.Counting {
		case observe.Counted, observe.Interrupted:
		case observe.Snoozed:
			w.errorf("%s: attempt %d was told snoozed; the suite never snoozes a job", what, a.Number)
		case observe.Deferred:
			w.checkDeferred(what, j, a, r, res)
		default:
			w.errorf("%s: attempt %d was told Counting %d, which observe does not define", what, a.Number, res.Counting)
		}
		// A job the engine retries by itself is told the engine's decision
		// (EngineDecided), which the EngineDecision check holds it to.
		if res.Counting == observe.Counted && res.Err != nil && !known(res.Decision.Outcome) && !j.engine {
			w.errorf("%s: failed attempt %d was told without a decision (outcome %d); want retry, exhausted or permanent", what, a.Number, res.Decision.Outcome)
		}
		w.checkResult(what, j, a, r, ev, res, success)
		if k+1 >= len(evs) {
			continue
		}
		nx := events[evs[k+1]]
		nextStart := nx.startedAt
		if nr := runOf[evs[k+1]]; nr != nil {
			nextStart = nr.start
		}
		switch {
		case success:
			w.errorf("%s: the observer was told success for attempt %d, yet attempt %d followed (story %q)", what, a.Number, nx.attempt.Number, story)
		case res.GaveUp():
			w.errorf("%s: the observer was told %s for attempt %d, yet the job ran again (story %q)", what, res.Outcome(), a.Number, story)
		case res.Counts() && nx.attempt.Number != a.Number+1:
			w.errorf("%s: attempt %d counted (%s), so the next run is attempt %d, but the observer was told %d (story %q)",
				what, a.Number, res.Outcome(), a.Number+1, nx.attempt.Number, story)
		case !res.Counts() && nx.attempt.Number != a.Number:
			w.errorf("%s: attempt %d did not count (%s), so the next run keeps number %d, but the observer was told %d (story %q)",
				what, a.Number, res.Outcome(), a.Number, nx.attempt.Number, story)
		}
		// The FireAt of an attempt that did not count is checked only when
		// it was told before the next run began.
		if !res.FireAt.IsZero() && (res.Counts() || !ev.endedAt.After(nextStart)) && nextStart.Before(res.FireAt) {
			w.errorf("%s: attempt %d started %v before the FireAt the observer was told for attempt %d: the engine ran it earlier than it said",
				what, nx.attempt.Number, res.FireAt.Sub(nextStart), a.Number)
		}
		if res.Counts() && res.Decision.Retry() && !res.FireAt.IsZero() && !w.herd && !j.lateOK {
			if bound, lag := e.allow(res.FireAt, nextStart, true); nextStart.Sub(res.FireAt) > bound {
				w.errorf("%s: attempt %d started %v after the FireAt the observer was told for attempt %d; the harness declares at most %v, and the witness (this process's own timers, and round trips to the server when the harness probes it) fell %v behind meanwhile: the observer was told an earlier time than the engine applied",
					what, nx.attempt.Number, nextStart.Sub(res.FireAt), a.Number, e.slack, lag)
			}
		}
	}
	var lastRes observe.Result
	if last != nil {
		lastRes = events[last].result
	}
	switch state {
	case StateCompleted:
		if successes != 1 || lastRes.Counting != observe.Counted || lastRes.Err != nil {
			w.errorf("%s ended completed, but the observer's story is %q; want it to end with its one success", what, story)
		}
	case StateFailed:
		waited := j.cancel == cancelledWaiting && last != nil && lastRes.Counts() && lastRes.Decision.Retry()
		if !waited && !lastRes.GaveUp() {
			w.errorf("%s ended failed, but the observer's last word on it was %q (story %q); want exhausted or permanent",
				what, outcome(last, lastRes), story)
		}
	}
	if successes > 0 && state == StateFailed {
		w.errorf("%s is failed, but the observer was told a success (story %q)", what, story)
	}
	if gaveUps > 1 {
		w.errorf("%s: the observer was told the job gave up %d times (story %q); never a second exhausted", what, gaveUps, story)
	}
	if gaveUps > 0 && state == StateCompleted {
		w.errorf("%s completed, but the observer was told it gave up (story %q)", what, story)
	}
	if !hooked {
		return
	}
	switch {
	case state == StateFailed && j.cancel == cancelledWaiting:
		if len(gs) > 1 {
			w.errorf("%s: the give-up hook was called %d times for it, want at most once", what, len(gs))
		}
	case state == StateFailed:
		if len(gs) != 1 {
			w.errorf("%s failed for good, and the give-up hook was called %d times for it; want exactly once (story %q)", what, len(gs), story)
		}
	case len(gs) > 0:
		w.errorf("%s is %v, yet the give-up hook was called %d times for it; want it only for jobs that end exhausted or permanent (story %q)",
			what, state, len(gs), story)
	}
	for _, g := range gs {
		switch {
		case g.g.Attempt.JobID != j.id:
			w.errorf("%s: the give-up hook was told job ID %q", what, g.g.Attempt.JobID)
		case g.g.Outcome != backoff.OutcomeExhausted && g.g.Outcome != backoff.OutcomePermanent:
			w.errorf("%s: the give-up hook was told outcome %v, want exhausted or permanent", what, g.g.Outcome)
		case g.g.Err == nil:
			w.errorf("%s: the give-up hook was told no error; want the last attempt's", what)
		case lastRes.GaveUp() && (g.g.Outcome != lastRes.Decision.Outcome || g.g.Attempt.Number != events[last].attempt.Number):
			w.errorf("%s: the give-up hook was told %v at attempt %d, but the observer %v at attempt %d",
				what, g.g.Outcome, g.g.Attempt.Number, lastRes.Decision.Outcome, events[last].attempt.Number)
		}
	}
}

// checkDeferred checks an attempt told deferred by a breaker: only a job
// bound to a dependency may be held back, its handler must not have run,
// and the observer must be told the dependency and when the job runs
// again.
func (w *worker) checkDeferred(what string, j *job, a observe.Attempt, r *run, res observe.Result) {
	dep, bound := w.cfg.Dependencies[j.kind]
	if !bound || w.cfg.Breaker == nil {
		w.errorf("%s: attempt %d was told deferred, but the job is bound to no dependency: a breaker must leave jobs of other dependencies untouched", what, a.Number)
		return
	}
	if r != nil {
		w.errorf("%s: attempt %d was told deferred, but the handler ran for it: a deferred run does not run the handler", what, a.Number)
	}
	var de *observe.DeferredError
	if !errors.As(res.Err, &de) || de.Dependency != dep {
		w.errorf("%s: attempt %d was told deferred with error %v, want an *observe.DeferredError naming dependency %q", what, a.Number, res.Err, dep)
	}
	if res.FireAt.IsZero() {
		w.errorf("%s: attempt %d was told deferred without FireAt, want when the job runs again", what, a.Number)
	}
}

// checkResult compares one attempt's result with the handler's run.
func (w *worker) checkResult(what string, j *job, a observe.Attempt, r *run, ev event, res observe.Result, success bool) {
	e := w.e
	if r == nil {
		if res.Counts() {
			w.errorf("%s: the observer was told attempt %d %s, but the handler never ran for it; an attempt that did not run must not count",
				what, a.Number, res.Outcome())
		}
		return
	}
	if !r.ended {
		return
	}
	switch {
	case r.err != nil && success:
		w.errorf("%s: run of attempt %d failed (%s), but the observer was told success", what, a.Number, safe.Message(r.err))
	case r.err == nil && r.overran && success:
		w.errorf("%s: attempt %d outlived its timeout (it returned %v after its deadline) and the engine counts that as a failure, but the observer was told success",
			what, a.Number, r.end.Sub(r.deadline))
	case r.err == nil && r.stale && success:
		w.errorf("%s: attempt %d was reclaimed while it ran; its late success must not be applied, but the observer was told success", what, a.Number)
	case r.err == nil && !r.overran && !r.stale && !r.interrupt && !r.discarded && !success:
		w.errorf("%s: attempt %d succeeded, but the observer was told %s", what, a.Number, res.Outcome())
	}
	if r.overran && res.Counting != observe.Counted {
		w.errorf("%s: attempt %d outlived its timeout; the observer was told %s, want a counted failure", what, a.Number, res.Outcome())
	}
	if r.interrupt && res.Counting != observe.Interrupted {
		w.errorf("%s: attempt %d was cut short by a restart; the observer was told %s, want interrupted (observe.Interrupted: not a failure, not a success)",
			what, a.Number, res.Outcome())
	}
	if r.panicked && res.Err != nil {
		if pe := panicError(res.Err); pe == nil || pe.Op != "handler" {
			w.errorf("%s: attempt %d panicked, and the observer was told an error of type %T; want an *observe.PanicError{Op: \"handler\"}",
				what, a.Number, res.Err)
		}
	}
	if res.Counting != observe.Counted || res.Err == nil {
		return
	}
	switch res.Decision.Outcome {
	case backoff.OutcomeExhausted:
		if c := e.effCap(j.rule); a.Number < c {
			w.errorf("%s: the observer was told exhausted at attempt %d, below the cap %d", what, a.Number, c)
		}
		return
	case backoff.OutcomePermanent:
		// An operator's cancel that ends the job counts as permanent too.
		if permanent, _ := safe.Value("conformance", false, func() bool { return backoff.IsPermanent(r.err) }); !permanent && j.cancel == notCancelled {
			w.errorf("%s: the observer was told permanent for attempt %d, whose error (%s) is not marked backoff.Permanent", what, a.Number, safe.Message(r.err))
		}
		return
	case backoff.OutcomeRetry:
	default:
		return
	}
	if res.FireAt.IsZero() {
		w.errorf("%s: attempt %d was told a retry without FireAt", what, a.Number)
		return
	}
	// The decision is made after the run returned (or at its deadline, or,
	// for a run reclaimed while it ran, at the reclaim) and before the
	// observer is told; FireAt is that moment plus the delay, rounded up
	// by less than the resolution.
	d := e.effDelay(res.Decision.Delay)
	base := r.end
	switch {
	case r.stale:
		base = r.start
	case r.overran && r.deadline.Before(base):
		base = r.deadline
	}
	lo, hi := base.Add(d).Add(-e.lim.Resolution), ev.endedAt.Add(d).Add(e.lim.Resolution)
	if res.FireAt.Before(lo) || res.FireAt.After(hi) {
		w.errorf("%s: attempt %d was told delay %v and FireAt %v after the run returned; they disagree: want FireAt at the decision plus the delay (between %v and %v after the run returned)",
			what, a.Number, res.Decision.Delay, res.FireAt.Sub(r.end), lo.Sub(r.end), hi.Sub(r.end))
	}
}

// known reports whether o is an outcome a failed attempt can have.
func known(o backoff.Outcome) bool {
	return o == backoff.OutcomeRetry || o == backoff.OutcomeExhausted || o == backoff.OutcomePermanent
}

// panicError returns the *observe.PanicError in err's chain, or nil. It
// survives hostile errors.
func panicError(err error) *observe.PanicError {
	pe, _ := safe.Value("conformance", (*observe.PanicError)(nil), func() *observe.PanicError {
		var pe *observe.PanicError
		if errors.As(err, &pe) {
			return pe
		}
		return nil
	})
	return pe
}

// tell returns the story of the attempts: "1 retry 20ms, 2 exhausted".
func tell(evs []*event, events map[*event]event) string {
	var parts []string
	for _, p := range evs {
		parts = append(parts, outcome(p, events[p].result))
		if ev := events[p]; ev.ends == 0 {
			parts[len(parts)-1] = fmt.Sprintf("%d running", ev.attempt.Number)
		} else {
			parts[len(parts)-1] = fmt.Sprintf("%d %s", ev.attempt.Number, parts[len(parts)-1])
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// outcome names a result for stories.
func outcome(p *event, r observe.Result) string {
	switch {
	case p == nil:
		return "nothing"
	case r.Counting == observe.Counted && r.Err != nil && r.Decision.Retry():
		return fmt.Sprintf("retry %v", r.Decision.Delay)
	}
	return r.Outcome()
}
