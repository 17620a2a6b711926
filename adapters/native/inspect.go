package native

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// State is where a job is in its life.
type State int

const (
	// StateWaiting means the job waits for a free worker: on the wait list
	// (enqueued to run at once) or the due list (its delay has passed).
	StateWaiting State = iota + 1
	// StateActive means a worker holds the job's lease and runs it.
	StateActive
	// StateDelayed means the job waits for its fire time: a first run
	// enqueued with a delay, or a retry waiting its backoff.
	StateDelayed
	// StateCompleted means an attempt succeeded.
	StateCompleted
	// StateFailed means the job gave up for good: attempts exhausted or a
	// permanent error. It is kept for the inspector within the queue's
	// [WithFailedRetention].
	StateFailed
)

// String returns "waiting", "active", "delayed", "completed" or "failed".
func (s State) String() string {
	switch s {
	case StateWaiting:
		return "waiting"
	case StateActive:
		return "active"
	case StateDelayed:
		return "delayed"
	case StateCompleted:
		return "completed"
	case StateFailed:
		return "failed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// StoredJob is the stored state of one job, as [Queue.Job] reads it from
// Redis: where it is, its attempts, its last error and its data. (A
// [Handler] gets a [Job], one attempt of it.)
type StoredJob struct {
	// ID is the job's ID.
	ID string
	// Name is the job's name, "" if it has none.
	Name string
	// State is where the job is.
	State State
	// Attempts is the number of attempts started so far (for a finished
	// job, the number it took).
	Attempts int
	// MaxAttempts is the job's own cap, 0 when the worker's rule decides.
	MaxAttempts int
	// LastError is the error text of the last failed attempt, "" if none.
	LastError string
	// NextFireAt is when a delayed job becomes due, by the server's clock;
	// zero unless State is StateDelayed.
	NextFireAt time.Time
	// LeaseDeadline is when an active job's lease runs out unless renewed;
	// zero unless State is StateActive.
	LeaseDeadline time.Time
	// CreatedAt is when the job was enqueued, by the server's clock.
	CreatedAt time.Time
	// FinishedAt is when the job completed or failed for good.
	FinishedAt time.Time
	// Payload is the job's payload.
	Payload []byte
	// Metadata is the job's persisted metadata.
	Metadata map[string]string
	// Cancelled reports a failed job that failed because an operator
	// cancelled it ([Queue.Cancel]); its LastError is then ErrCancelled's
	// text.
	Cancelled bool
}

// Job returns the stored state of the job with the given ID, read in one
// transaction, or an error wrapping [ErrNotFound].
func (q *Queue) Job(ctx context.Context, id string) (StoredJob, error) {
	if _, ok := q.fan(); ok {
		s, err := q.holder(ctx, id)
		if err != nil {
			return StoredJob{}, err
		}
		return s.Job(ctx, id)
	}
	k := q.keys
	var (
		stored                        *redis.StringCmd
		active, delayed, failed, done *redis.FloatCmd
	)
	// One transaction: all keys share the queue's slot, and the answers
	// describe a single instant.
	_, err := q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		stored = p.HGet(ctx, k.jobs, id)
		active = p.ZScore(ctx, k.active, id)
		delayed = p.ZScore(ctx, k.delayed, id)
		failed = p.ZScore(ctx, k.failed, id)
		done = p.ZScore(ctx, k.completed, id)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return StoredJob{}, fmt.Errorf("native: inspect job %q on queue %q: %w", id, q.name, err)
	}
	if stored.Err() != nil {
		return StoredJob{}, fmt.Errorf("%w (queue %q, ID %q)", ErrNotFound, q.name, id)
	}
	r, err := decodeRecord(stored.Val())
	if err != nil {
		return StoredJob{}, fmt.Errorf("native: inspect job %q on queue %q: %w", id, q.name, err)
	}
	info := storedJob(id, r)
	switch {
	case active.Err() == nil:
		info.State = StateActive
		info.LeaseDeadline = time.UnixMilli(int64(active.Val()))
	case delayed.Err() == nil:
		info.State = StateDelayed
		info.NextFireAt = time.UnixMilli(int64(delayed.Val()) / 0x1000)
	case failed.Err() == nil:
		info.State = StateFailed
		info.Cancelled = r.cancelled()
	case done.Err() == nil || r.finished != 0:
		info.State = StateCompleted
	default:
		info.State = StateWaiting
	}
	return info, nil
}

// storedJob is what record r of job id says, all but where the job is.
func storedJob(id string, r record) StoredJob {
	return StoredJob{
		ID:          id,
		Name:        r.name,
		MaxAttempts: r.max,
		LastError:   r.err,
		Payload:     r.payload,
		Metadata:    decodeMeta(r.meta),
		CreatedAt:   msTime(r.created),
		FinishedAt:  msTime(r.finished),
		Attempts:    r.attempts,
	}
}

func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// Counts is how many jobs a queue holds in each state, and whether it is
// paused.
type Counts struct {
	Waiting, Active, Delayed, Completed, Failed int64
	// Paused reports a queue an operator paused ([Queue.Pause]).
	Paused bool
}

// Counts returns how many jobs the queue holds in each state, and whether
// it is paused, read in one transaction. Completed and Failed count the
// jobs still within their retention.
func (q *Queue) Counts(ctx context.Context) (Counts, error) {
	if _, ok := q.fan(); ok {
		return q.countShards(ctx)
	}
	k := q.keys
	var w, u, a, d, c, f *redis.IntCmd
	var paused *redis.BoolCmd
	_, err := q.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		w = p.LLen(ctx, k.wait)
		u = p.LLen(ctx, k.due)
		a = p.ZCard(ctx, k.active)
		d = p.ZCard(ctx, k.delayed)
		c = p.ZCard(ctx, k.completed)
		f = p.ZCard(ctx, k.failed)
		paused = p.HExists(ctx, k.control, "paused")
		return nil
	})
	if err != nil {
		return Counts{}, fmt.Errorf("native: count jobs on queue %q: %w", q.name, err)
	}
	return Counts{Waiting: w.Val() + u.Val(), Active: a.Val(), Delayed: d.Val(), Completed: c.Val(), Failed: f.Val(),
		Paused: paused.Val()}, nil
}

// Promote moves every due delayed job (up to 1000 per call) to the due
// list, where workers take it ahead of the wait list, and returns how many
// moved. Workers do this on every fetch; Promote
// is for tools and tests that want the sweep without a worker.
func (q *Queue) Promote(ctx context.Context) (int, error) {
	if _, ok := q.fan(); ok {
		return q.promoteShards(ctx)
	}
	k := q.keys
	res, err := scriptPromote.Run(ctx, q.rdb, []string{k.delayed, k.due, k.marker}).Slice()
	if err != nil {
		return 0, fmt.Errorf("native: promote on queue %q: %w", q.name, err)
	}
	return int(parseInt(res[0])), nil
}
