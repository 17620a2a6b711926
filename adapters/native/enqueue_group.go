package native

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Group commit: concurrent [Queue.Enqueue] calls on one queue share script
// calls, as a database commits several transactions in one log write. A
// call that finds no call of the queue in flight sends its job at once, in a
// script call of its own (no added latency when alone); calls that arrive
// while one is in flight wait in arrival order, and when the call in flight
// returns, the longest-waiting of them takes up to manyChunk jobs and
// manyChunkBytes of arguments (always at least one job) and sends them in
// one enqueue_many call, exactly as EnqueueMany would send them. Everything
// runs in the callers' goroutines: the queue starts none, so no goroutine
// outlives a call and a Queue needs no Close.
//
// A call's ctx is its own. One that ends while the call waits removes the
// call: its job is never sent and the call returns ctx.Err() itself. Once a
// job is sent, its call waits for Redis's answer even if ctx ends, and
// returns what was stored (its ID, or ErrJobExists); the round trip is
// abandoned only when the ctx of every call it carries has ended (where the
// client still can: waiting for a connection, before writing, or at the
// latest of the calls' deadlines when every one has one), and then each of
// those calls returns an error wrapping its ctx's that says the job may or
// may not be stored.

// enqueueGroup is a queue's group-commit state.
type enqueueGroup struct {
	mu      sync.Mutex
	busy    bool         // a call is in flight, or its leader is picking the next batch
	pending []*groupCall // calls waiting for the next batch, in arrival order
}

// groupCall is one Enqueue call riding a group commit.
type groupCall struct {
	ctx context.Context
	job preparedJob

	// wake, made when the call waits, receives once: when the call's
	// result is set, or when it is to lead batch (lead is then set).
	wake chan struct{}
	lead []*groupCall

	taken bool // out of pending, owned by a leader (under enqueueGroup.mu)

	// The result, set by the batch's leader before wake.
	code int64 // 0 ID taken, 1 waiting, 2 delayed
	err  error
}

// enqueueGrouped stores j through the queue's group commit and returns its
// script code: 0 when the ID is taken, 1 or 2 when stored.
func (q *Queue) enqueueGrouped(ctx context.Context, j preparedJob) (int64, error) {
	c := &groupCall{ctx: ctx, job: j}
	g := &q.group
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		q.lead(c, []*groupCall{c})
		return c.code, c.err
	}
	c.wake = make(chan struct{}, 1)
	g.pending = append(g.pending, c)
	g.mu.Unlock()
	select {
	case <-c.wake:
	case <-ctx.Done():
		g.mu.Lock()
		if !c.taken {
			g.remove(c)
			g.mu.Unlock()
			return 0, ctx.Err()
		}
		g.mu.Unlock()
		<-c.wake // a leader owns the call now: it sends it or drops it
	}
	if c.lead != nil {
		q.lead(c, c.lead)
	}
	return c.code, c.err
}

// remove drops c from the pending calls (under g.mu).
func (g *enqueueGroup) remove(c *groupCall) {
	for i, p := range g.pending {
		if p == c {
			last := len(g.pending) - 1
			copy(g.pending[i:], g.pending[i+1:])
			g.pending[last] = nil // no reference kept past the end
			g.pending = g.pending[:last]
			return
		}
	}
}

// next takes the next batch from the pending calls (under g.mu): the
// longest-waiting ones up to manyChunk jobs and manyChunkBytes of
// arguments, at least one. It returns nil when none waits.
func (g *enqueueGroup) next() []*groupCall {
	if len(g.pending) == 0 {
		return nil
	}
	n, size := 0, 0
	for n < len(g.pending) && n < manyChunk && (n == 0 || size+g.pending[n].job.size() <= manyChunkBytes) {
		size += g.pending[n].job.size()
		g.pending[n].taken = true
		n++
	}
	batch := make([]*groupCall, n)
	copy(batch, g.pending[:n])
	rest := copy(g.pending, g.pending[n:])
	clear(g.pending[rest:])
	g.pending = g.pending[:rest]
	return batch
}

// lead sends batch, which self (running this) is part of, sets every call's
// result, wakes the others, and hands the next batch, if calls wait, to
// the first of it. Should sending panic (a hook of the user's), the calls of
// the batch get an error and the next batch still gets its leader, so no
// call waits for good.
func (q *Queue) lead(self *groupCall, batch []*groupCall) {
	done := false
	defer func() {
		if !done {
			err := fmt.Errorf("native: enqueue on queue %q: sending the batch panicked; the job may or may not be stored", q.name)
			for _, c := range batch {
				if c.code == 0 && c.err == nil {
					c.err = err
				}
			}
			q.handOff(self, batch)
		}
	}()
	live := make([]*groupCall, 0, len(batch))
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err // ended before its job was sent: not stored
			continue
		}
		live = append(live, c)
	}
	if len(live) > 0 {
		q.send(live)
	}
	done = true
	q.handOff(self, batch)
}

// handOff wakes every call of batch but self, whose results are set, and
// passes the queue's group commit on: to the first call of the next batch
// whose ctx has not ended (the calls before it return their ctx.Err(),
// unsent), or to no one when none waits.
func (q *Queue) handOff(self *groupCall, batch []*groupCall) {
	g := &q.group
	var next []*groupCall
	var leader *groupCall
	for leader == nil {
		g.mu.Lock()
		next = g.next()
		if next == nil {
			g.busy = false
		}
		g.mu.Unlock()
		if next == nil {
			break
		}
		for i, c := range next {
			if c.ctx.Err() == nil {
				leader, next = c, next[i:]
				break
			}
			c.err = c.ctx.Err()
			c.wake <- struct{}{}
		}
	}
	for _, c := range batch {
		if c != self {
			c.wake <- struct{}{}
		}
	}
	// The next leader is woken last: the runtime runs the goroutine it
	// readied last first, and the next round trip waits for that one.
	if leader != nil {
		leader.lead = next
		leader.wake <- struct{}{}
	}
}

// send stores the jobs of calls (none of whose ctx had ended) in one script
// call and sets each call's code, or its error. The round trip runs on a
// context of its own (the first call's values, none of its cancellation),
// ended only when every call's ctx has ended, and given the latest of their
// deadlines when each has one: a call's job, once sent, is answered for
// whatever the other calls' ctxs do.
func (q *Queue) send(calls []*groupCall) {
	ctx := context.WithoutCancel(calls[0].ctx)
	ending, latest, bounded := 0, time.Time{}, 0
	for _, c := range calls {
		if c.ctx.Done() != nil {
			ending++
		}
		if d, ok := c.ctx.Deadline(); ok {
			bounded++
			if d.After(latest) {
				latest = d
			}
		}
	}
	if bounded == len(calls) {
		// The client reads a reply until the ctx's deadline: the latest
		// of the calls', when every one has one.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, latest)
		defer cancel()
	}
	if ending == len(calls) { // else some call waits for good: the round trip runs to its end
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		var left atomic.Int64
		left.Store(int64(ending))
		for _, c := range calls {
			stop := context.AfterFunc(c.ctx, func() {
				if left.Add(-1) == 0 {
					cancel()
				}
			})
			defer stop()
		}
	}
	codes, err := q.store(ctx, calls)
	abandoned := err != nil && ctx.Err() != nil
	for i, c := range calls {
		switch {
		case abandoned:
			c.err = fmt.Errorf("native: enqueue on queue %q: the job was sent, but the ctx of every call riding its script call ended before Redis answered, so it may or may not be stored: %w", q.name, c.ctx.Err())
		case err != nil:
			c.err = err
		default:
			c.code = codes[i]
		}
	}
}

// store runs the script that stores the jobs of calls: enqueue or
// enqueue_delayed for one job (the cheapest call), enqueue_many for more.
// It returns one code per call.
func (q *Queue) store(ctx context.Context, calls []*groupCall) ([]int64, error) {
	k := q.keys
	if len(calls) == 1 {
		j := &calls[0].job
		var code int64
		var err error
		if j.delayUs > 0 {
			keys, args := []string{k.jobs, k.delayed, k.marker}, j.args()
			if q.fenced {
				keys, args = append(keys, k.epoch), append(args, q.epoch)
			}
			code, err = scriptEnqueueDelayed.Run(ctx, q.rdb, keys, args...).Int64()
		} else if q.fenced {
			code, err = scriptEnqueue.Run(ctx, q.rdb, []string{k.jobs, k.wait, k.marker, k.epoch}, j.id, j.payload, j.maxAttempts, j.texts(), q.epoch).Int64()
		} else {
			code, err = scriptEnqueue.Run(ctx, q.rdb, []string{k.jobs, k.wait, k.marker}, j.id, j.payload, j.maxAttempts, j.texts()).Int64()
		}
		if err != nil {
			return nil, fmt.Errorf("native: enqueue on queue %q: %w", q.name, err)
		}
		return []int64{code}, nil
	}
	keys, args := q.manyCall(len(calls))
	for _, c := range calls {
		args = c.job.appendArgs(args)
	}
	codes, err := scriptEnqueueMany.Run(ctx, q.rdb, keys, args...).Int64Slice()
	if err == nil && len(codes) != len(calls) {
		err = fmt.Errorf("enqueue_many returned %d codes for %d jobs, want one per job", len(codes), len(calls))
	}
	if err != nil {
		return nil, fmt.Errorf("native: enqueue on queue %q (a script call of %d jobs): %w", q.name, len(calls), err)
	}
	return codes, nil
}

// manyCall returns the KEYS of an enqueue_many call of q and the start of
// its ARGV, room made for n jobs: a shard's calls carry its layout epoch.
func (q *Queue) manyCall(n int) ([]string, []any) {
	k := q.keys
	if q.fenced {
		return []string{k.jobs, k.wait, k.delayed, k.marker, k.epoch}, append(make([]any, 0, 1+n*argCount), q.epoch)
	}
	return []string{k.jobs, k.wait, k.delayed, k.marker}, make([]any, 0, n*argCount)
}
