package native

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// finishReq is one complete or fail call waiting to be sent.
type finishReq struct {
	ctx    context.Context
	script *redis.Script
	keys   []string
	args   []any
	done   chan finishRes
}

type finishRes struct {
	res []any
	err error
}

// finisherBatch is the most outcome calls sent in one round trip.
const finisherBatch = 128

// finishers is how many batches may be in flight at once: while one waits
// for its reply, the next one fills.
const finishers = 4

// finisher sends the outcomes of finished attempts in pipelined batches:
// under load many handlers end at once, and one round trip for all of them
// costs far less than one each. Each script still runs atomically on its
// own; the batch only shares the network trip.
func (w *Worker) finisher() {
	defer w.bg.Done()
	batch := make([]*finishReq, 0, finisherBatch)
	for {
		batch = batch[:0]
		select {
		case <-w.bgStop:
			return
		case r := <-w.finishCh:
			batch = append(batch, r)
		}
	drain:
		for len(batch) < finisherBatch {
			select {
			case r := <-w.finishCh:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		w.sendBatch(batch)
	}
}

// completeHead is how many leading arguments of a complete call are the
// queue's retention settings; each job adds id, token and metadata.
const completeHead = 2

// batchHead is how many leading arguments of a batched script's call are
// shared by all its jobs; the rest of each request's arguments are its job's.
func batchHead(s *redis.Script) int {
	if s == scriptComplete {
		return completeHead
	}
	return 0
}

func (w *Worker) sendBatch(batch []*finishReq) {
	ctx := context.Background()
	// Every complete of the batch goes in one call of the complete script,
	// and every fail in one call of the fail script (each ends its jobs in
	// turn, as alone). Both share one round trip.
	groups := map[*redis.Script][]*finishReq{}
	var order []*redis.Script
	for _, r := range batch {
		if groups[r.script] == nil {
			order = append(order, r.script)
		}
		groups[r.script] = append(groups[r.script], r)
	}
	args := make([][]any, len(order))
	cmds := make([]*redis.Cmd, len(order))
	for i, s := range order {
		reqs := groups[s]
		head := batchHead(s)
		args[i] = append(args[i], reqs[0].args[:head]...)
		for _, r := range reqs {
			args[i] = append(args[i], r.args[head:]...)
		}
	}
	_, _ = w.q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range order {
			cmds[i] = s.EvalSha(ctx, p, groups[s][0].keys, args[i]...)
		}
		return nil
	})
	for i, s := range order {
		w.answer(s, groups[s], args[i], cmds[i])
	}
}

// answer hands each request of one batched script call its own job's reply.
func (w *Worker) answer(s *redis.Script, reqs []*finishReq, args []any, cmd *redis.Cmd) {
	res, err := cmd.Slice()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// First use on this server: Run loads the script.
		res, err = s.Run(reqs[0].ctx, w.q.rdb, reqs[0].keys, args...).Slice()
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
			out, jerr := oneReply(s.Run(r.ctx, w.q.rdb, r.keys, r.args...).Slice())
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

// submit queues one outcome call for the finisher and waits for its reply.
// Once the finisher has stopped (a handler that returned after the shutdown
// deadline), the call is sent on its own.
func (w *Worker) submit(ctx context.Context, s *redis.Script, keys []string, args ...any) ([]any, error) {
	r := &finishReq{ctx: ctx, script: s, keys: keys, args: args, done: make(chan finishRes, 1)}
	select {
	case w.finishCh <- r:
	case <-w.bgStop:
		return oneReply(s.Run(ctx, w.q.rdb, keys, args...).Slice())
	}
	select {
	case out := <-r.done:
		return out.res, out.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
