package native

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
)

// A job reserved ahead (WithPrefetch) waits on the worker for a handler,
// and an operator may cancel it meanwhile ([Queue.Cancel] takes its lease
// at once). So that no handler starts after Cancel returned, a job held
// ahead starts only once the queue has confirmed, after the handler freed
// up for it, that the job was not cancelled. The confirmation rides in
// the fetch loop's next round trip, which is the one that stores the
// outcome of the job whose end freed the handler (and reserves the next
// jobs), and costs no script call of its own: every cancel of a running
// job counts in the queue's control hash, which the reserve script reads
// (or, in a round trip without a reserve, one HGET). When the count is the
// one the job's own reservation read, no running job was cancelled in
// between, this one included, and the job starts. When it moved, the
// jobs it may concern are checked one by one with the extend script
// (which also renews their leases) before they start. A job a handler was
// free for when its reservation arrived starts at once: the reservation
// itself is the queue's confirmation.

// takeStarting returns the jobs waiting for their start to be confirmed,
// in the order their handlers freed up.
func (w *Worker) takeStarting() []*runningJob {
	w.dmu.Lock()
	defer w.dmu.Unlock()
	cf := w.starting
	w.starting = nil
	return cf
}

// queueCancels adds to pipeline p the read of the queue's count of
// running jobs cancelled, for a round trip that confirms the starts of cf
// but reserves nothing; nil when cf is empty.
func (w *Worker) queueCancels(ctx context.Context, p redis.Pipeliner, cf []*runningJob) *redis.StringCmd {
	if len(cf) == 0 {
		return nil
	}
	return p.HGet(ctx, w.q.keys.control, "cancels")
}

// cancelsRead returns the count read by cmd (see queueCancels).
func cancelsRead(cmd *redis.StringCmd) (int64, error) {
	s, err := cmd.Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil // none cancelled yet
	}
	if err != nil {
		return 0, err
	}
	return parseInt(s), nil
}

// confirmed starts the jobs of cf once the queue answered their
// confirmation with its count of running jobs cancelled (or err, when the
// round trip failed: the jobs then wait for another, after the reconnect
// backoff).
func (w *Worker) confirmed(cf []*runningJob, cancels int64, err error) {
	if len(cf) == 0 {
		return
	}
	if w.abandoned.Load() {
		for _, rj := range cf {
			w.letGo(rj, true)
		}
		return
	}
	if err != nil {
		w.retryConfirm(cf, err)
		return
	}
	var unsure []*runningJob
	for _, rj := range cf {
		if rj.cancels == cancels {
			go w.run(rj)
		} else {
			unsure = append(unsure, rj)
		}
	}
	if len(unsure) == 0 {
		w.confirmOK()
		return
	}
	// Some running job of the queue was cancelled since these were
	// reserved: ask about each.
	k := w.q.keys
	args := make([]any, 0, 1+2*len(unsure))
	args = append(args, w.lease.Milliseconds())
	for _, rj := range unsure {
		args = append(args, rj.id, rj.token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := scriptExtend.Run(ctx, w.q.rdb, []string{k.active, k.jobs}, args...).Slice()
	if err == nil && len(res) != len(unsure) {
		err = fmt.Errorf("native: extend returned %d flags for %d jobs, want one per job", len(res), len(unsure))
	}
	if err != nil {
		w.retryConfirm(unsure, err)
		return
	}
	w.confirmOK()
	for i, rj := range unsure {
		rj.cancels = cancels // confirmed as of this count
		switch parseInt(res[i]) {
		case 1:
			go w.run(rj)
		case 2:
			// Cancelled by an operator while held ahead: told of here (or
			// by the renewal that saw it first); run starts nothing.
			w.cancelled(rj)
			go w.run(rj)
		default:
			// Reclaimed while held ahead: the reclaim ended the attempt
			// and told of it.
			if rj.ended.CompareAndSwap(false, true) {
				w.leaseLost(rj)
				w.letGo(rj, true)
			}
		}
	}
}

// confirmOK notes a confirmation that got its answer.
func (w *Worker) confirmOK() {
	w.dmu.Lock()
	w.confirmFails = 0
	w.dmu.Unlock()
}

// retryConfirm puts cf back, first in line, for a confirmation after the
// reconnect backoff.
func (w *Worker) retryConfirm(cf []*runningJob, err error) {
	w.dmu.Lock()
	w.starting = append(cf, w.starting...)
	w.confirmFails++
	failures := w.confirmFails
	w.dmu.Unlock()
	w.report(fmt.Errorf("native: confirm the start of %d jobs held ahead on queue %q (retry %d): %w", len(cf), w.q.name, failures, err))
	time.AfterFunc(backoff.Delay(w.reconnect, failures, backoff.Source{}), func() {
		select {
		case w.confirmNow <- struct{}{}:
		default:
		}
	})
}
