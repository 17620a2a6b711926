package native

import (
	"context"
	"fmt"
)

// Pause stops the queue's workers from taking jobs, until [Queue.Resume]:
// a worker's reserve hands out nothing while the queue is paused. Jobs
// that are running go on, finish and store their outcomes as usual, and
// so do the few a worker had reserved ahead of its free handlers
// ([WithPrefetch]); enqueues go on too, and retries and delayed jobs still
// become due on time (workers keep promoting them), so nothing is lost and
// nothing is late when the queue resumes. Pausing a paused queue changes nothing. It
// is the queue's state in Redis, so it holds for every worker, and for
// workers started later, until resumed.
func (q *Queue) Pause(ctx context.Context) error {
	if _, ok := q.fan(); ok {
		return q.eachShard(ctx, (*Queue).Pause)
	}
	if err := scriptPause.Run(ctx, q.rdb, []string{q.keys.control}).Err(); err != nil {
		return fmt.Errorf("native: pause queue %q: %w", q.name, err)
	}
	return nil
}

// Resume lets the queue's workers take jobs again after [Queue.Pause], and
// wakes an idle one if jobs are waiting (it passes the wake-up on while
// more are). Resuming a queue that is not paused changes nothing.
func (q *Queue) Resume(ctx context.Context) error {
	if _, ok := q.fan(); ok {
		return q.eachShard(ctx, (*Queue).Resume)
	}
	k := q.keys
	if err := scriptResume.Run(ctx, q.rdb, []string{k.control, k.wait, k.due, k.marker}).Err(); err != nil {
		return fmt.Errorf("native: resume queue %q: %w", q.name, err)
	}
	return nil
}

// Paused reports whether the queue is paused ([Queue.Pause]). [Counts]
// reports it too, with the counts.
func (q *Queue) Paused(ctx context.Context) (bool, error) {
	if _, ok := q.fan(); ok {
		return q.pausedShards(ctx)
	}
	paused, err := q.rdb.HExists(ctx, q.keys.control, "paused").Result()
	if err != nil {
		return false, fmt.Errorf("native: read whether queue %q is paused: %w", q.name, err)
	}
	return paused, nil
}
