package native

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// The give-up hook's call survives the worker that owes it. The fail
// script that gives a job up records, in the same step, that the call is
// owed (the giveup set and hash, see lua/fail.lua), under a lease of the
// worker's lease length; the worker clears the record once its hook
// returned. A worker that dies in between leaves the record, and once its
// lease on the call has run out, the next reclaim pass of a worker with a
// hook takes the call over (lua/give_up_claim.lua) and makes it. So the
// hook is called at least once for every job given up, across crashes: a
// worker that dies after its hook returned but before the record was
// cleared, or a hook that runs longer than the lease, has it called again.

// owedLease is the lease, in ms, on the give-up calls this worker owes, or
// 0 when it has no hook (nothing is owed then).
func (w *Worker) owedLease() int64 {
	if w.notify.GiveUp == nil {
		return 0
	}
	return w.lease.Milliseconds()
}

// giveUpDone clears the record of the give-up call owed for job id by the
// attempt that held token, once the hook returned. If the clear fails, the
// call is made again after its lease runs out.
func (w *Worker) giveUpDone(id, token string) {
	if w.notify.GiveUp == nil {
		return
	}
	w.clearGiveUp(id, token)
}

// cancelGiveUpDone clears the record of the give-up call a cancel of the
// running attempt rj left (lua/cancel.lua), once the observer and hook
// were told: a cancel records the call whether or not the worker has a
// hook, so a worker without one clears it too.
func (w *Worker) cancelGiveUpDone(rj *runningJob) {
	w.clearGiveUp(rj.id, rj.token)
}

// clearGiveUp clears the record of the give-up call owed for job id by the
// attempt that held token.
func (w *Worker) clearGiveUp(id, token string) {
	if w.abandoned.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	k := w.q.keys
	if err := scriptGiveUpDone.Run(ctx, w.q.rdb, []string{k.giveup, k.giveupCalls}, id, token).Err(); err != nil {
		w.report(fmt.Errorf("native: clear the give-up call of job %q on queue %q (it may be made again): %w", id, w.q.name, err))
	}
}

// claimGiveUps makes the give-up calls owed by workers that died before
// making them, up to a batch per pass, when this worker has a hook.
func (w *Worker) claimGiveUps() {
	if w.notify.GiveUp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k := w.q.keys
	res, err := scriptGiveUpClaim.Run(ctx, w.q.rdb, []string{k.giveup, k.giveupCalls, k.jobs}, 100, w.lease.Milliseconds()).Slice()
	if err != nil {
		w.report(fmt.Errorf("native: take over owed give-up calls on queue %q: %w", w.q.name, err))
		return
	}
	for i := 0; i+2 < len(res); i += 3 {
		id := replyString(res[i])
		c, err := parseGiveUpCall(replyString(res[i+1]))
		if err != nil {
			w.report(fmt.Errorf("native: owed give-up call of job %q on queue %q: %w", id, w.q.name, err))
			continue
		}
		// The job as stored gives its name and metadata (a record gone
		// since, to retention or a delete, gives none).
		rec, _ := decodeRecord(replyString(res[i+2]))
		j := w.newJob(id, c.attempt, rec)
		if c.max > 0 {
			j.MaxAttempts = c.max
		}
		outcome := backoff.OutcomeExhausted
		if c.permanent {
			outcome = backoff.OutcomePermanent
		}
		a := observe.Attempt{System: System, Queue: w.q.name, JobID: id, Kind: j.Name,
			Number: j.Attempt, MaxAttempts: j.MaxAttempts, Carrier: j.Metadata}
		// Only the hook is owed: the observer is told of attempts as they
		// end, by the worker that ends them.
		g := observe.GiveUp{Attempt: a, Err: storedError(c.err), Outcome: outcome}
		if perr := safe.Call("give-up hook", func() { w.notify.GiveUp(context.Background(), g) }); perr != nil {
			w.report(perr)
		}
		w.giveUpDone(id, c.token)
	}
}

// giveUpCall is an owed give-up call as stored (lua/lib/give_up_call.lua).
type giveUpCall struct {
	token        string
	attempt, max int
	permanent    bool
	err          string
}

// parseGiveUpCall reads an owed give-up call.
func parseGiveUpCall(s string) (giveUpCall, error) {
	head, text, ok := strings.Cut(s, "|")
	f := strings.Split(head, ",")
	if !ok || len(f) != 4 {
		return giveUpCall{}, fmt.Errorf("unreadable record %q, want token,attempt,max,permanent|error", s)
	}
	n, err1 := strconv.Atoi(f[1])
	m, err2 := strconv.Atoi(f[2])
	if err := errors.Join(err1, err2); err != nil {
		return giveUpCall{}, fmt.Errorf("unreadable record %q: %w", s, err)
	}
	return giveUpCall{token: f[0], attempt: n, max: m, permanent: f[3] == "1", err: text}, nil
}

// storedError is the error of an attempt known only by its stored text
// (a give-up call taken over from a worker that died): the package's own
// errors are matched by their text, so errors.Is still finds them.
func storedError(text string) error {
	for _, e := range []error{ErrLeaseExpired, ErrCancelled} {
		if text == e.Error() {
			return e
		}
	}
	if strings.HasPrefix(text, ErrTimeout.Error()) {
		return fmt.Errorf("%w%s", ErrTimeout, strings.TrimPrefix(text, ErrTimeout.Error()))
	}
	return errors.New(text)
}
