package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/guard"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// run runs one attempt of j and applies what follows. The caller has done
// e.wg.Add(1) for it.
func (e *refEngine) run(j *refJob) {
	defer e.wg.Done()
	a, fault := e.a, e.a.h.fault
	e.mu.Lock()
	runnable := j.state == StatePending || (fault == faultCancelRuns && j.cancelled)
	if e.closed || e.dead || !runnable || j.cur != nil {
		e.mu.Unlock()
		return
	}
	j.timer = nil
	n := j.attempts + 1
	ctx, cancel := context.WithCancelCause(e.ctx)
	defer cancel(nil)
	attemptCtx := ctx
	if t := a.timeout(); t > 0 {
		var stop context.CancelFunc
		attemptCtx, stop = context.WithTimeout(ctx, t)
		defer stop()
	}
	r := &refRun{cancel: cancel, done: make(chan struct{})}
	defer close(r.done)
	j.cur = r
	rule := a.rule(j.kind)
	carrier := maps.Clone(j.meta) // the attempt's own copy, written back when it ends
	att := observe.Attempt{System: "reference", Queue: e.queue, JobID: j.id, Kind: j.kind, Number: n,
		MaxAttempts: a.maxAttempts(rule), Carrier: carrier}
	j.last = att
	e.mu.Unlock()
	a.hold(e, j.id)

	reported := n
	if fault == faultAttemptOffBy1 {
		reported = n - 1
	}
	payload := bytes.Clone(j.payload)
	if fault == faultMangle {
		payload = append(payload, ' ')
		payload[0] = '['
	}
	octx := a.n.Started(attemptCtx, att)
	e.mu.Lock()
	r.octx, r.att = octx, att
	e.mu.Unlock()
	if fault == faultMatchByPayload {
		r.open = a.openRun(j.payload, refOpen{id: j.id, n: n, octx: octx, att: att})
	}
	pass, held := e.ask(j, r, octx, att)
	if held {
		return
	}
	hctx := octx
	if fault == faultHandlerOffContext {
		hctx = attemptCtx
	}
	herr, perr := e.call(hctx, attemptCtx, ctx, Job{ID: j.id, Attempt: reported, Payload: payload})
	err := herr
	if perr != nil {
		err = perr
	}
	timedOut := attemptCtx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	if timedOut {
		err = fmt.Errorf("conformance: reference: the attempt outlived its timeout %v: %w", a.timeout(), context.DeadlineExceeded)
	}
	e.mu.Lock()
	neutral := r.why != nil || r.stale || e.ctx.Err() != nil || (fault == faultBreakerNeverCloses && err == nil)
	e.mu.Unlock()
	a.g.Done(octx, pass, err, neutral)
	if fault == faultEndedOffContext {
		octx = attemptCtx
	}
	e.conclude(j, r, octx, att, n, err, herr, perr != nil, timedOut)
}

// call runs the handler for one attempt and returns what it returned and
// what it panicked with. With movesOn set, an attempt whose timeout
// (attemptCtx's deadline) passes while the handler still runs ends at the
// deadline, as the native queue's do: call returns two nils at once (the
// caller reads the timeout from attemptCtx), and the handler's late return
// is dropped. A cancel or a shutdown (ctx ending) still waits for the
// handler, as without movesOn.
func (e *refEngine) call(hctx, attemptCtx, ctx context.Context, job Job) (herr, perr error) {
	body := func() (herr, perr error) {
		perr = safe.Call("handler", func() { herr = e.handler(hctx, job) })
		return herr, perr
	}
	if _, ok := attemptCtx.Deadline(); !ok || !e.a.h.movesOn {
		return body()
	}
	type result struct{ herr, perr error }
	done := make(chan result, 1)
	e.wg.Add(1) // Close waits for the abandoned handler too
	go func() {
		defer e.wg.Done()
		herr, perr := body()
		done <- result{herr, perr}
	}()
	select {
	case r := <-done:
		return r.herr, r.perr
	case <-attemptCtx.Done():
	}
	if attemptCtx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		return nil, nil
	}
	r := <-done
	return r.herr, r.perr
}

// ask asks the breaker, for a job bound to a dependency, whether its run
// may start. A run held back is put back without spending an attempt, to
// run again after the deferral, and told to the observer as deferred;
// held reports it.
func (e *refEngine) ask(j *refJob, r *refRun, octx context.Context, att observe.Attempt) (p guard.Pass, held bool) {
	a, fault := e.a, e.a.h.fault
	e.mu.Lock()
	id, rerun := j.id, j.attempts > 0 || j.deferrals > 0
	e.mu.Unlock()
	if fault == faultBreakerFlood {
		id, rerun = "", false
	}
	p = a.g.Ask(octx, j.kind, id, rerun)
	if !p.Deferred() {
		return p, false
	}
	d, res := a.g.Deferral(octx, p)
	a.dropRun(j.payload, r.open)
	e.mu.Lock()
	j.cur = nil
	j.deferrals++
	if fault == faultBreakerSpends {
		j.attempts++
	}
	if !e.closed && !e.dead {
		e.schedule(j, d)
	}
	e.mu.Unlock()
	a.release(e, j.id)
	a.n.Ended(octx, att, res)
	return p, true
}

// conclude applies the outcome of attempt n of j and tells the observer.
// herr is what the handler returned; err is the attempt's error as the
// engine records it.
func (e *refEngine) conclude(j *refJob, r *refRun, octx context.Context, att observe.Attempt, n int, err, herr error, panicked, timedOut bool) {
	a, fault := e.a, e.a.h.fault
	e.mu.Lock()
	// A copy: the observer may still write the attempt's carrier when it
	// is told how the attempt ended, while the next attempt copies j.meta.
	j.meta = maps.Clone(att.Carrier.(observe.MapCarrier))
	why, stale := r.why, r.stale
	if fault == faultInterruptCounted && why == errShutdown {
		why = nil
	}
	e.mu.Unlock()

	if stale || why == errShutdown || e.ctx.Err() != nil {
		a.dropRun(j.payload, r.open)
	}
	switch {
	case stale:
		res := observe.Result{Err: errLeaseLost, Counting: observe.Interrupted}
		e.mu.Lock()
		told := r.told
		if fault == faultStaleApplied && err == nil {
			j.state, res = StateCompleted, observe.Result{}
		}
		e.mu.Unlock()
		if told {
			// The reclaim ended the attempt for the observer already.
			a.release(e, j.id)
			a.n.Report(fmt.Errorf("job %s attempt %d: %w", j.id, n, errLeaseLost))
			return
		}
		a.release(e, j.id)
		if res.Counting == observe.Interrupted {
			a.n.Report(fmt.Errorf("job %s attempt %d: %w", j.id, n, errLeaseLost))
		}
		a.n.Ended(octx, att, res)
		return
	case why == errShutdown || e.ctx.Err() != nil:
		// Cut short by a restart (or the engine stopping): put back as it
		// was, to run again at once without using up an attempt.
		e.mu.Lock()
		j.cur = nil
		if why == errShutdown && !e.closed {
			e.wg.Add(1)
			go e.run(j)
		}
		e.mu.Unlock()
		a.release(e, j.id)
		a.n.Ended(octx, att, observe.Result{Err: err, Counting: observe.Interrupted, FireAt: time.Now()})
		return
	}

	// Whose attempt this is, as the adapter finds it: its own, unless the
	// adapter matches runs by their payload and another look-alike run is
	// older (the planted defect).
	id, dn := j.id, n
	if fault == faultMatchByPayload {
		if who := a.claimRun(j.payload); who != nil {
			id, dn, octx, att = who.id, who.n, who.octx, who.att
		}
	}
	var dec backoff.Decision
	var policyPanicked bool
	engineDecided := false
	switch {
	case why == errCancelled && fault == faultCancelUntyped:
		err = fmt.Errorf("%w (the attempt returned %s)", errCancelled, safe.Message(err))
		dec = backoff.Decision{Outcome: backoff.OutcomePermanent}
	case why == errCancelled:
		// Told as every adapter tells the engine's cancel: the text the
		// engine stores, typed.
		err = &observe.CancelledError{Engine: a.text(errCancelled), Cause: errCancelled}
		dec = backoff.Decision{Outcome: backoff.OutcomePermanent}
	case err != nil && j.own && n < a.maxAttempts(a.rule(j.kind)):
		// The engine retries the job by itself; the adapter is not asked.
		engineDecided = true
	case err != nil:
		dec, policyPanicked = a.decide(e, id, j.kind, dn, err)
	}
	readable := errorText(err)
	var text string
	if err != nil {
		// Outside the lock: reading a megabyte of text takes a while, and
		// other jobs' timers must not wait for it.
		text = a.text(err)
	}

	e.mu.Lock()
	j.cur = nil
	j.attempts = n
	if fault == faultTimeoutUncounted && timedOut {
		j.attempts = n - 1
	}
	if err != nil {
		j.lastErr = text
	}
	res := observe.Result{Err: err, Decision: dec}
	now := time.Now()
	switch {
	case (policyPanicked && fault == faultPolicyPanicKills) || (!readable && fault == faultErrorTextKills):
		e.die() // the worker process is gone; the job is never finished
		e.mu.Unlock()
		return
	case err == nil:
		j.state = StateCompleted
	case panicked && fault == faultDropPanicked:
		e.mu.Unlock()
		a.release(e, j.id)
		return // the job stays pending for ever: the defect under test
	case engineDecided:
		e.schedule(j, refOwnDelay)
	case !dec.Retry():
		j.state = StateFailed
	case e.closed:
		e.mu.Unlock()
		a.release(e, j.id)
		a.n.Ended(octx, att, observe.Result{Err: err, Counting: observe.Interrupted})
		return
	default:
		res.FireAt = now.Add(dec.Delay)
		if fault == faultToldAtOnce {
			res.FireAt = now
		}
		e.schedule(j, e.faultyDelay(j, now, dec.Delay))
	}
	e.mu.Unlock()

	if !(fault == faultLeak && res.GaveUp()) {
		a.release(e, j.id)
	}
	if fault == faultTimeoutSuccess && timedOut && herr == nil {
		res = observe.Result{}
	}
	if fault == faultEngineToldOwn && engineDecided {
		res.Decision = backoff.Decision{Outcome: backoff.OutcomePermanent}
	}
	if fault == faultOutcomeSwapped && res.GaveUp() {
		res.Decision.Outcome ^= backoff.OutcomeExhausted ^ backoff.OutcomePermanent
	}
	a.n.Ended(octx, att, res)
	switch {
	case fault == faultGiveUpTwice && res.GaveUp():
		a.n.Ended(octx, att, res)
	case fault == faultGiveUpOnSuccess && err == nil && n > 1 && a.n.GiveUp != nil:
		a.n.GiveUp(octx, observe.GiveUp{Attempt: att, Err: errors.New("conformance: reference: earlier failure"), Outcome: backoff.OutcomeExhausted})
	case fault == faultFalseAlarm && err == nil:
		a.n.Report(fmt.Errorf("conformance: reference: job %s: lease lost", j.id))
	}
}

// errorText reads err's message without a guard, as an engine that trusts
// errors does, and reports whether it could: false when the Error method
// panicked (the process would have died).
func errorText(err error) (readable bool) {
	if err == nil {
		return true
	}
	defer func() {
		if recover() != nil {
			readable = false
		}
	}()
	_ = err.Error()
	return true
}

// faultyDelay is the delay the engine's timer really waits: the decision's,
// unless a timing fault is planted. The caller holds e.mu.
func (e *refEngine) faultyDelay(j *refJob, now time.Time, delay time.Duration) time.Duration {
	switch e.a.h.fault {
	case faultEarly:
		delay /= 2
	case faultLate:
		// Ten times the declared lateness: the bound widens by what the
		// witness saw of the machine's load, and on a machine loaded a
		// dozen times over its two cores the witness lagged up to 70% of
		// an interval, within which twice the lateness was excused.
		delay += 10*e.a.h.Limits().Lateness + 5*time.Millisecond
	case faultSmear:
		window, _, _ := herdWindow(e.a.h.Limits())
		id, _ := strconv.Atoi(j.id)
		delay += window * time.Duration(id%10) / 10
	case faultRoundDownLate:
		// From the third retry of a job of a named kind not bound to a
		// dependency on, the fire time is stored in 10 ms units, rounded
		// down: no named check retries such a job that often with a delay
		// off the 10 ms grid, a random mix does.
		if j.kind != "" && j.attempts >= 3 && e.a.cfg.Dependencies[j.kind] == "" {
			delay = delay.Truncate(10 * time.Millisecond)
		}
	case faultHugeAtOnce:
		// The fire time as Unix nanoseconds: a delay near the Duration
		// limit overflows it into the past, and the job runs at once.
		if fire := now.UnixNano() + int64(delay); fire < now.UnixNano() {
			delay = 0
		}
	}
	return delay
}

// schedule runs j again after delay. The caller holds e.mu.
func (e *refEngine) schedule(j *refJob, delay time.Duration) {
	e.wg.Add(1)
	var tm *time.Timer
	tm = time.AfterFunc(delay, func() {
		e.mu.Lock()
		delete(e.timers, tm)
		e.mu.Unlock()
		e.run(j)
	})
	e.timers[tm] = struct{}{}
	j.timer = tm
}

// die stops the engine for good, as a worker process dying would. The
// caller holds e.mu.
func (e *refEngine) die() {
	e.dead = true
	for tm := range e.timers {
		if tm.Stop() {
			e.wg.Done()
		}
		delete(e.timers, tm)
	}
}
