package native

import (
	"context"

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

func (w *Worker) sendBatch(batch []*finishReq) {
	ctx := context.Background()
	if len(batch) == 1 {
		r := batch[0]
		res, err := r.script.Run(r.ctx, w.q.rdb, r.keys, r.args...).Slice()
		r.done <- finishRes{res, err}
		return
	}
	cmds := make([]*redis.Cmd, len(batch))
	_, _ = w.q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range batch {
			cmds[i] = r.script.EvalSha(ctx, p, r.keys, r.args...)
		}
		return nil
	})
	for i, r := range batch {
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
		return s.Run(ctx, w.q.rdb, keys, args...).Slice()
	}
	select {
	case out := <-r.done:
		return out.res, out.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
