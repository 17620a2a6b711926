package native

import (
	"context"
	"errors"
	"sync"
	"time"
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
//
// A change of N (Reshard): the worker reads its queue's layout every
// layoutPoll and, when it changed, starts a part for each shard it does not
// serve yet and shuts down the parts of shards the layout no longer holds
// (FinishReshard drops them once they hold no unfinished job), each under
// the worker's shutdown timeout.

// defaultLayoutPoll is how often a sharded worker reads its queue's layout:
// one GET, cheap beside the idle worker's own polls, and soon enough that a
// new shard is served within seconds of a change.
const defaultLayoutPoll = 2 * time.Second

// A partSet is the parts of a sharded worker.
type partSet struct {
	opts  []WorkerOption // what the worker was built with, for the parts a change adds
	mu    sync.Mutex
	list  []*Worker
	done  bool          // shut down or abandoned: add no part
	stop  chan struct{} // closed to stop following the layout
	watch sync.WaitGroup
	gone  sync.WaitGroup // parts being shut down after a change
}

// newParts builds the parts of w, a worker of the sharded queue q, from
// the options w was built with.
func (w *Worker) newParts(q *Queue, opts []WorkerOption) error {
	w.parts = &partSet{opts: opts, stop: make(chan struct{})}
	if w.layoutPoll == 0 {
		w.layoutPoll = defaultLayoutPoll
	}
	for _, s := range q.parts() {
		p, err := w.newPart(s)
		if err != nil {
			return err
		}
		w.parts.list = append(w.parts.list, p)
	}
	return nil
}

// newPart builds the part of w that serves shard s.
func (w *Worker) newPart(s *Queue) (*Worker, error) {
	p, err := NewWorker(s, w.rule, w.handler, w.parts.opts...)
	if err != nil {
		return nil, err
	}
	p.guard = w.guard
	p.slots, p.disp, p.part = w.slots, w.disp, true
	return p, nil
}

// startParts starts every part of a sharded worker, sharing the slots and
// the handler places, and the goroutine that follows the layout.
func (w *Worker) startParts() error {
	err := errors.New("native: worker already started; build a new one")
	w.startOnce.Do(func() {
		err = nil
		w.started.Store(true)
		w.slots = make(chan struct{}, w.concurrency+w.prefetch)
		w.disp = &dispatcher{idle: w.concurrency}
		ps := w.parts
		ps.mu.Lock()
		for _, p := range ps.list {
			p.slots, p.disp = w.slots, w.disp
			err = errors.Join(err, p.Start()) // (nil: each part is started here, once)
		}
		ps.mu.Unlock()
		ps.watch.Add(1)
		go w.followLayout()
	})
	return err
}

// followLayout reads the queue's layout every layoutPoll until the worker
// stops, and makes the parts match it.
func (w *Worker) followLayout() {
	ps := w.parts
	defer ps.watch.Done()
	t := time.NewTicker(w.layoutPoll)
	defer t.Stop()
	for {
		select {
		case <-ps.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(w.layoutPoll, time.Second))
		v, err := w.q.reload(ctx)
		cancel()
		if err != nil {
			w.report(err)
			continue
		}
		w.matchParts(v)
	}
}

// matchParts starts a part for each shard of v that no part serves, and
// shuts down (in the background, under the shutdown timeout) the parts
// whose shard v does not hold.
func (w *Worker) matchParts(v *shardView) {
	ps := w.parts
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.done {
		return
	}
	want := map[string]*Queue{}
	for _, s := range v.all {
		want[s.tag] = s
	}
	var kept []*Worker
	for _, p := range ps.list {
		if _, ok := want[p.q.tag]; ok {
			delete(want, p.q.tag)
			kept = append(kept, p)
			continue
		}
		ps.gone.Add(1)
		go func() {
			defer ps.gone.Done()
			ctx, cancel := context.WithTimeout(context.Background(), w.shutdown)
			defer cancel()
			w.report(p.Shutdown(ctx))
		}()
	}
	for _, s := range v.all { // in the layout's order
		if _, ok := want[s.tag]; !ok {
			continue
		}
		p, err := w.newPart(s)
		if err == nil {
			err = p.Start()
		}
		if err != nil {
			w.report(err)
			continue
		}
		kept = append(kept, p)
	}
	ps.list = kept
}

// endParts stops following the layout and returns the parts, adding no
// more.
func (w *Worker) endParts() []*Worker {
	ps := w.parts
	ps.mu.Lock()
	first := !ps.done
	ps.done = true
	list := append([]*Worker(nil), ps.list...)
	ps.mu.Unlock()
	if first {
		close(ps.stop)
	}
	ps.watch.Wait()
	return list
}

// abandonParts abandons every part, as a crash of the process would.
func (w *Worker) abandonParts() {
	for _, p := range w.endParts() {
		p.abandon()
	}
}

// shutdownParts shuts every part down at once, under one ctx, and returns
// the first error.
func (w *Worker) shutdownParts(ctx context.Context) error {
	if !w.started.Load() {
		return nil
	}
	list := w.endParts()
	errs := make([]error, len(list))
	var wg sync.WaitGroup
	for i, p := range list {
		wg.Go(func() { errs[i] = p.Shutdown(ctx) })
	}
	wg.Wait()
	w.parts.gone.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
