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
	"github.com/rebound-go/rebound/internal/notify"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// System is the observe.Attempt System this adapter reports.
const System = "rebound"

// MaxErrorBytes is the most bytes of a failed attempt's error text the
// queue stores with the job (see [StoredJob].LastError): a longer text is
// cut, on a UTF-8 boundary, with a note of how many bytes were dropped, so
// that a huge error cannot bloat the job's record.
const MaxErrorBytes = 8 << 10

// DefaultFallbackDelay is the retry delay used when the worker's policy
// panics, unless [WithFallbackDelay] sets another.
const DefaultFallbackDelay = time.Minute

// Job is one attempt of one job, as a [Handler] sees it.
type Job struct {
	// ID is the job's ID. Its retry jitter is keyed by it, backoff.Key(ID),
	// unless the worker was built with [WithKey].
	ID string
	// Queue is the queue's name.
	Queue string
	// Name is the job's name, "" if it has none.
	Name string
	// Payload is the payload given to Enqueue.
	Payload []byte
	// Attempt is the 1-based number of this attempt.
	Attempt int
	// MaxAttempts is the total number of runs the job may have.
	MaxAttempts int
	// Metadata travels with the job from attempt to attempt: what a handler
	// or observer sets here is stored when the attempt ends and seen by the
	// next one.
	Metadata observe.MapCarrier

	maxStore   int    // the job's own cap as stored (0: the worker's rule)
	storedMeta string // the metadata as stored, to tell whether it changed
}

// A Handler runs one attempt of a job. Returning nil completes the job. Any
// other error fails the attempt: the worker's rule decides whether and when
// to retry. Wrap an error with backoff.Permanent to fail the job at once,
// or with backoff.RetryAfter to wait at least a given time. A panic is
// recovered and counts as a failed attempt, whose error is an
// *observe.PanicError with Op "handler".
type Handler func(ctx context.Context, job *Job) error

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
	lease       time.Duration
	reclaim     time.Duration
	block       time.Duration
	idlePoll    time.Duration
	notify      notify.Notifier // the observer and error handler, told the same way on every adapter
	reconnect   backoff.Policy
	shutdown    time.Duration
	key         func(*Job) backoff.Source
	fallback    time.Duration
	timeout     time.Duration
	errTimeout  error // ErrTimeout with the timeout, the error of a timed-out attempt

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
	slots     chan struct{}
	wake      chan struct{}
	listenReq chan struct{}
	finishCh  chan *finishReq
	waiting   atomic.Bool
	blocked   atomic.Bool // the listener is in its BZPOPMIN
	abandoned atomic.Bool

	mu      sync.Mutex
	running map[string]*runningJob
}

// runningJob is one attempt this worker holds the lease of, from its
// reservation until its end is stored and reported.
type runningJob struct {
	id    string
	token string
	job   *Job
	// Set by run, under Worker.mu, once the attempt has started: the
	// handler's cancel, and the context and attempt the observer was told
	// of (its end is reported with them).
	cancel  context.CancelCauseFunc
	ctx     context.Context
	attempt observe.Attempt
	// meta is the metadata as packed once the observer was told the
	// attempt started, for an attempt ended without its handler (timed
	// out) while the handler may still be writing Metadata; keepMeta when
	// not taken.
	meta string
	// ended is set by whoever ends the attempt, once: from then on the
	// lease is released by that end, and a renewal that finds it gone has
	// not lost it.
	ended atomic.Bool
	// lost is set once the lease is known to be gone (reclaimed): the
	// attempt's end was stored and reported by the reclaim, and the loss
	// reported to the error handler once.
	lost atomic.Bool
}

// A WorkerOption configures a [Worker].
type WorkerOption func(*Worker) error

// WithConcurrency sets how many handlers run at once (default 10).
func WithConcurrency(n int) WorkerOption {
	return func(w *Worker) error {
		if n < 1 {
			return fmt.Errorf("native: WithConcurrency: %d is below 1, want the number of handlers run at once", n)
		}
		w.concurrency = n
		return nil
	}
}

// WithLease sets how long a reserved job stays with its worker without a
// renewal (default 30s). The worker renews every third of it; a job whose
// worker stops renewing is reclaimed once it expires, and that attempt
// counts. d must be at least 50ms.
func WithLease(d time.Duration) WorkerOption {
	return func(w *Worker) error {
		if d < 50*time.Millisecond {
			return fmt.Errorf("native: WithLease: %s is below 50ms, want a duration well above one Redis round trip", d)
		}
		w.lease = d
		return nil
	}
}

// WithReclaimInterval sets how often the worker looks for expired leases
// (default: half the lease, at most 5s).
func WithReclaimInterval(d time.Duration) WorkerOption {
	return func(w *Worker) error {
		if d <= 0 {
			return fmt.Errorf("native: WithReclaimInterval: %s is not positive, want > 0", d)
		}
		w.reclaim = d
		return nil
	}
}

// WithErrorHandler sets the function told of every error the worker meets
// outside a handler: Redis unreachable (the worker keeps retrying with its
// reconnect backoff), a lease lost to a reclaim, a panic of user code it
// recovered (an observer, key function or policy; an *observe.PanicError).
// It is called from the worker's goroutines and must be safe for concurrent
// use. nil, the default, logs each error with slog.Default at level Error.
func WithErrorHandler(f func(error)) WorkerOption {
	return func(w *Worker) error { w.notify.OnError = f; return nil }
}

// WithObserver reports every attempt to o: AttemptStarted before the
// handler runs (its context is the handler's), AttemptEnded once the
// attempt's outcome is stored. Observer panics are recovered and reported
// to the error handler. nil, the default, reports to no observer.
func WithObserver(o observe.Observer) WorkerOption {
	return func(w *Worker) error { w.notify.Observer = o; return nil }
}

// WithReconnectPolicy sets the backoff the worker waits between tries when
// Redis fails. nil, the default, is jitter(exponential(10ms, 2s)).
func WithReconnectPolicy(p backoff.Policy) WorkerOption {
	return func(w *Worker) error {
		if p == nil {
			p = defaultReconnect
		}
		w.reconnect = p
		return nil
	}
}

// defaultReconnect is the worker's reconnect backoff unless
// WithReconnectPolicy sets another.
var defaultReconnect = backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(10*time.Millisecond, 2*time.Second))))

// WithShutdownTimeout sets how long [Worker.Run] lets running handlers
// finish once its context ends (default 10s); the jobs of handlers still
// running then go back to the queue uncounted (see [Worker.Shutdown]).
func WithShutdownTimeout(d time.Duration) WorkerOption {
	return func(w *Worker) error {
		if d < 0 {
			return fmt.Errorf("native: WithShutdownTimeout: %s is negative, want >= 0", d)
		}
		w.shutdown = d
		return nil
	}
}

// WithKey sets the function that picks a job's jitter source. The default is
// backoff.Key(job.ID), which makes one job's schedule reproducible and
// identical on every rebound adapter; key by a business ID carried in the
// payload or metadata to give one logical job the same schedule on every
// engine. The function sees the attempt that failed (for a job reclaimed
// from a dead worker, the job as stored, with the attempt that was lost)
// and must not change it. A key function that panics is recovered,
// reported to the error handler as an *observe.PanicError with Op "key",
// and the default key used. nil is the default.
func WithKey(f func(job *Job) backoff.Source) WorkerOption {
	return func(w *Worker) error { w.key = f; return nil }
}

// WithFallbackDelay sets the retry delay used when deciding a failed
// attempt panics: a policy whose Delay panics, or an error whose own
// methods panic while the rule looks for [backoff.Permanent] or a
// [backoff.RetryAfter] hint in it. The attempt is then still decided: a
// permanent error stays permanent when that can be told, an attempt at the
// job's cap is exhausted, and any other is retried after d. The panic is
// reported to the error handler as an *observe.PanicError with Op
// "policy". d must be positive; the default is [DefaultFallbackDelay].
func WithFallbackDelay(d time.Duration) WorkerOption {
	return func(w *Worker) error {
		switch {
		case d < 0:
			return fmt.Errorf("native: WithFallbackDelay: %s is negative, want > 0", d)
		case d == 0:
			return errors.New("native: WithFallbackDelay: 0s is zero, want > 0")
		}
		w.fallback = d
		return nil
	}
}

// WithGiveUp sets the function told of every job the worker gives up: its
// last attempt failed and the rule decided it is exhausted (it ran its
// MaxAttempts) or permanent ([backoff.Permanent]), and the fail script
// moved it to the failed set. It is called once per such job, after the
// observer is told of the attempt, with the attempt's context; a job given
// up by a reclaim (its workers died) is told of by the worker that
// reclaimed it. See [observe.GiveUpFunc] for what holds across crashes.
// nil, the default, is none.
func WithGiveUp(f observe.GiveUpFunc) WorkerOption {
	return func(w *Worker) error { w.notify.GiveUp = f; return nil }
}

// WithKindRule applies rule, instead of the worker's, to jobs named kind
// (see [WithName]): their delays and their attempts cap (unless a job was
// enqueued with its own, [WithMaxAttempts]).
func WithKindRule(kind string, rule backoff.Rule) WorkerOption {
	return func(w *Worker) error {
		if kind == "" {
			return errors.New("native: WithKindRule: kind is empty, want a job name")
		}
		if rule.Policy() == nil || rule.MaxAttempts() < 1 {
			return fmt.Errorf("native: WithKindRule(%q): the rule is the zero backoff.Rule, want one built with backoff.NewRule", kind)
		}
		if w.kinds == nil {
			w.kinds = make(map[string]backoff.Rule)
		}
		w.kinds[kind] = rule
		return nil
	}
}

// ruleFor returns the rule of jobs named name.
func (w *Worker) ruleFor(name string) backoff.Rule {
	if r, ok := w.kinds[name]; ok {
		return r
	}
	return w.rule
}

// WithTimeout gives every attempt a deadline d after it starts (default:
// none). The handler's context ends at the deadline, with cause
// [ErrTimeout]. An attempt whose handler has not returned by then has
// failed: the worker ends it at once with ErrTimeout (stored, decided by
// the rule and reported like any failure), frees its slot for the next
// job and keeps nothing the handler does or returns afterwards. A handler
// that ignores its context keeps running in its goroutine (Go cannot stop
// it) while its job moves on, so it must not touch the Job after its
// deadline. d must not be negative; 0 means no timeout.
func WithTimeout(d time.Duration) WorkerOption {
	return func(w *Worker) error {
		if d < 0 {
			return fmt.Errorf("native: WithTimeout: %s is negative, want > 0 (or 0 for none)", d)
		}
		w.timeout = d
		return nil
	}
}

// NewWorker returns a worker that runs q's jobs with h under rule: rule's
// policy sizes every retry delay (keyed by the job ID unless [WithKey]
// says otherwise) and its MaxAttempts
// caps the runs of jobs enqueued without their own cap.
func NewWorker(q *Queue, rule backoff.Rule, h Handler, opts ...WorkerOption) (*Worker, error) {
	if q == nil {
		return nil, errors.New("native: queue is nil, want a *Queue from NewQueue")
	}
	if h == nil {
		return nil, errors.New("native: handler is nil, want a Handler")
	}
	if rule.Policy() == nil || rule.MaxAttempts() < 1 {
		return nil, errors.New("native: NewWorker: the rule is the zero backoff.Rule, want one built with backoff.NewRule")
	}
	w := &Worker{
		q: q, rule: rule, handler: h,
		concurrency: 10,
		lease:       30 * time.Second,
		idlePoll:    time.Second,
		shutdown:    10 * time.Second,
		reconnect:   defaultReconnect,
		running:     map[string]*runningJob{},
		notify:      notify.Notifier{Prefix: "native"},
		fallback:    DefaultFallbackDelay,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(w); err != nil {
			return nil, err
		}
	}
	if w.reclaim == 0 {
		w.reclaim = min(w.lease/2, 5*time.Second)
	}
	w.errTimeout = fmt.Errorf("%w (%s)", ErrTimeout, w.timeout)
	w.block = blockTimeout(q.rdb)
	return w, nil
}

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

// Start starts the worker's goroutines and returns at once. Stop it with
// [Worker.Shutdown]. A worker starts once.
func (w *Worker) Start() error {
	ok := false
	w.startOnce.Do(func() {
		ok = true
		w.stop = make(chan struct{})
		w.bgStop = make(chan struct{})
		w.hardCtx, w.hardStop = context.WithCancelCause(context.Background())
		w.fetchDone = make(chan struct{})
		w.slots = make(chan struct{}, w.concurrency)
		w.wake = make(chan struct{}, 1)
		w.listenReq = make(chan struct{}, 1)
		w.finishCh = make(chan *finishReq, w.concurrency)
		w.started.Store(true)
		w.bg.Add(4 + finishers)
		for range finishers {
			go w.finisher()
		}
		go w.fetchLoop()
		go w.listen()
		go w.renewLoop()
		go w.reclaimLoop()
	})
	if !ok {
		return errors.New("native: worker already started; build a new one")
	}
	return nil
}

// Run starts the worker and blocks until ctx ends, then shuts it down,
// giving running handlers the shutdown timeout to finish.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), w.shutdown)
	defer cancel()
	return w.Shutdown(sctx)
}

// Shutdown stops taking jobs and waits for running handlers to finish and
// their outcome to be stored. When ctx ends first, the handlers' contexts
// are cancelled with [ErrShutdown] and their jobs put back in the queue at
// once, in one round trip, without using up an attempt: they run again
// first, with the same attempt number, and observers are told the attempt
// was interrupted (observe.Interrupted). A handler that returns after that
// stores nothing (and one that returns an error once its context was
// cancelled by Shutdown is interrupted the same way). Shutdown then
// returns ctx's error.
func (w *Worker) Shutdown(ctx context.Context) error {
	if !w.started.Load() {
		return nil
	}
	w.stopOnce.Do(func() { close(w.stop) })
	w.wakeListener()
	<-w.fetchDone
	done := make(chan struct{})
	go func() { w.handlers.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		w.stopHandlers(ErrShutdown)
		w.interrupt()
		// What is left are attempts whose outcome is being stored.
		<-done
	}
	w.stopBackground()
	if err == nil {
		w.bg.Wait()
	}
	return err
}

// stopHandlers cancels the context of every running handler, and of any
// that starts later, with cause.
func (w *Worker) stopHandlers(cause error) {
	w.hardStop(cause)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, rj := range w.running {
		if rj.cancel != nil {
			rj.cancel(cause)
		}
	}
}

func (w *Worker) stopBackground() {
	w.mu.Lock()
	select {
	case <-w.bgStop:
	default:
		close(w.bgStop)
	}
	w.mu.Unlock()
}

// abandon stops the worker the way a crash would: nothing more is stored,
// running jobs keep their leases until they expire. Tests use it.
func (w *Worker) abandon() {
	w.abandoned.Store(true)
	w.stopOnce.Do(func() { close(w.stop) })
	w.stopHandlers(ErrShutdown)
	w.stopBackground()
}

// report hands err to the error handler, unless the worker was abandoned.
func (w *Worker) report(err error) {
	if err == nil || w.abandoned.Load() {
		return
	}
	w.notify.Report(err)
}

// pause reports the failures-th consecutive failure of what, then waits
// the reconnect backoff for it; it reports false if the worker stopped
// meanwhile.
func (w *Worker) pause(what string, failures int, err error) bool {
	w.report(fmt.Errorf("native: %s on queue %q (retry %d): %w", what, w.q.name, failures, err))
	return w.sleep(backoff.Delay(w.reconnect, failures, backoff.Source{}), w.stop)
}

// sleep waits d, or until the worker stops; it reports whether it slept.
func (w *Worker) sleep(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// fetchLoop reserves jobs while slots are free and waits, without polling,
// for the next due job or a wake-up when there is nothing to run. It also
// stores the outcomes of finished attempts: a handler hands its outcome
// over before it frees its slot, so the outcomes that freed the slots
// travel in the same round trip as the reserve that refills them.
func (w *Worker) fetchLoop() {
	defer close(w.fetchDone)
	defer w.bg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	failures := 0
	var outs []*finishReq
	for {
		// Take one free slot (waiting for it) or an outcome to store.
		outs = outs[:0]
		n := 0
		select {
		case <-w.stop:
			return
		case w.slots <- struct{}{}:
			n = 1
		case r := <-w.finishCh:
			outs = append(outs, r)
		}
		// select picks at random among ready cases: a slot that freed up
		// after Shutdown began must not take one more job.
		select {
		case <-w.stop:
			if n == 1 {
				<-w.slots
			}
			w.sendBatch(outs)
			return
		default:
		}
		outs = w.drainOutcomes(outs)
	more:
		for n < min(w.concurrency, reserveBatch) {
			select {
			case w.slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		if n == 0 {
			w.sendBatch(outs)
			continue
		}
		jobs, due, err := w.reserveWith(n, outs)
		for range n - len(jobs) {
			<-w.slots
		}
		if err != nil {
			failures++
			if !w.pause("reserve", failures, err) {
				return
			}
			continue
		}
		failures = 0
		for _, rj := range jobs {
			w.handlers.Add(1)
			go w.run(rj)
		}
		if len(jobs) == n {
			continue
		}
		// Nothing more to run now: wait for the next due job, a wake-up or
		// the safety poll, whichever comes first, storing outcomes as they
		// come.
		w.waiting.Store(true)
		select {
		case w.listenReq <- struct{}{}:
		default:
		}
		timer.Reset(min(time.Until(due), w.idlePoll))
	idle:
		for {
			select {
			case <-w.stop:
				w.waiting.Store(false)
				return
			case <-w.wake:
				break idle
			case <-timer.C:
				break idle
			case r := <-w.finishCh:
				w.sendBatch(w.drainOutcomes(append(outs[:0], r)))
			}
		}
		w.waiting.Store(false)
	}
}

// drainOutcomes appends the outcomes waiting to be stored, up to a batch.
func (w *Worker) drainOutcomes(outs []*finishReq) []*finishReq {
	for len(outs) < finisherBatch {
		select {
		case r := <-w.finishCh:
			outs = append(outs, r)
		default:
			return outs
		}
	}
	return outs
}

// reserveBatch is the most jobs one reserve call takes (the script's own
// limit).
const reserveBatch = 1000

// reserveWith runs the reserve script for up to n jobs, which come back
// with their records in the same reply, after storing the outcomes in outs
// in the same round trip. The jobs are registered as running, their leases
// renewed from here on. due is when, by the local clock, the earliest
// delayed job becomes due (taken as the reply arrives).
func (w *Worker) reserveWith(n int, outs []*finishReq) ([]*runningJob, time.Time, error) {
	k := w.q.keys
	ctx := context.Background()
	keys := []string{k.wait, k.active, k.delayed, k.marker, k.jobs, k.counter, k.due}
	var res []any
	var err error
	if len(outs) == 0 {
		res, err = scriptReserve.Run(ctx, w.q.rdb, keys, n, w.lease.Milliseconds()).Slice()
	} else {
		var rc *redis.Cmd
		b := w.prepareBatch(outs)
		_, _ = w.q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			b.queue(ctx, p)
			rc = scriptReserve.EvalSha(ctx, p, keys, n, w.lease.Milliseconds())
			return nil
		})
		w.answerBatch(b)
		res, err = rc.Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			res, err = scriptReserve.Run(ctx, w.q.rdb, keys, n, w.lease.Milliseconds()).Slice()
		}
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(res) < 2 {
		return nil, time.Time{}, fmt.Errorf("native: reserve returned %d values, want at least 2", len(res))
	}
	due := time.Now().Add(w.idlePoll)
	if next := parseInt(res[1]); next >= 0 {
		due = time.Now().Add(max(time.Duration(next*1000-parseInt(res[0]))*time.Microsecond, 0))
	}
	var jobs []*runningJob
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := 2; i+2 < len(res); i += 3 {
		id, token := replyString(res[i]), replyString(res[i+1])
		rec, rerr := decodeRecord(replyString(res[i+2]))
		if rerr == nil && rec.attempts < 1 {
			rerr = fmt.Errorf("native: job record is malformed (attempts %d after a reservation), want at least 1", rec.attempts)
		}
		if rerr != nil {
			// Leased but unreadable: renew nothing, so the lease runs out
			// and the reclaim path fails the attempt.
			w.report(fmt.Errorf("native: job %q on queue %q: %w", id, w.q.name, rerr))
			continue
		}
		// The job is leased to us from here on: register it so its lease
		// is renewed.
		rj := &runningJob{id: id, token: token, job: w.newJob(id, rec.attempts, rec)}
		w.running[token] = rj
		jobs = append(jobs, rj)
	}
	return jobs, due, nil
}

// newJob builds attempt number attempt of job id from its record.
func (w *Worker) newJob(id string, attempt int, r record) *Job {
	maxAtt := r.max
	if maxAtt < 1 {
		maxAtt = w.ruleFor(r.name).MaxAttempts()
	}
	return &Job{ID: id, Queue: w.q.name, Name: r.name, Payload: r.payload,
		Attempt: attempt, MaxAttempts: maxAtt, Metadata: observe.MapCarrier(decodeMeta(r.meta)), maxStore: r.max, storedMeta: r.meta}
}

// run runs one attempt and stores its outcome.
func (w *Worker) run(rj *runningJob) {
	j := rj.job
	// The handler's context hangs off no parent (a child of hardCtx would
	// register with it, under its lock, once per job); stopHandlers cancels
	// it instead, and a job that starts after that is cancelled here.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	hctx := ctx // the handler's: ctx, with the attempt's deadline if any
	if w.timeout > 0 {
		var cancelDeadline context.CancelFunc
		hctx, cancelDeadline = context.WithTimeoutCause(ctx, w.timeout, w.errTimeout)
		defer cancelDeadline()
	}
	a := observe.Attempt{System: System, Queue: w.q.name, JobID: j.ID, Kind: j.Name,
		Number: j.Attempt, MaxAttempts: j.MaxAttempts, Carrier: j.Metadata}
	octx := w.notify.Started(hctx, a)
	rj.meta = keepMeta
	if w.timeout > 0 && w.notify.Observer != nil {
		// What the observer wrote, kept should the attempt time out.
		rj.meta = encodeMeta(j.Metadata)
	}
	w.mu.Lock()
	rj.cancel, rj.ctx, rj.attempt = cancel, octx, a
	if w.hardCtx.Err() != nil {
		cancel(context.Cause(w.hardCtx))
	}
	w.mu.Unlock()
	if rj.ended.Load() {
		// Shutdown put the job back before its handler started: the
		// observer was told it started, so tell it how it ended.
		w.notify.Ended(octx, a, interrupted(ErrShutdown, time.Now()))
		return
	}
	if w.timeout > 0 {
		// At the deadline the attempt has failed, returned or not.
		stop := context.AfterFunc(hctx, func() {
			if errors.Is(context.Cause(hctx), ErrTimeout) {
				w.timedOut(rj)
			}
		})
		defer stop()
	}

	var err error
	if !rj.lost.Load() {
		err = w.call(octx, j)
	}
	if !rj.ended.CompareAndSwap(false, true) {
		return // ended without the handler: timed out, or Shutdown's deadline passed
	}
	if w.timeout > 0 && errors.Is(context.Cause(hctx), ErrTimeout) {
		err = w.errTimeout // returned at its deadline, whatever it returned
	}
	if w.abandoned.Load() || rj.lost.Load() {
		// A crash stores nothing; a lost lease's attempt was ended, stored
		// and reported by the reclaim that took it.
		w.letGo(rj, true)
		return
	}
	meta := encodeMeta(j.Metadata)
	if meta == j.storedMeta {
		// Unchanged: the scripts then rewrite only what leads the record.
		meta = keepMeta
	}
	if err == nil {
		w.store(rj, scriptComplete, w.completeKeys(), w.completeArgs(j.ID, rj.token, meta), observe.Result{})
		return
	}
	if errors.Is(context.Cause(ctx), ErrShutdown) {
		// Cut short by Shutdown: the job goes back, this run uncounted.
		w.store(rj, scriptRelease, w.q.keys.releaseKeys, []any{j.ID, rj.token, meta}, interrupted(err, time.Time{}))
		return
	}
	d := w.decide(j, err)
	w.store(rj, scriptFail, w.failKeys(), w.failArgs(j.ID, rj.token, d, j.MaxAttempts, errorText(err), meta, false),
		observe.Result{Err: err, Decision: d})
}

// timedOut ends rj's attempt at its deadline, unless its handler ended it
// first: the attempt failed with the worker's timeout error. The handler
// may still be running, so its Job is read for nothing it may change: the
// metadata stored is the one packed when the attempt started.
func (w *Worker) timedOut(rj *runningJob) {
	if !rj.ended.CompareAndSwap(false, true) {
		return
	}
	if w.abandoned.Load() || rj.lost.Load() {
		w.letGo(rj, true)
		return
	}
	j := rj.job
	meta := rj.meta
	if meta == j.storedMeta {
		meta = keepMeta
	}
	d := w.decide(j, w.errTimeout)
	w.store(rj, scriptFail, w.failKeys(), w.failArgs(j.ID, rj.token, d, j.MaxAttempts, errorText(w.errTimeout), meta, false),
		observe.Result{Err: w.errTimeout, Decision: d})
}

// store ends rj's attempt with one outcome call (complete or fail, with
// keys and args) and tells the observer what the script applied (result,
// the attempt's error and decision, completed by the script's reply).
func (w *Worker) store(rj *runningJob, s *redis.Script, keys []string, args []any, result observe.Result) {
	// Hand the outcome over, then free the slot: the fetch loop, woken by
	// the free slot, stores the outcome in the same round trip as the
	// reserve that refills it. (Concurrency bounds running handlers;
	// Shutdown still waits for every outcome to be stored.)
	first := w.post(s, keys, args)
	<-w.slots
	res, err := w.finish(rj.id, first, func(ctx context.Context) ([]any, error) {
		return w.submit(ctx, s, keys, args...)
	})
	w.letGo(rj, false)
	w.tell(rj, rj.ctx, rj.attempt, s, result, res, err)
	w.handlers.Done()
}

// tell reports how an attempt ended once the script s that ended it has
// answered (res, or err: a failed call or a refusal, see Worker.finish):
// to the observer what the script applied, or to the error handler why
// nothing was applied.
func (w *Worker) tell(rj *runningJob, ctx context.Context, a observe.Attempt, s *redis.Script, result observe.Result, res []any, err error) {
	switch {
	case errors.Is(err, ErrLeaseLost):
		// Reclaimed meanwhile: the reclaim stored and reported this
		// attempt's end, and the outcome here changed nothing.
		w.leaseLost(rj)
	case err != nil:
		// Not stored (or not known to be): the lease runs out and the
		// reclaim that ends the attempt reports it.
		w.report(err)
	default:
		w.notify.Ended(ctx, a, applied(s, result, res))
	}
}

// interrupted is the result of a run cut short by Shutdown, with the
// handler's error err: it does not count, and the job runs again at once
// (at fireAt, when the release script's answer is known).
func interrupted(err error, fireAt time.Time) observe.Result {
	return observe.Result{Err: err, Counting: observe.Interrupted,
		Decision: backoff.Decision{Outcome: backoff.OutcomeRetry}, FireAt: fireAt}
}

// interrupt ends the attempts of the handlers still running when
// Shutdown's deadline passed: their jobs go back to the queue in one round
// trip, uncounted (release), and observers are told they were
// interrupted. A handler that returns later finds its attempt ended and
// stores nothing. The round trip is not retried: if it fails, the leases
// run out and the jobs are reclaimed, the attempts counted.
func (w *Worker) interrupt() {
	type cut struct {
		rj      *runningJob
		ctx     context.Context
		a       observe.Attempt
		started bool
	}
	var cuts []cut
	w.mu.Lock()
	for _, rj := range w.running {
		if rj.ended.CompareAndSwap(false, true) {
			cuts = append(cuts, cut{rj, rj.ctx, rj.attempt, rj.cancel != nil})
		}
	}
	w.mu.Unlock()
	if len(cuts) == 0 {
		return
	}
	reqs := make([]*finishReq, len(cuts))
	for i, c := range cuts {
		reqs[i] = &finishReq{script: scriptRelease, keys: w.q.keys.releaseKeys,
			args: []any{c.rj.id, c.rj.token, keepMeta}, done: make(chan finishRes, 1)}
	}
	w.sendBatch(reqs)
	for i, c := range cuts {
		out := <-reqs[i].done
		w.letGo(c.rj, true)
		err := w.refusal(c.rj.id, out.res, out.err)
		if c.started || err != nil {
			// One not started yet is told of by its own run.
			w.tell(c.rj, c.ctx, c.a, scriptRelease, interrupted(ErrShutdown, time.Time{}), out.res, err)
		}
	}
}

// letGo forgets an ended attempt: it no longer holds a lease to renew. With
// slot, it also frees the attempt's slot and marks its handler done (store
// does both itself, at its own time).
func (w *Worker) letGo(rj *runningJob, slot bool) {
	w.mu.Lock()
	delete(w.running, rj.token)
	w.mu.Unlock()
	if slot {
		<-w.slots
		w.handlers.Done()
	}
}

// leaseLost reports, once per attempt, that rj's lease was lost.
func (w *Worker) leaseLost(rj *runningJob) {
	if !rj.lost.Swap(true) {
		w.report(fmt.Errorf("%w (queue %q, job %q, attempt %d)", ErrLeaseLost, w.q.name, rj.id, rj.job.Attempt))
	}
}

// applied completes the result of an attempt ended by script s with what
// the script's reply res says it applied: for a failure, whether the job
// was retried (and when) or failed for good.
func applied(s *redis.Script, r observe.Result, res []any) observe.Result {
	if s == scriptRelease {
		r.FireAt = time.Now()
		if parseInt(res[0]) == 1 && len(res) >= 2 {
			r.FireAt = time.UnixMilli(parseInt(res[1]))
		}
		return r
	}
	if s != scriptFail {
		return r
	}
	switch parseInt(res[0]) {
	case 1:
		if len(res) >= 3 {
			r.FireAt = time.UnixMilli(parseInt(res[2]))
		}
	case 2:
		if r.Decision.Outcome != backoff.OutcomePermanent {
			r.Decision = backoff.Decision{Outcome: backoff.OutcomeExhausted}
		}
	case 0:
		// Stored by an earlier try whose reply was lost: the decision is
		// the one sent, its fire time known only roughly.
		if r.Decision.Retry() {
			r.FireAt = time.Now().Add(r.Decision.Delay)
		}
	}
	return r
}

// call runs the handler, turning a panic into a failed attempt.
func (w *Worker) call(ctx context.Context, j *Job) error {
	err, perr := safe.Value("handler", nil, func() error { return w.handler(ctx, j) })
	if perr != nil {
		return perr
	}
	return err
}

// decide is the worker's retry hook: the rule (with the job's own cap) for
// the failed attempt j.Attempt, jitter keyed by [Worker.source]. It never
// panics: a panic while deciding (a policy's Delay, or errors.As walking a
// hostile error) is reported and the attempt decided by [Worker.fallback].
// A retry's delay is clamped to MaxDelay, as the fail script applies it.
func (w *Worker) decide(j *Job, err error) backoff.Decision {
	rule := w.ruleFor(j.Name)
	if j.MaxAttempts > 0 && j.MaxAttempts != rule.MaxAttempts() {
		if r, rerr := backoff.NewRule(rule.Policy(), j.MaxAttempts); rerr == nil {
			rule = r
		}
	}
	src := w.source(j)
	d, perr := safe.Value("policy", backoff.Decision{}, func() backoff.Decision { return rule.Decide(j.Attempt, err, src) })
	if perr != nil {
		w.report(fmt.Errorf("native: deciding attempt %d of job %q on queue %q panicked, deciding with the fallback delay %s: %w",
			j.Attempt, j.ID, j.Queue, w.fallback, perr))
		d = w.fallbackDecision(j, rule, err)
	}
	if d.Retry() {
		// What the fail script applies, and so what observers are told.
		d.Delay = clampDelay(d.Delay)
	}
	return d
}

// fallbackDecision decides failed attempt j.Attempt without the policy:
// permanent if err can be told to be, exhausted at the rule's cap, else a
// retry after the fallback delay.
func (w *Worker) fallbackDecision(j *Job, rule backoff.Rule, err error) backoff.Decision {
	if perm, perr := safe.Value("policy", false, func() bool { return backoff.IsPermanent(err) }); perr == nil && perm {
		return backoff.Decision{Outcome: backoff.OutcomePermanent}
	}
	if j.Attempt >= rule.MaxAttempts() {
		return backoff.Decision{Outcome: backoff.OutcomeExhausted}
	}
	return backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: w.fallback}
}

// source returns j's jitter source: WithKey's choice, or backoff.Key(j.ID).
func (w *Worker) source(j *Job) backoff.Source {
	if w.key == nil {
		return backoff.Key(j.ID)
	}
	src, err := safe.Value("key", backoff.Source{}, func() backoff.Source { return w.key(j) })
	if err != nil {
		w.report(fmt.Errorf("native: key function panicked on job %q of queue %q, keying by job ID: %w", j.ID, j.Queue, err))
		return backoff.Key(j.ID)
	}
	return src
}

// finish runs a storing script, retrying with the reconnect backoff while
// Redis is unreachable. The first try is the call already posted, when
// first is not nil (its sender's round trip is bounded by the client's own
// timeouts); later ones send it again. The lease token makes a retried call
// safe: if the first try was applied and only its reply was lost, the retry
// is told so and changes nothing. It gives up when the worker is abandoned,
// or when the shutdown deadline has passed and one more try failed.
func (w *Worker) finish(id string, first *finishReq, call func(ctx context.Context) ([]any, error)) ([]any, error) {
	for try := 1; ; try++ {
		var res []any
		var err error
		if try == 1 && first != nil {
			res, err = first.wait(context.Background(), w.bgStop, w.q.rdb)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err = call(ctx)
			cancel()
		}
		if err == nil {
			return res, w.refusal(id, res, nil)
		}
		var rerr redis.Error
		if errors.As(err, &rerr) && !isTransient(err) {
			return nil, fmt.Errorf("native: store outcome of job %q on queue %q: %w", id, w.q.name, err)
		}
		w.report(fmt.Errorf("native: store outcome of job %q on queue %q (try %d): %w", id, w.q.name, try, err))
		if w.abandoned.Load() || w.hardCtx.Err() != nil {
			return nil, err
		}
		if !w.sleep(backoff.Delay(w.reconnect, try, backoff.Source{}), w.hardCtx.Done()) {
			return nil, err
		}
	}
}

// refusal turns an outcome script's reply res for job id into the error it
// means, if any: err as it is, ErrLeaseLost for a stale lease, ErrNotFound
// for an unknown job.
func (w *Worker) refusal(id string, res []any, err error) error {
	if err != nil {
		return err
	}
	switch parseInt(res[0]) {
	case -1:
		return fmt.Errorf("%w (queue %q, job %q)", ErrLeaseLost, w.q.name, id)
	case -2:
		return fmt.Errorf("%w (queue %q, job %q)", ErrNotFound, w.q.name, id)
	}
	return nil
}

// errorText is the text stored for a failed attempt's error: err.Error()
// even when that panics or err is a typed nil, made valid UTF-8 and cut to
// MaxErrorBytes (internal/safe).
func errorText(err error) string {
	return safe.Truncate(safe.Message(err), MaxErrorBytes)
}

// isTransient reports whether a Redis error reply is worth retrying.
func isTransient(err error) bool {
	msg := err.Error()
	for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "MOVED", "ASK"} {
		if len(msg) >= len(p) && msg[:len(p)] == p {
			return true
		}
	}
	return false
}

// keepMeta is the metadata argument of complete and fail that keeps the
// stored metadata.
const keepMeta = "-"

// oneReply unwraps the reply of a complete or fail call that ended one
// job: the scripts answer with one reply per job.
func oneReply(res []any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	if len(res) != 1 {
		return nil, fmt.Errorf("native: outcome script returned %d replies for one job, want 1", len(res))
	}
	return jobReply(res[0])
}

// jobReply reads one job's reply out of a complete or fail call's replies.
func jobReply(v any) ([]any, error) {
	r, ok := v.([]any)
	if !ok || len(r) == 0 {
		return nil, fmt.Errorf("native: outcome script returned %v for a job, want {code, ...}", v)
	}
	return r, nil
}

// completeKeys returns the complete script's KEYS.
func (w *Worker) completeKeys() []string { return w.q.keys.completeKeys }

func (w *Worker) completeArgs(id, token, meta string) []any {
	return []any{w.q.keepFor.Milliseconds(), w.q.keepMost, id, token, meta}
}

// fail runs the fail script directly (not batched).
func (w *Worker) fail(ctx context.Context, id, token string, d backoff.Decision, maxAttempts int, msg, meta string, reclaim bool) ([]any, error) {
	return oneReply(scriptFail.Run(ctx, w.q.rdb, w.failKeys(), w.failArgs(id, token, d, maxAttempts, msg, meta, reclaim)...).Slice())
}

// failKeys returns the fail script's KEYS.
func (w *Worker) failKeys() []string { return w.q.keys.failKeys }

func (w *Worker) failArgs(id, token string, d backoff.Decision, maxAttempts int, msg, meta string, reclaim bool) []any {
	permanent, rec := 0, 0
	if d.Outcome == backoff.OutcomePermanent {
		permanent = 1
	}
	if reclaim {
		rec = 1
	}
	return []any{w.q.failFor.Milliseconds(), w.q.failMost, id, token, ceilMicros(d.Delay), permanent, maxAttempts, msg, meta, rec}
}
