package native

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
)

// Start starts the worker's goroutines and returns at once. Stop it with
// [Worker.Shutdown]. A worker starts once.
func (w *Worker) Start() error {
	if w.parts != nil {
		return w.startParts()
	}
	ok := false
	w.startOnce.Do(func() {
		ok = true
		w.stop = make(chan struct{})
		w.bgStop = make(chan struct{})
		w.hardCtx, w.hardStop = context.WithCancelCause(context.Background())
		w.fetchDone = make(chan struct{})
		if w.slots == nil { // (a part of a sharded worker shares its parent's)
			w.slots = make(chan struct{}, w.concurrency+w.prefetch)
			w.disp = &dispatcher{idle: w.concurrency}
		}
		w.wake = make(chan struct{}, 1)
		w.listenReq = make(chan struct{}, 1)
		w.renewNow = make(chan struct{}, 1)
		w.finishCh = make(chan *finishReq, w.concurrency)
		w.started.Store(true)
		w.bg.Add(5 + finishers)
		for range finishers {
			go w.finisher()
		}
		go w.fetchLoop()
		go w.listen()
		go w.renewLoop()
		go w.reclaimLoop()
		go w.cancelListen()
	})
	if !ok {
		return errors.New("native: worker already started; build a new one")
	}
	return nil
}

// Run starts the worker and blocks until ctx ends, then shuts it down,
// giving running handlers the shutdown timeout to finish.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), w.shutdown)
	defer cancel()
	return w.Shutdown(sctx)
}

// Shutdown stops taking jobs and waits for running handlers to finish and
// their outcome to be stored; the jobs reserved ahead that no handler
// started ([WithPrefetch]) go back at once, uncounted, to the front of the
// queue. When ctx ends first, the handlers' contexts
// are cancelled with [ErrShutdown] and their jobs put back in the queue at
// once, in one round trip, without using up an attempt: they run again
// first, with the same attempt number, and observers are told the attempt
// was interrupted (observe.Interrupted). A handler that returns after that
// stores nothing (and one that returns an error once its context was
// cancelled by Shutdown is interrupted the same way). Shutdown then
// returns ctx's error.
func (w *Worker) Shutdown(ctx context.Context) error {
	if w.parts != nil {
		return w.shutdownParts(ctx)
	}
	if !w.started.Load() {
		return nil
	}
	w.stopOnce.Do(func() { close(w.stop) })
	w.wakeListener()
	<-w.fetchDone
	w.releaseQueued()
	done := make(chan struct{})
	go func() { w.handlers.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		w.stopHandlers(ErrShutdown)
		w.interrupt()
		// What is left are attempts whose outcome is being stored.
		<-done
	}
	w.stopBackground()
	if err == nil {
		w.bg.Wait()
	}
	return err
}

// stopHandlers cancels the context of every running handler, and of any
// that starts later, with cause.
func (w *Worker) stopHandlers(cause error) {
	w.hardStop(cause)
	w.startQueued()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rj := range w.running {
		if rj.cancel != nil {
			rj.cancel(cause)
		}
	}
}

// interrupt ends the attempts of the handlers still running when
// Shutdown's deadline passed: their jobs go back to the queue in one round
// trip, uncounted (release), and observers are told they were
// interrupted. A handler that returns later finds its attempt ended and
// stores nothing. The round trip is not retried: if it fails, the leases
// run out and the jobs are reclaimed, the attempts counted.
func (w *Worker) interrupt() {
	type cut struct {
		rj      *runningJob
		ctx     context.Context
		a       observe.Attempt
		meta    string // what the observer left, when packed (see runningJob.meta)
		started bool
	}
	var cuts []cut
	w.mu.Lock()
	for _, rj := range w.running {
		if rj.ended.CompareAndSwap(false, true) {
			c := cut{rj: rj, ctx: rj.ctx, a: rj.attempt, meta: keepMeta, started: rj.cancel != nil}
			if c.started && rj.meta != rj.job.storedMeta {
				c.meta = rj.meta
			}
			cuts = append(cuts, c)
		}
	}
	w.mu.Unlock()
	if len(cuts) == 0 {
		return
	}
	reqs := make([]*finishReq, len(cuts))
	for i, c := range cuts {
		reqs[i] = &finishReq{script: scriptRelease, keys: w.q.keys.releaseKeys,
			args: []any{c.rj.id, c.rj.token, c.meta}, done: make(chan finishRes, 1)}
	}
	w.sendBatch(reqs)
	for i, c := range cuts {
		out := <-reqs[i].done
		w.letGo(c.rj, true)
		err := w.refusal(c.rj.id, out.res, out.err)
		if c.started || err != nil {
			// One not started yet is told of by its own run.
			w.tell(c.rj, c.ctx, c.a, scriptRelease, interrupted(ErrShutdown, time.Time{}), out.res, err)
		}
	}
}

// interrupted is the result of a run cut short by Shutdown, with the
// handler's error err: it does not count, and the job runs again at once
// (at fireAt, when the release script's answer is known).
func interrupted(err error, fireAt time.Time) observe.Result {
	return observe.Result{Err: err, Counting: observe.Interrupted,
		Decision: backoff.Decision{Outcome: backoff.OutcomeRetry}, FireAt: fireAt}
}

func (w *Worker) stopBackground() {
	w.mu.Lock()
	select {
	case <-w.bgStop:
	default:
		close(w.bgStop)
	}
	w.mu.Unlock()
}

// abandon stops the worker the way a crash would: nothing more is stored,
// running jobs keep their leases until they expire. Tests use it.
func (w *Worker) abandon() {
	if w.parts != nil {
		w.abandonParts()
		return
	}
	w.abandoned.Store(true)
	w.stopOnce.Do(func() { close(w.stop) })
	w.stopHandlers(ErrShutdown)
	w.stopBackground()
}

// report hands err to the error handler, unless the worker was abandoned.
func (w *Worker) report(err error) {
	if err == nil || w.abandoned.Load() {
		return
	}
	w.notify.Report(err)
}

// pause reports the failures-th consecutive failure of what, then waits
// the reconnect backoff for it; it reports false if the worker stopped
// meanwhile.
func (w *Worker) pause(what string, failures int, err error) bool {
	w.report(fmt.Errorf("native: %s on queue %q (retry %d): %w", what, w.q.name, failures, err))
	return w.sleep(backoff.Delay(w.reconnect, failures, backoff.Source{}), w.stop)
}

// sleep waits d, or until the worker stops; it reports whether it slept.
func (w *Worker) sleep(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}
