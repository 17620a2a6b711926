package native

import (
	"context"
	"fmt"
	"time"

	"github.com/rebound-go/rebound/observe"
)

// renewLoop renews the leases of running jobs every third of the lease, and
// at once when a reserve saw an operator cancel a running job. A job whose
// lease was lost (reclaimed after an outage) has its handler's context
// cancelled with ErrLeaseLost; one an operator cancelled, with
// ErrCancelled (see Worker.cancelled).
func (w *Worker) renewLoop() {
	defer w.bg.Done()
	t := time.NewTicker(w.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-w.bgStop:
			return
		case <-t.C:
		case <-w.renewNow:
		}
		w.mu.Lock()
		args := make([]any, 0, 1+2*len(w.running))
		args = append(args, w.lease.Milliseconds())
		for _, rj := range w.running {
			args = append(args, rj.id, rj.token)
		}
		w.mu.Unlock()
		if len(args) == 1 {
			continue
		}
		k := w.q.keys
		const chunk = 2 * 500
		for lo := 1; lo < len(args); lo += chunk {
			hi := min(lo+chunk, len(args))
			batch := append([]any{args[0]}, args[lo:hi]...)
			sent := w.now()
			res, err := scriptExtend.Run(context.Background(), w.q.rdb, []string{k.active, k.jobs}, batch...).Slice()
			if err != nil {
				w.report(fmt.Errorf("native: renew leases on queue %q: %w", w.q.name, err))
				break
			}
			for i, v := range res {
				code := parseInt(v)
				id, token := fmt.Sprint(batch[1+2*i]), fmt.Sprint(batch[2+2*i])
				w.mu.Lock()
				rj := w.running[token]
				w.mu.Unlock()
				switch {
				case rj != nil:
					w.renewed(rj, code, sent)
				case code == 2:
					// Cancelled, and let go here since: nothing to stop.
					w.ackCancel(id, token)
				}
			}
		}
	}
}

// leaseLost reports, once per attempt, that rj's lease was lost.
func (w *Worker) leaseLost(rj *runningJob) {
	if !rj.lost.Swap(true) {
		w.report(fmt.Errorf("%w (queue %q, job %q, attempt %d)", ErrLeaseLost, w.q.name, rj.id, rj.job.Attempt))
	}
}

// reclaimLoop looks for jobs whose lease expired and fails each through the
// fail script: the lost attempt counts and the job waits its backoff, so a
// job that keeps killing its workers still stops at its cap.
func (w *Worker) reclaimLoop() {
	defer w.bg.Done()
	t := time.NewTicker(w.reclaim)
	defer t.Stop()
	for {
		select {
		case <-w.bgStop:
			return
		case <-t.C:
		}
		w.claimGiveUps()
		for {
			n, err := w.reclaimOnce(context.Background(), 100)
			if err != nil {
				w.report(fmt.Errorf("native: reclaim expired leases on queue %q: %w", w.q.name, err))
				break
			}
			if n < 100 {
				break
			}
		}
	}
}

// reclaimOnce reclaims up to limit expired leases and returns how many it
// found. Each attempt it ends is reported to the observer as the failure
// the fail script applied (ErrLeaseExpired, with its retry or give-up):
// the worker that held the lease, should it come back, is told its lease is
// gone and reports nothing of its own. When that worker is this one, the
// report goes with the attempt's own observer context and the handler's
// context is cancelled with ErrLeaseLost.
func (w *Worker) reclaimOnce(ctx context.Context, limit int) (int, error) {
	k := w.q.keys
	res, err := scriptReclaim.Run(ctx, w.q.rdb, []string{k.active, k.jobs}, limit).Slice()
	if err != nil {
		return 0, err
	}
	n := 0
	for i := 0; i+2 < len(res); i += 3 {
		n++
		id, token := fmt.Sprint(res[i]), fmt.Sprint(res[i+1])
		rec, _ := decodeRecord(fmt.Sprint(res[i+2])) // unknown: the fail script says so
		// The key function sees the job as stored, so a reclaimed attempt
		// is keyed exactly as its worker would have keyed it.
		j := w.newJob(id, max(rec.attempts, 1), rec)
		d := w.decide(j, ErrLeaseExpired)
		out, err := w.fail(ctx, id, token, d, j.MaxAttempts, ErrLeaseExpired.Error(), keepMeta, true)
		if err != nil {
			return 0, err
		}
		if code := parseInt(out[0]); code != 1 && code != 2 {
			continue // the lease was renewed, or its attempt ended, meanwhile
		}
		octx := context.Background()
		a := observe.Attempt{System: System, Queue: w.q.name, JobID: id, Kind: j.Name,
			Number: j.Attempt, MaxAttempts: j.MaxAttempts, Carrier: j.Metadata}
		w.mu.Lock()
		rj := w.running[token]
		if rj != nil && rj.cancel != nil {
			octx, a = rj.ctx, rj.attempt
			rj.cancel(ErrLeaseLost)
		}
		w.mu.Unlock()
		if rj != nil {
			w.leaseLost(rj)
		}
		r := applied(scriptFail, observe.Result{Err: ErrLeaseExpired, Decision: d}, out)
		w.notify.Ended(octx, a, r)
		if r.GaveUp() {
			w.giveUpDone(id, token)
		}
	}
	return n, nil
}
