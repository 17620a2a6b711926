package native

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Operator actions. Each is one atomic script, safe while workers run: it
// finds the job where it is at that instant and acts only if the action
// applies there. An unknown job is an error wrapping [ErrNotFound]; a job
// in another state (one that moved meanwhile included) a [*StateError],
// which matches [ErrWrongState]; either way nothing changed.

// RetryOptions says how [Queue.Retry] and [Queue.RetryFailed] send failed
// jobs back.
type RetryOptions struct {
	// ResetAttempts starts the job's attempts afresh: it gets its full
	// MaxAttempts again. Without it the job keeps the attempts it used, so
	// a job that failed because it ran out of them runs once more, and
	// fails for good if that run fails too.
	ResetAttempts bool
}

// Retry sends the failed job id back to run: it leaves the failed set for
// the back of the wait list, its attempts kept or reset as o says, its
// last error kept until its next attempt ends. This is also how a
// cancelled job runs again. (asynq calls this running an archived task;
// River, BullMQ and Sidekiq retrying a job.)
func (q *Queue) Retry(ctx context.Context, id string, o RetryOptions) error {
	if _, ok := q.fan(); ok {
		s, err := q.holder(ctx, id)
		if err != nil {
			return err
		}
		return s.Retry(ctx, id, o)
	}
	s, keys, args := q.call(BulkRetry, id, o)
	res, err := q.act(ctx, s, "retry", id, keys, args...)
	if err != nil {
		return err
	}
	return q.refused("retry", id, res, "failed")
}

// A FailedFilter picks failed jobs for [Queue.RetryFailed] by their name
// and last error. Each field is a glob matched against the whole text:
// '*' matches any run of bytes, '?' one byte, and '\' makes the next byte
// literal ("email.*", "*connection refused*"). An empty field matches
// every job; with both set, a job must match both.
//
// Matching reads each job's text once, whatever the pattern (no
// backtracking search, no search whose cost is the text's length times
// the pattern's), so that no pattern can hold Redis. For that a glob is
// at most [MaxGlobBytes] long, and a part of it between stars that holds
// a '?' at most [MaxGlobWildPart] bytes: such a part is matched a byte at
// a time at each place it could start.
type FailedFilter struct {
	// Name is matched against the job's name.
	Name string
	// Error is matched against the job's last error.
	Error string
}

// The limits of a FailedFilter's globs.
const (
	// MaxGlobBytes is the longest glob a FailedFilter takes.
	MaxGlobBytes = 16 << 10
	// MaxGlobWildPart is the longest part between stars of a glob that
	// holds a '?'.
	MaxGlobWildPart = 32
)

// retryStep is the most failed jobs one step of RetryFailed reads,
// retryStepBytes about the most bytes of their records and retryStepWork
// about the most steps its matching takes (each job's name and error
// times the cost per byte of their patterns: 1 for a glob of stars alone,
// 20 for a long literal part or one with a '?', a short literal part's
// length): a step's script
// holds Redis for a few milliseconds at most, whatever the jobs' sizes
// and the patterns. retryKMPFrom is the length from which a literal part
// of a glob is searched by KMP rather than by Redis's naive string.find.
// (Tests shrink them.)
var (
	retryStep      = 1000
	retryStepBytes = 4 << 20
	retryStepWork  = 1 << 19
	retryKMPFrom   = 20
)

// RetryFailed sends every failed job that f matches back to run, the
// oldest failure first, as [Queue.Retry] sends one, and returns how many
// it sent. It works in steps of one script each, reading at most 1000
// jobs, about 4 MiB of records and about 512 Ki steps of matching (each
// job's name and error times their patterns' cost per byte) per step, so
// it never holds Redis for long; each step is atomic, the whole is not: jobs that fail after the
// first step are left alone, and a failed job that another operator
// retries or deletes meanwhile is simply not counted. When ctx ends
// between steps, RetryFailed returns what it sent so far with ctx's
// error.
func (q *Queue) RetryFailed(ctx context.Context, f FailedFilter, o RetryOptions) (int, error) {
	if _, ok := q.fan(); ok {
		return q.retryFailedShards(ctx, f, o)
	}
	for _, p := range []struct{ field, glob string }{{"Name", f.Name}, {"Error", f.Error}} {
		if err := checkGlob(p.glob); err != nil {
			return 0, fmt.Errorf("native: RetryFailed: FailedFilter.%s: %w", p.field, err)
		}
	}
	k := q.keys
	keys := []string{k.jobs, k.failed, k.wait, k.marker}
	moved := 0
	until, score, id := "", "", ""
	for {
		if err := ctx.Err(); err != nil {
			return moved, err
		}
		res, err := scriptRetryFailed.Run(ctx, q.rdb, keys, boolArg(o.ResetAttempts), f.Name, f.Error,
			until, score, id, retryStep, retryStepBytes, retryStepWork, retryKMPFrom).Slice()
		if err != nil {
			return moved, fmt.Errorf("native: retry failed jobs of queue %q (%d sent back so far): %w", q.name, moved, err)
		}
		moved += int(parseInt(res[0]))
		until = replyString(res[1])
		if parseInt(res[2]) == 1 {
			return moved, nil
		}
		score, id = replyString(res[3]), replyString(res[4])
	}
}

// checkGlob reports what makes p a glob FailedFilter does not take: a
// NUL byte, a length over MaxGlobBytes, or a part between stars that
// holds a '?' and is longer than MaxGlobWildPart.
func checkGlob(p string) error {
	short := p
	if len(short) > 64 {
		short = short[:60] + "..."
	}
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("glob %q holds a NUL byte, want a glob without one", short)
	case len(p) > MaxGlobBytes:
		return fmt.Errorf("glob %q is %d bytes long, want at most %d", short, len(p), MaxGlobBytes)
	}
	n, wild := 0, false
	for i := 0; i <= len(p); i++ {
		if i == len(p) || p[i] == '*' {
			if wild && n > MaxGlobWildPart {
				return fmt.Errorf("glob %q has a part of %d bytes between stars that holds a '?', want at most %d (split it with a '*', or match the bytes literally)", short, n, MaxGlobWildPart)
			}
			n, wild = 0, false
			continue
		}
		if p[i] == '?' {
			wild = true
		} else if p[i] == '\\' && i+1 < len(p) {
			i++
		}
		n++
	}
	return nil
}

// Delete removes the job id and its record: a waiting, delayed, completed
// or failed job. A running job is not deleted (a [*StateError]); cancel
// it first. It returns the state the job was in.
//
// A job cancelled while a worker held it ([Queue.Cancel]) is deleted only
// once that worker confirmed it stopped it, or its lease on the job ran
// out: Delete waits for that as Cancel does, so that no handler of the job
// starts after Delete returned. When ctx ends first, nothing is deleted and
// the error matches [ErrCancelUnconfirmed].
func (q *Queue) Delete(ctx context.Context, id string) (State, error) {
	if _, ok := q.fan(); ok {
		s, err := q.holder(ctx, id)
		if err != nil {
			return 0, err
		}
		return s.Delete(ctx, id)
	}
	for {
		s, keys, args := q.call(BulkDelete, id, RetryOptions{})
		res, err := q.act(ctx, s, "delete", id, keys, args...)
		if err != nil {
			return 0, err
		}
		if parseInt(res[0]) == -6 && len(res) >= 4 {
			// Cancelled while held, not confirmed yet: wait, then delete.
			if err := q.awaitStopped(ctx, "delete", id, replyString(res[1]), leaseEnd(res[2], res[3])); err != nil {
				return 0, err
			}
			continue
		}
		if err := q.refused("delete", id, res, "waiting, delayed, completed or failed (cancel a running job instead)"); err != nil {
			return 0, err
		}
		return parseState(res[1]), nil
	}
}

// RunNow makes the delayed job id due at once, whatever is left of its
// delay (a retry's backoff, or the delay it was enqueued with): it goes to
// the back of the due list, which workers take before the wait list, and
// an idle worker is woken. Its attempts do not change. (BullMQ calls this
// promoting a job; asynq running a scheduled task.)
func (q *Queue) RunNow(ctx context.Context, id string) error {
	if _, ok := q.fan(); ok {
		s, err := q.holder(ctx, id)
		if err != nil {
			return err
		}
		return s.RunNow(ctx, id)
	}
	k := q.keys
	res, err := q.act(ctx, scriptRunNow, "run now", id, []string{k.jobs, k.due, k.marker, k.active, k.delayed, k.failed, k.completed}, id)
	if err != nil {
		return err
	}
	return q.refused("run now", id, res, "delayed")
}

// Cancel ends the job id for good, in the failed set, marked cancelled
// ([StoredJob].Cancelled, its last error [ErrCancelled]'s text), and
// returns the state it was in. A waiting or delayed job never runs again;
// no worker is involved, so no observer or give-up hook hears of it.
//
// A running job (one a worker holds: running its handler, or reserved
// ahead of a free handler, [WithPrefetch]) leaves the active set at once,
// and its worker can no longer store the attempt's outcome. The cancel is
// published to the queue's workers, which learn of it at once (one round
// trip to check it, one to confirm it); it also wakes an idle worker and
// is counted where every reserve reads it, and the worker learns of it at
// the latest at its next lease renewal (a third of [WithLease]) or when it
// tries to store the outcome, should the message be lost. The worker then
// drops the job if its handler has not started, or cancels the handler's
// context with cause ErrCancelled, and confirms that to Redis; it tells its
// observer that the attempt ended the job, permanent, with error
// ErrCancelled, and its give-up hook likewise; whatever the handler
// returns is dropped. The give-up hook's call is owed from the cancel on,
// recorded in Redis by it as for a job given up: a worker that died
// meanwhile tells its observer nothing, and a worker with a hook makes the
// call once the dead worker's lease on the job ran out. The job stays
// cancelled.
//
// Cancel of a running job returns once its worker confirmed it, or once
// the worker's lease on the job ran out (a worker that died, or cannot
// reach Redis): a worker starts no job it holds past that lease without a
// round trip that shows it the cancel. So when Cancel returned nil, no
// handler of the job starts unless it is retried, and the cancelled run,
// if one is still going, has its context cancelled: a job retried from
// then on ([Queue.Retry], [Queue.RetryFailed]) may run beside a cancelled
// run only if that run ignores its context. (A handler whose call was
// already under way when its worker learned of the cancel gets its
// context cancelled before Cancel returns, and may run its first
// statement after.) Against a live worker Cancel takes a few round trips;
// against a dead one up to the lease. When ctx
// ends first, Cancel returns the state and an error matching
// [ErrCancelUnconfirmed] and ctx's error: the job is cancelled all the
// same, but its worker may still start the handler, or run it with a live
// context, until it learns of the cancel.
//
// A completed or failed job is not cancelled (a [*StateError]). A
// cancelled job runs again only if an operator retries it ([Queue.Retry]).
func (q *Queue) Cancel(ctx context.Context, id string) (State, error) {
	if _, ok := q.fan(); ok {
		s, err := q.holder(ctx, id)
		if err != nil {
			return 0, err
		}
		return s.Cancel(ctx, id)
	}
	s, keys, args := q.call(BulkCancel, id, RetryOptions{})
	res, err := q.act(ctx, s, "cancel", id, keys, args...)
	if err != nil {
		return 0, err
	}
	if err := q.refused("cancel", id, res, "waiting, delayed or active"); err != nil {
		return 0, err
	}
	was := parseState(res[1])
	if len(res) >= 5 {
		// A running job: wait until its worker can no longer start it or
		// run it with a live context.
		return was, q.awaitStopped(ctx, "cancel", id, replyString(res[4]), leaseEnd(res[2], res[3]))
	}
	return was, nil
}

// call is the script, keys and arguments of action a on job id (o: how a
// retry sends it back), for Retry, Delete and Cancel and their bulk
// steps alike.
func (q *Queue) call(a BulkAction, id string, o RetryOptions) (*redis.Script, []string, []any) {
	k := q.keys
	switch a {
	case BulkRetry:
		return scriptRetry, []string{k.jobs, k.wait, k.marker, k.active, k.delayed, k.failed, k.completed}, []any{id, boolArg(o.ResetAttempts)}
	case BulkDelete:
		return scriptDelete, []string{k.jobs, k.wait, k.due, k.active, k.delayed, k.failed, k.completed, k.cancelling}, []any{id}
	}
	return scriptCancel, []string{k.jobs, k.wait, k.due, k.active, k.delayed, k.failed, k.completed, k.control, k.marker, k.giveup, k.giveupCalls, k.cancelling},
		[]any{id, ErrCancelled.Error(), q.failFor.Milliseconds(), q.failMost, k.cancels}
}

// act runs the action script s on job id.
func (q *Queue) act(ctx context.Context, s *redis.Script, action, id string, keys []string, args ...any) ([]any, error) {
	if id == "" {
		return nil, fmt.Errorf("native: %s: the job ID is empty, want the ID of a job of queue %q", action, q.name)
	}
	res, err := s.Run(ctx, q.rdb, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("native: %s job %q of queue %q: %w", action, id, q.name, err)
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("native: %s job %q of queue %q: the script returned nothing", action, id, q.name)
	}
	return res, nil
}

// refused turns an action script's refusal into its error: -2 an unknown
// job, -5 a job in a state the action does not apply to (want names those
// it does).
func (q *Queue) refused(action, id string, res []any, want string) error {
	switch parseInt(res[0]) {
	case -2:
		return fmt.Errorf("%w (queue %q, ID %q)", ErrNotFound, q.name, id)
	case -5:
		return &StateError{Queue: q.name, ID: id, Action: action, State: parseState(res[1]), Want: want}
	}
	return nil
}

// parseState reads a state's name as the scripts answer it.
func parseState(v any) State {
	name := replyString(v)
	for s := StateWaiting; s <= StateFailed; s++ {
		if s.String() == name {
			return s
		}
	}
	return 0
}

func boolArg(b bool) int {
	if b {
		return 1
	}
	return 0
}
