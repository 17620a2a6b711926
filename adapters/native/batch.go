package native

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// finishReq is one complete or fail call waiting to be sent.
type finishReq struct {
	script *redis.Script
	keys   []string
	args   []any
	done   chan finishRes
	// freesSlot: its sender frees the attempt's slot right after handing
	// it over (store does), so the fetch loop may wait for that slot.
	freesSlot bool
	// taken is set by whoever sends the call: the fetch loop or finisher
	// that took it from finishCh, or its own submitter reclaiming it once
	// the worker's background goroutines have stopped.
	taken atomic.Bool
}

type finishRes struct {
	res []any
	err error
}

// finisherBatch is the most outcome calls sent in one round trip.
const finisherBatch = 128

// finishers is how many goroutines store outcomes once the fetch loop has
// stopped (after Shutdown began); until then the fetch loop stores them.
const finishers = 1

// finisher stores the outcomes of attempts that end after the fetch loop
// stopped, in pipelined batches like the fetch loop's. Until then it
// leaves them to the fetch loop: an outcome that arrives while a reserve is
// out waits for the next one and rides in its round trip (a handler does
// not wait for its outcome to be stored before its slot is refilled). Were
// it to take them as they come, about one outcome batch per reserve would
// cost a round trip and a script call of its own.
func (w *Worker) finisher() {
	defer w.bg.Done()
	select {
	case <-w.fetchDone:
	case <-w.bgStop:
		return
	}
	batch := make([]*finishReq, 0, finisherBatch)
	for {
		batch = batch[:0]
		select {
		case <-w.bgStop:
			return
		case r := <-w.finishCh:
			batch = append(batch, r)
		}
		w.sendBatch(w.drainOutcomes(batch))
	}
}

// batchHead is how many leading arguments of a batched script's call are
// shared by all its jobs (complete and fail: the queue's retention of the
// set they finish jobs into; fail also the lease on an owed give-up call);
// the rest of each request's arguments are its job's.
func batchHead(s *redis.Script) int {
	switch s {
	case scriptComplete:
		return 2
	case scriptFail:
		return 3
	}
	return 0
}

// sendBatch stores a batch of outcomes in one round trip.
func (w *Worker) sendBatch(batch []*finishReq) {
	if len(batch) == 0 {
		return
	}
	ctx := context.Background()
	b := w.prepareBatch(batch)
	_, _ = w.q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		b.queue(ctx, p)
		return nil
	})
	w.answerBatch(b)
}

// outcomeBatch is a batch of outcome calls grouped by script: every
// complete of the batch goes in one call of the complete script, and every
// fail in one call of the fail script (each ends its jobs in turn, as
// alone).
type outcomeBatch struct {
	order  []*redis.Script
	groups map[*redis.Script][]*finishReq
	args   [][]any
	cmds   []*redis.Cmd
}

// prepareBatch groups the calls of batch that are still to be sent (a call
// its submitter took back is left out).
func (w *Worker) prepareBatch(batch []*finishReq) *outcomeBatch {
	b := &outcomeBatch{groups: map[*redis.Script][]*finishReq{}}
	for _, r := range batch {
		if !r.taken.CompareAndSwap(false, true) {
			continue
		}
		if b.groups[r.script] == nil {
			b.order = append(b.order, r.script)
		}
		b.groups[r.script] = append(b.groups[r.script], r)
	}
	b.args = make([][]any, len(b.order))
	b.cmds = make([]*redis.Cmd, len(b.order))
	for i, s := range b.order {
		reqs := b.groups[s]
		head := batchHead(s)
		b.args[i] = append(b.args[i], reqs[0].args[:head]...)
		for _, r := range reqs {
			b.args[i] = append(b.args[i], r.args[head:]...)
		}
	}
	return b
}

// queue adds the batch's script calls to a pipeline.
func (b *outcomeBatch) queue(ctx context.Context, p redis.Pipeliner) {
	for i, s := range b.order {
		b.cmds[i] = s.EvalSha(ctx, p, b.groups[s][0].keys, b.args[i]...)
	}
}

// answerBatch hands every call of an executed batch its reply.
func (w *Worker) answerBatch(b *outcomeBatch) {
	for i, s := range b.order {
		w.answer(s, b.groups[s], b.args[i], b.cmds[i])
	}
}

// answer hands each request of one batched script call its own job's reply.
// A call sent again here is bounded by the client's own timeouts, like the
// round trip that carried the batch.
func (w *Worker) answer(s *redis.Script, reqs []*finishReq, args []any, cmd *redis.Cmd) {
	ctx := context.Background()
	res, err := cmd.Slice()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// First use on this server: Run loads the script.
		res, err = s.Run(ctx, w.q.rdb, reqs[0].keys, args...).Slice()
	}
	var rerr redis.Error
	switch {
	case err == nil && len(res) == len(reqs):
		for i, r := range reqs {
			out, jerr := jobReply(res[i])
			r.done <- finishRes{out, jerr}
		}
	case len(reqs) > 1 && (err == nil || errors.As(err, &rerr)):
		// A reply that is not one per job, or an error from the script
		// (say, one unreadable record): send each job alone, so one job's
		// trouble stays its own. Jobs the batch already ended answer
		// "already finished with this token".
		for _, r := range reqs {
			out, jerr := oneReply(s.Run(ctx, w.q.rdb, r.keys, r.args...).Slice())
			r.done <- finishRes{out, jerr}
		}
	default:
		if err == nil {
			err = fmt.Errorf("native: outcome script returned %d replies for %d jobs", len(res), len(reqs))
		}
		for _, r := range reqs {
			r.done <- finishRes{nil, err}
		}
	}
}

// post hands one outcome call to the fetch loop (or, after it stopped, the
// finisher) without waiting for its reply. It returns nil when the worker's
// background goroutines have stopped: the caller then sends the call
// itself.
func (w *Worker) post(s *redis.Script, keys []string, args []any, freesSlot bool) *finishReq {
	r := &finishReq{script: s, keys: keys, args: args, done: make(chan finishRes, 1), freesSlot: freesSlot}
	select {
	case <-w.bgStop:
		return nil
	default:
	}
	select {
	case w.finishCh <- r:
		return r
	case <-w.bgStop:
		return nil
	}
}

// wait waits for the reply of a posted call. If the worker's background
// goroutines stop before anyone took the call, it sends the call itself.
func (r *finishReq) wait(ctx context.Context, bgStop <-chan struct{}, rdb redis.UniversalClient) ([]any, error) {
	select {
	case out := <-r.done:
		return out.res, out.err
	case <-bgStop:
		if r.taken.CompareAndSwap(false, true) {
			return oneReply(r.script.Run(ctx, rdb, r.keys, r.args...).Slice())
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case out := <-r.done:
		return out.res, out.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// submit posts one outcome call and waits for its reply.
func (w *Worker) submit(ctx context.Context, s *redis.Script, keys []string, args ...any) ([]any, error) {
	r := w.post(s, keys, args, false)
	if r == nil {
		return oneReply(s.Run(ctx, w.q.rdb, keys, args...).Slice())
	}
	return r.wait(ctx, w.bgStop, w.q.rdb)
}
