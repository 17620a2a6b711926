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

func (w *Worker) sendBatch(batch []*finishReq) {
	ctx := context.Background()
	// Every complete of the batch goes in one call of the complete script
	// (it ends each job in turn, as alone); fails go one call each. All
	// share one round trip.
	var completes, others []*finishReq
	for _, r := range batch {
		if r.script == scriptComplete {
			completes = append(completes, r)
		} else {
			others = append(others, r)
		}
	}
	var cargs []any
	if len(completes) > 0 {
		cargs = append(cargs, completes[0].args[:completeHead]...)
		for _, r := range completes {
			cargs = append(cargs, r.args[completeHead:]...)
		}
	}
	var ccmd *redis.Cmd
	cmds := make([]*redis.Cmd, len(others))
	_, _ = w.q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if len(completes) > 0 {
			ccmd = scriptComplete.EvalSha(ctx, p, completes[0].keys, cargs...)
		}
		for i, r := range others {
			cmds[i] = r.script.EvalSha(ctx, p, r.keys, r.args...)
		}
		return nil
	})
	if ccmd != nil {
		res, err := ccmd.Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// First use on this server: Run loads the script.
			res, err = scriptComplete.Run(completes[0].ctx, w.q.rdb, completes[0].keys, cargs...).Slice()
		}
		var rerr redis.Error
		switch {
		case err == nil && len(res) == len(completes):
			for i, r := range completes {
				out, jerr := jobReply(res[i])
				r.done <- finishRes{out, jerr}
			}
		case len(completes) > 1 && (err == nil || errors.As(err, &rerr)):
			// A reply that is not one per job, or an error from the
			// script (say, one unreadable record): send each job alone, so
			// one job's trouble stays its own. Jobs the batch already
			// ended answer "already completed with this token".
			for _, r := range completes {
				out, jerr := oneReply(scriptComplete.Run(r.ctx, w.q.rdb, r.keys, r.args...).Slice())
				r.done <- finishRes{out, jerr}
			}
		default:
			if err == nil {
				err = fmt.Errorf("native: complete returned %d replies for %d jobs", len(res), len(completes))
			}
			for _, r := range completes {
				r.done <- finishRes{nil, err}
			}
		}
	}
	for i, r := range others {
		res, err := cmds[i].Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// First use on this server: Run loads the script.
			res, err = r.script.Run(r.ctx, w.q.rdb, r.keys, r.args...).Slice()
		}
		r.done <- finishRes{res, err}
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
		if s == scriptComplete {
			return oneReply(s.Run(ctx, w.q.rdb, keys, args...).Slice())
		}
		return s.Run(ctx, w.q.rdb, keys, args...).Slice()
	}
	select {
	case out := <-r.done:
		return out.res, out.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
