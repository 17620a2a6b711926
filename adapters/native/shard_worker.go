package native

import (
	"context"
	"errors"
	"sync"
)

// A worker of a sharded queue is one part per shard: each part is a worker
// of that shard's sub-queue, with its own fetch loop, wake-up listener,
// lease renewal and reclaim, every command of each on its own shard's
// slot. The parts share what bounds the worker as a whole: the slots (jobs
// held, running or reserved ahead: concurrency + prefetch), the handler
// places (concurrency) with the one queue of jobs reserved ahead, and the
// breaker's guard (the breaker and the retry budget stay per dependency,
// whatever the shard).
//
// Fairness: a part's fetch loop waits for a free slot in a blocking send
// on the shared slots channel; Go hands a freed slot to the senders
// waiting on a channel in the order they began to wait, so the shards with
// work take turns, and a shard with a backlog gets its turn while the
// others are busy. A part whose shard is empty gives its slot back and
// waits on its own shard's marker (BZPOPMIN on its slot), as a worker of
// one shard does, so an idle sharded worker costs per shard what a worker
// of one shard costs, and a job enqueued on any shard wakes that shard's
// part at once.

// newParts builds the parts of w, a worker of the sharded queue q, from
// the options w was built with.
func (w *Worker) newParts(q *Queue, opts []WorkerOption) error {
	for _, s := range q.shards {
		p, err := NewWorker(s, w.rule, w.handler, opts...)
		if err != nil {
			return err
		}
		p.guard = w.guard
		w.parts = append(w.parts, p)
	}
	return nil
}

// startParts starts every part of a sharded worker, sharing the slots and
// the handler places.
func (w *Worker) startParts() error {
	err := errors.New("native: worker already started; build a new one")
	w.startOnce.Do(func() {
		err = nil
		w.started.Store(true)
		slots := make(chan struct{}, w.concurrency+w.prefetch)
		disp := &dispatcher{idle: w.concurrency}
		for _, p := range w.parts {
			p.slots, p.disp, p.part = slots, disp, true
			err = errors.Join(err, p.Start()) // (nil: each part is started here, once)
		}
	})
	return err
}

// abandonParts abandons every part, as a crash of the process would.
func (w *Worker) abandonParts() {
	for _, p := range w.parts {
		p.abandon()
	}
}

// shutdownParts shuts every part down at once, under one ctx, and returns
// the first error.
func (w *Worker) shutdownParts(ctx context.Context) error {
	if !w.started.Load() {
		return nil
	}
	errs := make([]error, len(w.parts))
	var wg sync.WaitGroup
	for i, p := range w.parts {
		wg.Go(func() { errs[i] = p.Shutdown(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
