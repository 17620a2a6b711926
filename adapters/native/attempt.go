package native

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/rebound-go/rebound/internal/guard"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// runningJob is one attempt this worker holds the lease of, from its
// reservation until its end is stored and reported.
type runningJob struct {
	id    string
	token string
	job   *Job
	// Set by run, under Worker.mu, once the attempt has started: the
	// handler's cancel, and the context and attempt the observer was told
	// of (its end is reported with them).
	cancel  context.CancelCauseFunc
	ctx     context.Context
	attempt observe.Attempt
	// Under Worker.mu, for an operator's cancel that comes before the
	// handler's context is set (see Worker.cancelled): claimed is set by
	// run before it tells the observer the attempt started; cancelAtStart
	// by a cancel that finds the job claimed but its context not yet set
	// (run then ends the attempt itself); skip by a cancel that finds it
	// not claimed (the cancel told the observer; run starts nothing).
	claimed, cancelAtStart, skip bool
	// meta is the metadata as packed once the observer was told the
	// attempt started, for an attempt ended without its handler (timed
	// out) while the handler may still be writing Metadata; keepMeta when
	// not taken.
	meta string
	// ended is set by whoever ends the attempt, once: from then on the
	// lease is released by that end, and a renewal that finds it gone has
	// not lost it.
	ended atomic.Bool
	// lost is set once the lease is known to be gone: reclaimed (the
	// attempt's end was stored and reported by the reclaim, and the loss
	// reported to the error handler once), or cancelled by an operator
	// (the cancel stored the end, Worker.cancelled reported it).
	lost atomic.Bool
	// pass is the breaker's answer before the handler ran (the zero Pass
	// when the job is bound to no dependency); reported is set once the
	// run was reported to the breaker.
	pass     guard.Pass
	reported atomic.Bool
	// busy is set while the attempt holds one of the worker's handler
	// places (Worker.busy): from its start until it ends (see freeBusy).
	busy atomic.Bool
	// startBy is, under Worker.mu, the start deadline of a job held ahead
	// on the worker's clock: started later only after a renewal (see
	// held.go).
	startBy time.Time
}

// dispatch starts rj's attempt if a handler is free, or queues it behind
// the jobs reserved before it (a prefetched job): jobs start in the order
// they were reserved, which is the queue's order.
func (w *Worker) dispatch(rj *runningJob) {
	d := w.disp
	d.mu.Lock()
	if w.hardCtx.Err() != nil {
		// Past Shutdown's deadline (or abandoned): see startQueued.
		d.mu.Unlock()
		go w.run(rj)
		return
	}
	if d.idle == 0 {
		d.queued = append(d.queued, queuedJob{w, rj})
		d.mu.Unlock()
		return
	}
	d.idle--
	d.mu.Unlock()
	rj.busy.Store(true)
	go w.run(rj)
}

// freeBusy frees rj's handler, once, if it holds one (when its attempt
// ends, with its slot, or when run returns): the next queued job takes it
// (on a sharded worker, whichever shard's it is).
func (w *Worker) freeBusy(rj *runningJob) {
	if !rj.busy.CompareAndSwap(true, false) {
		return
	}
	d := w.disp
	d.mu.Lock()
	if len(d.queued) == 0 {
		d.idle++
		d.mu.Unlock()
		return
	}
	next := d.queued[0]
	d.queued[0] = queuedJob{}
	d.queued = d.queued[1:]
	d.mu.Unlock()
	next.rj.busy.Store(true)
	go next.w.run(next.rj)
}

// takeQueued empties the queue of jobs reserved ahead of this worker (not
// of the other parts of a sharded worker), returning them.
func (w *Worker) takeQueued() []*runningJob {
	d := w.disp
	d.mu.Lock()
	defer d.mu.Unlock()
	var mine []*runningJob
	rest := d.queued[:0]
	for _, qj := range d.queued {
		if qj.w == w {
			mine = append(mine, qj.rj)
		} else {
			rest = append(rest, qj)
		}
	}
	clear(d.queued[len(rest):])
	d.queued = rest
	return mine
}

// startQueued starts every queued job at once, handler free or not: once
// Shutdown's deadline has passed their attempts are put back (see
// interrupt), and each one's run tells its observer so, as for a job
// reserved just before the deadline. An abandoned worker (a crash) starts
// nothing: the jobs keep their leases until they expire.
func (w *Worker) startQueued() {
	for _, rj := range w.takeQueued() {
		if w.abandoned.Load() {
			w.letGo(rj, true)
			continue
		}
		go w.run(rj)
	}
}

// releaseQueued puts back, in one round trip, the jobs reserved ahead that
// no handler started, once Shutdown has stopped the fetch loop: a worker
// shutting down leaves new work to other workers. Their attempts did not
// start, so they do not count (release) and no observer hears of them. If
// the round trip fails, the leases run out and the reclaim counts the
// attempts.
func (w *Worker) releaseQueued() {
	var mine []*runningJob
	for _, rj := range w.takeQueued() {
		if rj.ended.CompareAndSwap(false, true) {
			mine = append(mine, rj)
		}
	}
	if len(mine) == 0 {
		return
	}
	reqs := make([]*finishReq, len(mine))
	for i, rj := range mine {
		reqs[i] = &finishReq{script: scriptRelease, keys: w.q.keys.releaseKeys,
			args: []any{rj.id, rj.token, keepMeta}, done: make(chan finishRes, 1)}
	}
	w.sendBatch(reqs)
	for i, rj := range mine {
		out := <-reqs[i].done
		switch err := w.refusal(rj.id, out.res, out.err); {
		case errors.Is(err, ErrLeaseLost):
			// A reclaim or a cancel of a job that never started here:
			// nothing to tell, but a Cancel may wait for its confirmation.
			w.ackCancel(rj.id, rj.token)
		case err != nil:
			w.report(err)
		}
		w.letGo(rj, true)
	}
}

// run runs one attempt and stores its outcome.
func (w *Worker) run(rj *runningJob) {
	defer w.freeBusy(rj)
	j := rj.job
	if !w.mayStart(rj) {
		// Its lease was lost (reclaimed: the reclaim told the observer)
		// or an operator cancelled it (Worker.cancelled told it), or its
		// lease could not be checked: the handler does not start.
		if rj.ended.CompareAndSwap(false, true) {
			w.letGo(rj, true)
		}
		return
	}
	// The handler's context hangs off no parent (a child of hardCtx would
	// register with it, under its lock, once per job); stopHandlers cancels
	// it instead, and a job that starts after that is cancelled here.
	w.mu.Lock()
	skip := rj.skip
	rj.claimed = true
	w.mu.Unlock()
	if skip {
		// Cancelled by an operator before it started: the cancel told the
		// observer, and the handler never runs.
		if rj.ended.CompareAndSwap(false, true) {
			w.letGo(rj, true)
		}
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	hctx := ctx // the handler's: ctx, with the attempt's deadline if any
	// The attempt's deadline on the worker's (monotonic) clock: a handler
	// that returns past it has failed, even when the deadline's timer has
	// not fired yet (a process stopped, or starved, across the deadline
	// wakes with the return and the timer both ready).
	deadline := w.now().Add(w.timeout)
	if w.timeout > 0 {
		var cancelDeadline context.CancelFunc
		hctx, cancelDeadline = context.WithTimeoutCause(ctx, w.timeout, w.errTimeout)
		defer cancelDeadline()
	}
	a := observe.Attempt{System: System, Queue: w.q.name, JobID: j.ID, Kind: j.Name,
		Number: j.Attempt, MaxAttempts: j.MaxAttempts, Carrier: j.Metadata}
	octx := w.notify.Started(hctx, a)
	rj.meta = keepMeta
	if w.timeout > 0 && w.notify.Observer != nil {
		// What the observer wrote, kept should the attempt time out.
		rj.meta = encodeMeta(j.Metadata)
	}
	w.mu.Lock()
	rj.cancel, rj.ctx, rj.attempt = cancel, octx, a
	if w.hardCtx.Err() != nil {
		cancel(context.Cause(w.hardCtx))
	}
	cancelled := rj.cancelAtStart
	w.mu.Unlock()
	if cancelled {
		// An operator cancelled it while the observer was told it started.
		cancel(ErrCancelled)
		w.notify.Ended(octx, a, cancelledResult)
		w.cancelGiveUpDone(rj)
	}
	if rj.ended.Load() {
		// Shutdown put the job back before its handler started: the
		// observer was told it started, so tell it how it ended.
		w.notify.Ended(octx, a, interrupted(ErrShutdown, time.Now()))
		return
	}
	// Asked before the deadline is watched: a slow store must not time
	// the attempt out.
	if w.ask(rj, octx, a) {
		return
	}
	if w.timeout > 0 {
		// At the deadline the attempt has failed, returned or not.
		stop := context.AfterFunc(hctx, func() {
			if errors.Is(context.Cause(hctx), ErrTimeout) {
				w.timedOut(rj)
			}
		})
		defer stop()
	}

	var err error
	if !rj.lost.Load() {
		err = w.call(octx, j)
	}
	if !rj.ended.CompareAndSwap(false, true) {
		// Ended without the handler: timed out (reported to the breaker
		// then), or Shutdown's deadline passed.
		w.breakerDone(rj, err, true)
		return
	}
	if w.timeout > 0 && (errors.Is(context.Cause(hctx), ErrTimeout) || !w.now().Before(deadline)) {
		err = w.errTimeout // returned at or past its deadline, whatever it returned
	}
	if w.abandoned.Load() || rj.lost.Load() {
		// A crash stores nothing; a lost lease's attempt was ended, stored
		// and reported by the reclaim that took it.
		if !w.abandoned.Load() {
			w.breakerDone(rj, err, true)
		}
		w.letGo(rj, true)
		return
	}
	w.breakerDone(rj, err, err != nil && errors.Is(context.Cause(ctx), ErrShutdown))
	meta := encodeMeta(j.Metadata)
	if meta == j.storedMeta {
		// Unchanged: the scripts then rewrite only what leads the record.
		meta = keepMeta
	}
	if err == nil {
		w.store(rj, scriptComplete, w.completeKeys(), w.completeArgs(j.ID, rj.token, meta), observe.Result{})
		return
	}
	if errors.Is(context.Cause(ctx), ErrShutdown) {
		// Cut short by Shutdown: the job goes back, this run uncounted.
		w.store(rj, scriptRelease, w.q.keys.releaseKeys, []any{j.ID, rj.token, meta}, interrupted(err, time.Time{}))
		return
	}
	d := w.decide(j, err)
	w.store(rj, scriptFail, w.failKeys(), w.failArgs(j.ID, rj.token, d, j.MaxAttempts, errorText(err), meta, false),
		observe.Result{Err: err, Decision: d})
}

// call runs the handler, turning a panic into a failed attempt.
func (w *Worker) call(ctx context.Context, j *Job) error {
	err, perr := safe.Value("handler", nil, func() error { return w.handler(ctx, j) })
	if perr != nil {
		return perr
	}
	return err
}

// timedOut ends rj's attempt at its deadline, unless its handler ended it
// first: the attempt failed with the worker's timeout error. The handler
// may still be running, so its Job is read for nothing it may change: the
// metadata stored is the one packed when the attempt started.
func (w *Worker) timedOut(rj *runningJob) {
	if !rj.ended.CompareAndSwap(false, true) {
		return
	}
	if w.abandoned.Load() || rj.lost.Load() {
		w.letGo(rj, true)
		return
	}
	j := rj.job
	w.breakerDone(rj, w.errTimeout, false)
	meta := rj.meta
	if meta == j.storedMeta {
		meta = keepMeta
	}
	d := w.decide(j, w.errTimeout)
	w.store(rj, scriptFail, w.failKeys(), w.failArgs(j.ID, rj.token, d, j.MaxAttempts, errorText(w.errTimeout), meta, false),
		observe.Result{Err: w.errTimeout, Decision: d})
}
