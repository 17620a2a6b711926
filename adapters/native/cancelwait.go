package native

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrCancelUnconfirmed is matched (errors.Is) by the error [Queue.Cancel]
// and [Queue.Delete] return when their context ended while they waited
// for the worker holding a cancelled job to confirm that it stopped it:
// the job IS cancelled (Cancel's change stands), but that worker may still
// start its handler, or run it with a live context, until it learns of the
// cancel or its lease on the job runs out. The error also wraps the
// context's error.
var ErrCancelUnconfirmed = errors.New("native: the job is cancelled, but the worker holding it has not yet confirmed that it stopped it")

// cancelPoll bounds how often a wait for a worker's confirmation reads the
// cancelling hash: the first read after cancelPollMin, each next one half
// as late again, at most cancelPollMax apart. A live worker confirms
// within a few round trips, so the first reads come close together.
const (
	cancelPollMin = 500 * time.Microsecond
	cancelPollMax = 16 * time.Millisecond
)

// awaitStopped waits until the worker that held job id under the
// reservation token confirms that it stopped it (lua/cancel_ack.lua
// cleared its entry in the cancelling hash), or until its lease has run
// out at until (leaseEnd, read as the reply that said so arrived): from then on
// the worker starts no job it held without a round trip that shows it the
// cancel (see Worker.mayStart). When ctx ends first it returns an error
// matching ErrCancelUnconfirmed and ctx's error.
func (q *Queue) awaitStopped(ctx context.Context, action, id, token string, until time.Time) error {
	k := q.keys
	for wait := cancelPollMin; ; wait = min(wait*3/2, cancelPollMax) {
		entry, err := q.rdb.HGet(ctx, k.cancelling, id).Result()
		switch {
		case errors.Is(err, redis.Nil):
			return nil
		case err == nil && !hasTokenPrefix(entry, token):
			return nil // a later cancel's entry: this one was confirmed
		case ctx.Err() != nil:
			return q.unconfirmed(ctx, action, id, until)
		}
		// (A failed read is retried until the lease runs out.)
		now := time.Now()
		if !now.Before(until) {
			// The lease ran out: the worker, should it come back, finds the
			// cancel before it starts anything.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = scriptCancelAck.Run(cctx, q.rdb, []string{k.cancelling}, id, token).Err()
			cancel()
			return nil
		}
		t := time.NewTimer(min(wait, until.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
			return q.unconfirmed(ctx, action, id, until)
		case <-t.C:
		}
	}
}

// unconfirmed is the error of a wait for a worker's confirmation that ctx
// ended.
func (q *Queue) unconfirmed(ctx context.Context, action, id string, until time.Time) error {
	return fmt.Errorf("%w (%s of job %q of queue %q; its worker's lease on it runs out in %s): %w",
		ErrCancelUnconfirmed, action, id, q.name, time.Until(until).Round(time.Millisecond), ctx.Err())
}

// hasTokenPrefix reports whether the cancelling hash's entry names the
// reservation token.
func hasTokenPrefix(entry, token string) bool {
	return len(entry) > len(token) && entry[:len(token)] == token && entry[len(token)] == ','
}

// leaseEnd reads the lease deadline and the server's time (both ms) a
// script returned: when the lease runs out on this process's clock, read
// now, as the reply arrives (a later reading would wait past the lease by
// however long the caller took meanwhile).
func leaseEnd(lease, now any) time.Time {
	return time.Now().Add(time.Duration(parseInt(lease)-parseInt(now)) * time.Millisecond)
}
