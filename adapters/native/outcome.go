package native

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// store ends rj's attempt with one outcome call (complete or fail, with
// keys and args) and tells the observer what the script applied (result,
// the attempt's error and decision, completed by the script's reply).
func (w *Worker) store(rj *runningJob, s *redis.Script, keys []string, args []any, result observe.Result) {
	// Hand the outcome over, then free the slot: the fetch loop, woken by
	// the free slot, stores the outcome in the same round trip as the
	// reserve that refills it. (Concurrency bounds running handlers;
	// Shutdown still waits for every outcome to be stored.)
	first := w.post(s, keys, args, true)
	w.freeBusy(rj)
	<-w.slots
	res, err := w.finish(rj.id, first, func(ctx context.Context) ([]any, error) {
		return w.submit(ctx, s, keys, args...)
	})
	w.letGo(rj, false)
	w.tell(rj, rj.ctx, rj.attempt, s, result, res, err)
	w.handlers.Done()
}

// tell reports how an attempt ended once the script s that ended it has
// answered (res, or err: a failed call or a refusal, see Worker.finish):
// to the observer what the script applied, or to the error handler why
// nothing was applied.
func (w *Worker) tell(rj *runningJob, ctx context.Context, a observe.Attempt, s *redis.Script, result observe.Result, res []any, err error) {
	switch {
	case errors.Is(err, ErrLeaseLost) && w.cancelledByOperator(rj):
		// An operator cancelled the job before its outcome was stored:
		// the cancel ended the attempt, and the outcome here changed
		// nothing.
		w.cancelled(rj)
	case errors.Is(err, ErrLeaseLost):
		// Reclaimed meanwhile: the reclaim stored and reported this
		// attempt's end, and the outcome here changed nothing.
		w.leaseLost(rj)
	case err != nil:
		// Not stored (or not known to be): the lease runs out and the
		// reclaim that ends the attempt reports it.
		w.report(err)
	default:
		r := applied(s, result, res)
		w.notify.Ended(ctx, a, r)
		if s == scriptFail && r.GaveUp() {
			w.giveUpDone(rj.id, rj.token)
		}
	}
}

// applied completes the result of an attempt ended by script s with what
// the script's reply res says it applied: for a failure, whether the job
// was retried (and when) or failed for good.
func applied(s *redis.Script, r observe.Result, res []any) observe.Result {
	if s == scriptDefer {
		if parseInt(res[0]) == 1 && len(res) >= 2 {
			r.FireAt = time.UnixMilli(parseInt(res[1]))
		}
		return r
	}
	if s == scriptRelease {
		r.FireAt = time.Now()
		if parseInt(res[0]) == 1 && len(res) >= 2 {
			r.FireAt = time.UnixMilli(parseInt(res[1]))
		}
		return r
	}
	if s != scriptFail {
		return r
	}
	switch parseInt(res[0]) {
	case 1:
		if len(res) >= 3 {
			r.FireAt = time.UnixMilli(parseInt(res[2]))
		}
	case 2:
		if r.Decision.Outcome != backoff.OutcomePermanent {
			r.Decision = backoff.Decision{Outcome: backoff.OutcomeExhausted}
		}
	case 0:
		// Stored by an earlier try whose reply was lost: the decision is
		// the one sent, its fire time known only roughly.
		if r.Decision.Retry() {
			r.FireAt = time.Now().Add(r.Decision.Delay)
		}
	}
	return r
}

// letGo forgets an ended attempt: it no longer holds a lease to renew. With
// slot, it also frees the attempt's slot and marks its handler done (store
// does both itself, at its own time).
func (w *Worker) letGo(rj *runningJob, slot bool) {
	w.mu.Lock()
	delete(w.running, rj.token)
	w.mu.Unlock()
	if slot {
		w.freeBusy(rj)
		<-w.slots
		w.handlers.Done()
	}
}

// finish runs a storing script, retrying with the reconnect backoff while
// Redis is unreachable. The first try is the call already posted, when
// first is not nil (its sender's round trip is bounded by the client's own
// timeouts); later ones send it again. The lease token makes a retried call
// safe: if the first try was applied and only its reply was lost, the retry
// is told so and changes nothing. It gives up when the worker is abandoned,
// or when the shutdown deadline has passed and one more try failed.
func (w *Worker) finish(id string, first *finishReq, call func(ctx context.Context) ([]any, error)) ([]any, error) {
	for try := 1; ; try++ {
		var res []any
		var err error
		if try == 1 && first != nil {
			res, err = first.wait(context.Background(), w.bgStop, w.q.rdb)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err = call(ctx)
			cancel()
		}
		if err == nil {
			return res, w.refusal(id, res, nil)
		}
		var rerr redis.Error
		if errors.As(err, &rerr) && !isTransient(err) {
			return nil, fmt.Errorf("native: store outcome of job %q on queue %q: %w", id, w.q.name, err)
		}
		w.report(fmt.Errorf("native: store outcome of job %q on queue %q (try %d): %w", id, w.q.name, try, err))
		if w.abandoned.Load() || w.hardCtx.Err() != nil {
			return nil, err
		}
		if !w.sleep(backoff.Delay(w.reconnect, try, backoff.Source{}), w.hardCtx.Done()) {
			return nil, err
		}
	}
}

// isTransient reports whether a Redis error reply is worth retrying.
func isTransient(err error) bool {
	msg := err.Error()
	for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "MOVED", "ASK"} {
		if len(msg) >= len(p) && msg[:len(p)] == p {
			return true
		}
	}
	return false
}

// MaxErrorBytes is the most bytes of a failed attempt's error text the
// queue stores with the job (see [StoredJob].LastError): a longer text is
// cut, on a UTF-8 boundary, with a note of how many bytes were dropped, so
// that a huge error cannot bloat the job's record.
const MaxErrorBytes = 8 << 10

// errorText is the text stored for a failed attempt's error: err.Error()
// even when that panics or err is a typed nil, made valid UTF-8 and cut to
// MaxErrorBytes (internal/safe).
func errorText(err error) string {
	return safe.Truncate(safe.Message(err), MaxErrorBytes)
}

// keepMeta is the metadata argument of complete and fail that keeps the
// stored metadata.
const keepMeta = "-"

// completeKeys returns the complete script's KEYS.
func (w *Worker) completeKeys() []string { return w.q.keys.completeKeys }

func (w *Worker) completeArgs(id, token, meta string) []any {
	return []any{w.q.keepFor.Milliseconds(), w.q.keepMost, id, token, meta}
}

// failKeys returns the fail script's KEYS.
func (w *Worker) failKeys() []string { return w.q.keys.failKeys }

func (w *Worker) failArgs(id, token string, d backoff.Decision, maxAttempts int, msg, meta string, reclaim bool) []any {
	permanent, rec := 0, 0
	if d.Outcome == backoff.OutcomePermanent {
		permanent = 1
	}
	if reclaim {
		rec = 1
	}
	return []any{w.q.failFor.Milliseconds(), w.q.failMost, w.owedLease(), id, token, ceilMicros(d.Delay), permanent, maxAttempts, msg, meta, rec}
}

// fail runs the fail script directly (not batched).
func (w *Worker) fail(ctx context.Context, id, token string, d backoff.Decision, maxAttempts int, msg, meta string, reclaim bool) ([]any, error) {
	return oneReply(scriptFail.Run(ctx, w.q.rdb, w.failKeys(), w.failArgs(id, token, d, maxAttempts, msg, meta, reclaim)...).Slice())
}
