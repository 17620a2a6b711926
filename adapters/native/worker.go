package native

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/guard"
	"github.com/rebound-go/rebound/internal/notify"
	"github.com/rebound-go/rebound/internal/option"
	"github.com/rebound-go/rebound/observe"
)

// System is the observe.Attempt System this adapter reports.
const System = "rebound"

// Worker runs a queue's jobs: it reserves them with a lease, runs the
// handler with bounded concurrency, renews the leases of running jobs,
// reclaims jobs whose worker died, and ends each attempt through the
// complete or fail script. Build it with [NewWorker].
type Worker struct {
	q           *Queue
	rule        backoff.Rule
	kinds       map[string]backoff.Rule // WithKindRule's rules by job name
	handler     Handler
	concurrency int
	prefetch    int // jobs reserved ahead of free handlers; -1 until set (default: concurrency, at most maxDefaultPrefetch)
	lease       time.Duration
	reclaim     time.Duration
	block       time.Duration
	idlePoll    time.Duration
	notify      notify.Notifier // the observer and error handler, told the same way on every adapter
	reconnect   backoff.Policy
	shutdown    time.Duration
	// beforeCancelSubscribe, when set (by tests), runs before each
	// subscription to the cancels channel is made.
	beforeCancelSubscribe func()
	key                   func(*Job) backoff.Source
	fallback              time.Duration
	timeout               time.Duration
	errTimeout            error            // ErrTimeout with the timeout, the error of a timed-out attempt
	now                   func() time.Time // the clock an attempt's deadline is checked on (time.Now; tests move it)
	brk                   guard.Config     // WithBreaker's store and WithDependency's bindings
	guard                 *guard.Guard     // built from brk; nil guards nothing

	startOnce sync.Once
	stopOnce  sync.Once
	started   atomic.Bool
	stop      chan struct{} // closed by Shutdown: take no new jobs
	bgStop    chan struct{} // closed once handlers are done: stop renewing
	hardCtx   context.Context
	hardStop  context.CancelCauseFunc
	fetchDone chan struct{}
	handlers  sync.WaitGroup
	bg        sync.WaitGroup
	slots     chan struct{} // one per job held (running or prefetched): concurrency + prefetch
	disp      *dispatcher   // the handler places (shared by the parts of a sharded worker)
	wake      chan struct{}
	listenReq chan struct{}
	finishCh  chan *finishReq
	waiting   atomic.Bool
	blocked   atomic.Bool // the listener is in its BZPOPMIN
	abandoned atomic.Bool
	cancels   atomic.Int64  // the queue's count of running jobs cancelled, as the last reserve saw it
	renewNow  chan struct{} // asks renewLoop to renew at once

	mu      sync.Mutex
	running map[string]*runningJob

	// A worker of a queue opened by its layout (OpenQueue,
	// NewShardedQueue) runs one part per shard (shard_worker.go), each a
	// worker of that shard sharing the slots, the handler places and the
	// breaker's guard, and follows changes of the layout; nil for a worker
	// of a queue from NewQueue.
	parts      *partSet
	part       bool          // this is a part of a sharded worker
	layoutPoll time.Duration // how often a sharded worker reads its queue's layout (tests shorten it)
}

// dispatcher holds a worker's handler places: how many are free, and the
// reserved jobs waiting for one, in the order they were reserved.
type dispatcher struct {
	mu     sync.Mutex
	idle   int         // handlers free (of concurrency)
	queued []queuedJob // reserved jobs waiting for a handler, in order
}

// queuedJob is a reserved job waiting for a handler, and the worker (the
// part of a sharded worker) that holds its lease.
type queuedJob struct {
	w  *Worker
	rj *runningJob
}

// NewWorker returns a worker that runs q's jobs with h under rule: rule's
// policy sizes every retry delay (keyed by the job ID unless [WithKey] says
// otherwise) and its MaxAttempts caps the runs of jobs enqueued without
// their own cap ([WithKindRule] gives jobs of one name a rule of their
// own). Start it with [Worker.Start] or [Worker.Run].
func NewWorker(q *Queue, rule backoff.Rule, h Handler, opts ...WorkerOption) (*Worker, error) {
	if q == nil {
		return nil, errors.New("native: queue is nil, want a *Queue from NewQueue")
	}
	if h == nil {
		return nil, errors.New("native: handler is nil, want a Handler")
	}
	if err := option.CheckRule(rule); err != nil {
		return nil, fmt.Errorf("native: NewWorker: %w", err)
	}
	w := &Worker{
		q: q, rule: rule, handler: h,
		concurrency: 10,
		prefetch:    -1,
		lease:       30 * time.Second,
		idlePoll:    time.Second,
		shutdown:    10 * time.Second,
		reconnect:   defaultReconnect,
		running:     map[string]*runningJob{},
		notify:      notify.Notifier{Prefix: "native"},
		fallback:    DefaultFallbackDelay,
		now:         time.Now,
	}
	if err := option.Apply(w, opts); err != nil {
		return nil, err
	}
	if err := w.brk.Validate("native"); err != nil {
		return nil, err
	}
	if f := w.notify.GiveUp; f != nil {
		// A worker that crashed (abandon, in tests) calls nothing more: the
		// call it owed is taken over from Redis (see giveup.go).
		w.notify.GiveUp = func(ctx context.Context, g observe.GiveUp) {
			if !w.abandoned.Load() {
				f(ctx, g)
			}
		}
	}
	w.guard = guard.New(w.brk, &w.notify, System)
	if w.prefetch < 0 {
		w.prefetch = min(w.concurrency, maxDefaultPrefetch)
	}
	if w.reclaim == 0 {
		w.reclaim = min(w.lease/2, 5*time.Second)
	}
	w.errTimeout = fmt.Errorf("%w (%s)", ErrTimeout, w.timeout)
	w.block = blockTimeout(q.rdb)
	if q.lay != nil {
		if err := w.newParts(q, opts); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// maxDefaultPrefetch caps the default prefetch: jobs beyond it would wait
// on this worker longer than the round trip they save.
const maxDefaultPrefetch = 100

// blockTimeout picks the wake-up block: long enough to be cheap, shorter
// than the client's read timeout so a quiet queue is not a network error.
func blockTimeout(rdb redis.UniversalClient) time.Duration {
	const def = 500 * time.Millisecond
	var rt time.Duration
	switch c := rdb.(type) {
	case *redis.Client:
		rt = c.Options().ReadTimeout
	case *redis.ClusterClient:
		rt = c.Options().ReadTimeout
	}
	if rt > 0 && rt < 2*def {
		return max(rt/2, 10*time.Millisecond)
	}
	return def
}
