package native

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// A change of N, live (see docs/native.md, "Changing N"). Reshard writes a
// layout of the new count whose epoch is one more, which keeps the old
// layout's tags as Prev, and raises every shard's epoch to it (the fence):
// from then on every shard refuses, in the script that would store the
// job, a producer holding an older layout, which reads the layout again
// and sends the job where the new one puts it. Workers read the layout
// every few seconds, start serving the new shards and keep serving the old
// ones. FinishReshard drops Prev once the old layout's shards that the new
// one does not keep hold no job in any state; the workers then stop
// serving them. A shard's epoch key is never deleted, so a process that
// slept through the whole change is still refused.

// ErrReshardDraining is returned (wrapped) by [Queue.FinishReshard] while a
// shard the change drops still holds jobs, and by [Reshard] while an earlier
// change has not been finished.
var ErrReshardDraining = errors.New("native: a change of the queue's shards is still draining")

// ReshardStatus is where a queue's count of shards stands.
type ReshardStatus struct {
	Queue string
	// Epoch is the layout's number: 0 for a queue with no layout (of one
	// shard, never changed), one more for each change of N.
	Epoch int64
	// Shards is the layout's count of shards: where new jobs go.
	Shards int
	// From is the count before the change that drains, 0 when none does.
	From int
	// Draining is each shard of the previous layout that the new one does
	// not keep, and what it holds: FinishReshard waits for each to hold no
	// unfinished job.
	Draining []DrainingShard
}

// Done reports whether no change of N drains.
func (s ReshardStatus) Done() bool { return s.From == 0 }

// Unfinished is the count of jobs the draining shards hold that keep the
// change from finishing: waiting, active, delayed or failed.
func (s ReshardStatus) Unfinished() int64 {
	var n int64
	for _, d := range s.Draining {
		c := d.Counts
		n += c.Waiting + c.Active + c.Delayed + c.Failed
	}
	return n
}

// A DrainingShard is a shard a change of N drops, and what it holds.
type DrainingShard struct {
	Tag    string // its hash tag
	Counts Counts
}

// Reshard changes the count of shards of the queue called name on rdb to
// shards, live: nothing is moved, and no job is lost or run twice. New jobs
// go to the new layout at once (a producer holding the old one is refused
// by the shard, re-reads the layout and sends the job again); the jobs
// already stored stay on their shards, which workers keep serving, and an
// action by ID finds a job on whichever shard holds it. Growing keeps
// every shard (and adds tags chosen as [NewShardedQueue] chooses them);
// shrinking keeps the first shards and drains the others: call
// [Queue.FinishReshard] once they hold no job, and the workers stop
// serving them.
//
// Every process of the queue must have opened it with [OpenQueue] or
// [NewShardedQueue]: one from [NewQueue] goes on using shard 0 alone
// (its producers' jobs are still served and found; its workers serve only
// shard 0). One change at a time: while one drains, Reshard to another
// count returns an error wrapping [ErrReshardDraining]; Reshard to the
// count already written repeats the fence, which is how to finish a call
// that failed half-way. shards must be 1 to [MaxShards].
func Reshard(ctx context.Context, rdb redis.UniversalClient, name string, shards int, opts ...QueueOption) (ReshardStatus, error) {
	if ctx == nil {
		return ReshardStatus{}, fmt.Errorf("native: Reshard %q: ctx is nil, want a context.Context (context.Background() for none)", name)
	}
	if shards < 1 || shards > MaxShards {
		return ReshardStatus{}, fmt.Errorf("native: Reshard %q: %d shards is out of range, want 1..%d", name, shards, MaxShards)
	}
	base, err := NewQueue(rdb, name, opts...)
	if err != nil {
		return ReshardStatus{}, err
	}
	lk := layoutKey(base.prefix, name)
	raw, l, err := readLayout(ctx, rdb, lk)
	if err != nil {
		return ReshardStatus{}, fmt.Errorf("native: Reshard %q: %w", name, err)
	}
	if l == nil {
		l = &layout{Shards: []string{base.tag}}
	}
	var q *Queue
	if l.Prev != nil {
		if len(l.Shards) != shards {
			return ReshardStatus{}, fmt.Errorf("%w: queue %q: the change from %d to %d shards is not finished; finish it (Queue.FinishReshard, `rebound queue reshard -finish`) before changing to %d",
				ErrReshardDraining, name, len(l.Prev), len(l.Shards), shards)
		}
		q = base.withLayout(raw, l)
		if err := q.fence(ctx); err != nil {
			return ReshardStatus{}, fmt.Errorf("native: Reshard %q: %w", name, err)
		}
		return q.ReshardStatus(ctx)
	}
	if len(l.Shards) == shards {
		q = base.withLayout(raw, l)
		return q.ReshardStatus(ctx)
	}
	tags := l.Shards[:min(shards, len(l.Shards))]
	if shards > len(l.Shards) {
		if tags, err = chooseTags(ctx, rdb, l.Shards, shards); err != nil {
			return ReshardStatus{}, fmt.Errorf("native: Reshard %q: choose the new shards' hash tags: %w", name, err)
		}
	}
	next := &layout{Version: layoutVersion, Epoch: l.Epoch + 1, Shards: tags, Prev: l.Shards}
	text, _ := json.Marshal(next)
	ok, err := scriptLayoutSwap.Run(ctx, rdb, []string{lk}, raw, string(text)).Int()
	if err != nil {
		return ReshardStatus{}, fmt.Errorf("native: Reshard %q: write the new layout: %w", name, err)
	}
	if ok == 0 {
		return ReshardStatus{}, fmt.Errorf("native: Reshard %q: the layout changed while this call read it (another Reshard at once?); nothing was written, call it again", name)
	}
	q = base.withLayout(string(text), next)
	if err := q.fence(ctx); err != nil {
		return ReshardStatus{}, fmt.Errorf("native: Reshard %q: the layout of %d shards is written, but %w; call Reshard with %d again to finish", name, shards, err, shards)
	}
	return q.ReshardStatus(ctx)
}

// fence raises the epoch of every shard of q's view to the view's.
func (q *Queue) fence(ctx context.Context) error {
	v := q.view()
	return onShards(v.all, func(_ int, s *Queue) error {
		if err := scriptLayoutFence.Run(ctx, s.rdb, []string{s.keys.epoch}, v.epoch).Err(); err != nil {
			return fmt.Errorf("the fence of shard %q failed: %w", s.tag, err)
		}
		return nil
	})
}

// current returns q as its layout says (q itself when it was opened by
// its layout, else a queue opened so) and the layout read again now; what
// names the method in errors.
func (q *Queue) current(ctx context.Context, what string) (*Queue, *shardView, error) {
	if ctx == nil {
		return nil, nil, fmt.Errorf("native: %s on queue %q: ctx is nil, want a context.Context (context.Background() for none)", what, q.name)
	}
	o := q
	if q.lay == nil {
		var err error
		if o, err = OpenQueue(ctx, q.rdb, q.name, WithPrefix(q.prefix)); err != nil {
			return nil, nil, err
		}
	}
	v, err := o.reload(ctx)
	if err != nil {
		return nil, nil, err
	}
	return o, v, nil
}

// ReshardStatus reads the queue's layout again and reports where its count
// of shards stands: the count, and while a change drains, what each shard
// it drops still holds.
func (q *Queue) ReshardStatus(ctx context.Context) (ReshardStatus, error) {
	_, v, err := q.current(ctx, "ReshardStatus")
	if err != nil {
		return ReshardStatus{}, err
	}
	return q.statusOf(ctx, v)
}

// statusOf reports where the layout v stands, counting the jobs of the
// shards a change drops.
func (q *Queue) statusOf(ctx context.Context, v *shardView) (ReshardStatus, error) {
	st := ReshardStatus{Queue: q.name, Epoch: v.epoch, Shards: len(v.cur)}
	if v.prev == nil {
		return st, nil
	}
	st.From = len(v.prev)
	drop := v.all[len(v.cur):]
	st.Draining = make([]DrainingShard, len(drop))
	err := onShards(drop, func(i int, s *Queue) error {
		c, err := s.Counts(ctx)
		st.Draining[i] = DrainingShard{Tag: s.tag, Counts: c}
		return err
	})
	if err != nil {
		return ReshardStatus{}, fmt.Errorf("native: ReshardStatus on queue %q: %w", q.name, err)
	}
	return st, nil
}

// FinishReshard ends the change of N that drains: once every shard the
// change drops holds no unfinished job (waiting, active, delayed or
// failed: the workers run the first three; retry or delete the failed
// ones), it deletes those shards' completed jobs, as retention would, and
// drops the previous layout; the workers stop serving those shards within
// a few seconds. While one still holds unfinished jobs, it changes nothing
// and returns the status with an error wrapping [ErrReshardDraining]. With
// no change draining it returns the status.
func (q *Queue) FinishReshard(ctx context.Context) (ReshardStatus, error) {
	o, v, err := q.current(ctx, "FinishReshard")
	if err != nil {
		return ReshardStatus{}, err
	}
	if v.prev == nil {
		return q.statusOf(ctx, v)
	}
	// The fence again (idempotent): a draining shard must not take a job
	// after it was counted empty.
	if err := o.fence(ctx); err != nil {
		return ReshardStatus{}, fmt.Errorf("native: FinishReshard on queue %q: %w", q.name, err)
	}
	st, err := q.statusOf(ctx, v)
	if err != nil {
		return st, err
	}
	if n := st.Unfinished(); n > 0 {
		return st, fmt.Errorf("%w: queue %q: the %d shards it drops still hold %d unfinished jobs (%s); wait for the workers to run them, and retry or delete the failed ones",
			ErrReshardDraining, q.name, len(st.Draining), n, drainingText(st.Draining))
	}
	err = onShards(v.all[len(v.cur):], func(_ int, s *Queue) error {
		for {
			n, err := scriptDropCompleted.Run(ctx, s.rdb, []string{s.keys.completed, s.keys.jobs}, 1000).Int()
			if err != nil {
				return fmt.Errorf("delete the completed jobs of shard %q: %w", s.tag, err)
			}
			if n == 0 {
				return nil
			}
		}
	})
	if err != nil {
		return st, fmt.Errorf("native: FinishReshard on queue %q: %w", q.name, err)
	}
	tags := make([]string, len(v.cur))
	for i, s := range v.cur {
		tags[i] = s.tag
	}
	text, _ := json.Marshal(layout{Version: layoutVersion, Epoch: v.epoch, Shards: tags})
	ok, err := scriptLayoutSwap.Run(ctx, q.rdb, []string{o.lay.key}, v.raw, string(text)).Int()
	if err != nil {
		return st, fmt.Errorf("native: FinishReshard on queue %q: write the layout: %w", q.name, err)
	}
	if ok == 0 {
		return st, fmt.Errorf("native: FinishReshard on queue %q: the layout changed while this call read it (another FinishReshard at once?); nothing was written, call it again", q.name)
	}
	return o.ReshardStatus(ctx)
}

// drainingText says what each draining shard holds.
func drainingText(ds []DrainingShard) string {
	var b []byte
	for i, d := range ds {
		if i > 0 {
			b = append(b, "; "...)
		}
		c := d.Counts
		b = fmt.Appendf(b, "%s: %d waiting, %d active, %d delayed, %d completed, %d failed", d.Tag, c.Waiting, c.Active, c.Delayed, c.Completed, c.Failed)
	}
	return string(b)
}
