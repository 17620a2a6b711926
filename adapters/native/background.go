package native

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/observe"
)

// stopMarker is the marker member Shutdown adds to end its own worker's
// block at once; another worker that pops it just looks for work.
const stopMarker = "stop"

// wakeListener ends the listener's block on the marker, if it is blocked,
// so that Shutdown need not wait out the block's timeout.
func (w *Worker) wakeListener() {
	if !w.blocked.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	w.q.rdb.ZAdd(ctx, w.q.keys.marker, redis.Z{Score: 0, Member: stopMarker})
}

// listen blocks on the queue's marker while the fetch loop is idle and
// wakes it when a job is enqueued, promoted or rescheduled. The block is a
// fractional BZPOPMIN sent with Do: go-redis's typed call rounds timeouts to
// whole seconds. Precise fire times come from the fetch loop's own timer,
// not from this block, whose timeout Redis checks only at its hz rate.
func (w *Worker) listen() {
	defer w.bg.Done()
	secs := strconv.FormatFloat(w.block.Seconds(), 'f', 3, 64)
	failures := 0
	for {
		select {
		case <-w.stop:
			return
		case <-w.listenReq:
		}
		for w.waiting.Load() {
			select {
			case <-w.stop:
				return
			default:
			}
			w.blocked.Store(true)
			res, err := w.q.rdb.Do(context.Background(), "BZPOPMIN", w.q.keys.marker, secs).Slice()
			w.blocked.Store(false)
			if errors.Is(err, redis.Nil) {
				continue // timed out: block again while still idle
			}
			select {
			case <-w.stop:
				// Shutting down: a wake-up meant for the queue (not the one
				// Shutdown sent to end this block) goes on to another
				// worker.
				if err == nil && len(res) == 3 && res[1] != stopMarker {
					w.q.rdb.ZAdd(context.Background(), w.q.keys.marker, redis.Z{Score: 0, Member: res[1]})
				}
				return
			default:
			}
			if err != nil {
				failures++
				if !w.pause("wait for jobs", failures, err) {
					return
				}
				continue
			}
			failures = 0
			if w.waiting.Load() {
				select {
				case w.wake <- struct{}{}:
				default:
				}
			} else {
				// The fetch loop got busy meanwhile: pass the wake-up on
				// to another idle worker.
				w.q.rdb.ZAdd(context.Background(), w.q.keys.marker, redis.Z{Score: 0, Member: "w"})
			}
			break
		}
	}
}

// renewLoop renews the leases of running jobs every third of the lease. A
// job whose lease was lost (reclaimed after an outage) has its handler's
// context cancelled with ErrLeaseLost.
func (w *Worker) renewLoop() {
	defer w.bg.Done()
	t := time.NewTicker(w.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-w.bgStop:
			return
		case <-t.C:
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
			res, err := scriptExtend.Run(context.Background(), w.q.rdb, []string{k.active, k.jobs}, batch...).Slice()
			if err != nil {
				w.report(fmt.Errorf("native: renew leases on queue %q: %w", w.q.name, err))
				break
			}
			for i, v := range res {
				if parseInt(v) == 1 {
					continue
				}
				token := fmt.Sprint(batch[2+2*i])
				w.mu.Lock()
				rj := w.running[token]
				// A job whose outcome was stored since the renewal was
				// sent has given its lease back, not lost it.
				lost := rj != nil && !rj.ended.Load()
				if lost && rj.cancel != nil {
					rj.cancel(ErrLeaseLost)
				}
				w.mu.Unlock()
				if lost {
					w.leaseLost(rj)
				}
			}
		}
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
		w.notify.Ended(octx, a, applied(scriptFail, observe.Result{Err: ErrLeaseExpired, Decision: d}, out))
	}
	return n, nil
}
