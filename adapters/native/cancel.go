package native

import (
	"context"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
)

// The worker's side of an operator's cancel ([Queue.Cancel]): the cancel
// script ended the attempt in Redis already (the job is failed, the lease
// gone); the worker that ran it learns of it from its lease renewal or
// from the refusal of its outcome, and then tells what the script applied.

// cancelled ends rj's attempt as an operator's cancel did: its handler's
// context is cancelled with ErrCancelled, and the observer and give-up
// hook are told the attempt ended the job, permanent. It tells once, on
// whichever path learns first; the handler's own outcome is then dropped
// (run finds rj.lost set). Once the handler can no longer start or its
// context is cancelled, the worker confirms the cancel to Redis
// (ackCancel), for the Queue.Cancel that waits for it.
func (w *Worker) cancelled(rj *runningJob) {
	if rj.lost.Swap(true) {
		return // told already, or the lease was lost to a reclaim that told
	}
	w.mu.Lock()
	ctx, a := rj.ctx, rj.attempt
	switch {
	case rj.cancel != nil:
		rj.cancel(ErrCancelled)
	case rj.claimed:
		// run is telling the observer the attempt started: it ends it too,
		// and calls no handler (lost is set).
		rj.cancelAtStart = true
		w.mu.Unlock()
		w.ackCancel(rj.id, rj.token)
		return
	default:
		// Cancelled between its reservation and its start (a job reserved
		// ahead): run skips it, so the observer hears of the attempt here,
		// its start and its end.
		rj.skip = true
		j := rj.job
		a = observe.Attempt{System: System, Queue: w.q.name, JobID: j.ID, Kind: j.Name,
			Number: j.Attempt, MaxAttempts: j.MaxAttempts, Carrier: j.Metadata}
		ctx = nil
	}
	w.mu.Unlock()
	// The handler will not start, or its context is cancelled: Cancel may
	// return.
	w.ackCancel(rj.id, rj.token)
	if ctx == nil {
		ctx = w.notify.Started(context.Background(), a)
	}
	w.notify.Ended(ctx, a, cancelledResult)
	w.cancelGiveUpDone(rj)
}

// cancelledResult is the end of an attempt an operator cancelled: it ended
// the job, permanent, with the *observe.CancelledError every adapter
// reports for the engine's cancel, reading as the text the cancel script
// stored and matching ErrCancelled.
var cancelledResult = observe.Result{
	Err:      &observe.CancelledError{Engine: ErrCancelled.Error(), Cause: ErrCancelled},
	Decision: backoff.Decision{Outcome: backoff.OutcomePermanent},
}

// cancelledByOperator reports whether rj's attempt, whose outcome was
// refused as stale, was ended by an operator's cancel rather than a
// reclaim: the record's ftok is "0" and rj's token (see lua/cancel.lua).
func (w *Worker) cancelledByOperator(rj *runningJob) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := w.q.rdb.HGet(ctx, w.q.keys.jobs, rj.id).Result()
	if err != nil {
		return false
	}
	r, err := decodeRecord(s)
	return err == nil && r.ftok == "0"+rj.token
}
