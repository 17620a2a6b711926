package native

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/redisstore"
	"github.com/rebound-go/rebound/conformance"
	"github.com/rebound-go/rebound/internal/testenv"
)

// harness runs the conformance suite on one Redis: each Start gets its own
// queue under prefix. With open set, each Start opens its own Redis
// instead (a miniredis dialled in-process, so that the suite can run it in
// a testing/synctest bubble).
type harness struct {
	name     string
	rdb      redis.UniversalClient
	prefix   string
	lateness time.Duration
	open     func(t testing.TB) redis.UniversalClient
	synctest bool
	shards   int // each queue's shards (NewShardedQueue); 0 or 1 for NewQueue's

	mu sync.Mutex
	n  int // queues started
}

func (h *harness) Name() string { return h.name }

// Synctest runs every check in a bubble when the harness opens an
// in-process miniredis per Start.
func (h *harness) Synctest() bool { return h.synctest }

// Limits: fire times are whole milliseconds of the server clock, rounded up
// (never early); a retry is started by the worker's own timer for the next
// due time, so idle lateness is a timer wake-up plus two round trips. A
// delay is clamped to MaxDelay, a stored error to MaxErrorBytes; the
// attempts cap is any int, and WithTimeout's deadline is exact.
func (h *harness) Limits() conformance.Limits {
	return conformance.Limits{Resolution: time.Millisecond, Lateness: h.lateness,
		MaxDelay: MaxDelay, MaxErrorBytes: MaxErrorBytes}
}

// nextQueue returns a fresh queue: its client, prefix and name.
func (h *harness) nextQueue(t testing.TB) (redis.UniversalClient, string, string) {
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	if h.open != nil {
		return h.open(t), "rbt", "conf"
	}
	return h.rdb, h.prefix, fmt.Sprintf("conf{%d}:q", n)
}

// options turns the adapter-level fields of cfg into worker options.
func options(cfg conformance.Config) []WorkerOption {
	// 64 handlers: more than the suite ever runs at once (the Mix's 24
	// jobs), so a retry never waits for a free handler and a check of
	// lateness measures the queue, not a full worker. With 16 the Mix of
	// seed 13549903747991171808 (synctest, so every run) had 16 handlers
	// held by runs outliving their timeout and retries due in 1-3ms
	// started at the next free handler, 10ms later.
	opts := []WorkerOption{WithObserver(cfg.Observer), WithGiveUp(cfg.GiveUp), WithErrorHandler(cfg.OnError),
		WithTimeout(cfg.Timeout), WithConcurrency(64)}
	if cfg.FallbackDelay > 0 {
		opts = append(opts, WithFallbackDelay(cfg.FallbackDelay))
	}
	if cfg.Key != nil {
		opts = append(opts, WithKey(func(j *Job) backoff.Source { return cfg.Key(j.ID) }))
	}
	for kind, rule := range cfg.KindRules {
		opts = append(opts, WithKindRule(kind, rule))
	}
	opts = append(opts, WithBreaker(cfg.Breaker))
	for kind, dep := range cfg.Dependencies {
		opts = append(opts, WithDependency(kind, dep))
	}
	return opts
}

// BreakerStore returns a redisstore on the harness's Redis under a prefix
// of its own (with open set, on a Redis of its own).
func (h *harness) BreakerStore(t testing.TB, rules breaker.Rules) breaker.Store {
	rdb, prefix, name := h.nextQueue(t)
	return redisstore.New(rdb, rules, redisstore.Options{Prefix: prefix + ":" + name + ":brk"})
}

// handler calls the suite's handler for each attempt.
func handler(cfg conformance.Config) Handler {
	return func(ctx context.Context, j *Job) error {
		return cfg.Handler(ctx, conformance.Job{ID: j.ID, Attempt: j.Attempt, Payload: j.Payload})
	}
}

func (h *harness) Start(t testing.TB, cfg conformance.Config) conformance.Engine {
	return h.start(t, []conformance.Config{cfg}, false)[0]
}

// StartShared starts one queue per config, each under its own prefix with
// the same queue name, all with workers built from one set of options (the
// adapter-level fields of cfgs[0]); job IDs are numbered from 1 on each.
func (h *harness) StartShared(t testing.TB, cfgs []conformance.Config) []conformance.Engine {
	return h.start(t, cfgs, true)
}

func (h *harness) start(t testing.TB, cfgs []conformance.Config, shared bool) []conformance.Engine {
	opts := options(cfgs[0])
	var engines []conformance.Engine
	for i, cfg := range cfgs {
		rdb, prefix, name := h.nextQueue(t)
		if shared {
			prefix = fmt.Sprintf("%s-shared%d", prefix, i)
			name = "conf-shared"
		}
		q, err := NewQueue(rdb, name, WithPrefix(prefix))
		if h.shards > 1 {
			q, err = NewShardedQueue(context.Background(), rdb, name, h.shards, WithPrefix(prefix))
		}
		if err != nil {
			t.Fatal(err)
		}
		e := &engine{t: t, q: q, rdb: rdb, rule: cfgs[0].Rule, h: handler(cfg), opts: opts, numbered: shared}
		e.w = e.startWorker()
		t.Cleanup(e.stop)
		engines = append(engines, e)
	}
	return engines
}

func (h *harness) HookDelay(cfg conformance.Config, id string, attempt int, err error) (time.Duration, bool) {
	q := &Queue{name: "hook"} // deciding reads no Redis
	w, werr := NewWorker(q, cfg.Rule, func(context.Context, *Job) error { return nil }, options(cfg)...)
	if werr != nil {
		panic(werr)
	}
	d := w.decide(&Job{ID: id, Queue: q.name, Attempt: attempt, MaxAttempts: cfg.Rule.MaxAttempts()}, err)
	return time.Duration(ceilMicros(d.Delay)) * time.Microsecond, d.Retry()
}

// engine is one queue and its worker, which Restart replaces.
type engine struct {
	t        testing.TB
	q        *Queue
	rdb      redis.UniversalClient
	rule     backoff.Rule
	h        Handler
	opts     []WorkerOption
	numbered bool // job IDs are numbered from 1, colliding with other engines'

	mu      sync.Mutex
	w       *Worker
	next    int
	stopped bool
}

func (e *engine) startWorker() *Worker {
	w, err := NewWorker(e.q, e.rule, e.h, e.opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		e.t.Fatal(err)
	}
	return w
}

func (e *engine) worker() *Worker {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.w
}

func (e *engine) stop() {
	e.mu.Lock()
	w := e.w
	e.stopped = true
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Shutdown(ctx); err != nil {
		e.t.Errorf("shutdown: %v", err)
	}
}

func (e *engine) Enqueue(ctx context.Context, payload []byte) (string, error) {
	return e.EnqueueKind(ctx, "", payload)
}

// EnqueueKind enqueues a job named kind.
func (e *engine) EnqueueKind(ctx context.Context, kind string, payload []byte) (string, error) {
	opts := []EnqueueOption{WithName(kind)}
	if e.numbered {
		e.mu.Lock()
		e.next++
		opts = append(opts, WithID(strconv.Itoa(e.next)))
		e.mu.Unlock()
	}
	return e.q.Enqueue(ctx, payload, opts...)
}

func (e *engine) State(ctx context.Context, id string) (conformance.State, error) {
	info, err := e.q.Job(ctx, id)
	if err != nil {
		return conformance.StatePending, err
	}
	switch info.State {
	case StateCompleted:
		return conformance.StateCompleted, nil
	case StateFailed:
		return conformance.StateFailed, nil
	}
	return conformance.StatePending, nil
}

// LastError reads the error stored with the job's record.
func (e *engine) LastError(ctx context.Context, id string) (string, error) {
	info, err := e.q.Job(ctx, id)
	return info.LastError, err
}

// Restart shuts the worker down as a deploy does, with a shutdown timeout
// short enough to cut a blocked handler short, and starts a new one.
func (e *engine) Restart(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := e.w.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	e.w = e.startWorker()
	return nil
}

// Reclaim makes the running job's lease expire and has its own worker's
// reclaim take it back, as it would after the worker lost Redis for longer
// than the lease: the handler goes on running, stale.
func (e *engine) Reclaim(ctx context.Context, id string) error {
	w := e.worker()
	q := e.q.shardFor(id) // the job's shard, and its part of the worker
	if ps := w.parts; ps != nil {
		ps.mu.Lock()
		for _, p := range ps.list {
			if p.q.tag == q.tag {
				w = p
			}
		}
		ps.mu.Unlock()
	}
	stored := func() (record, error) {
		s, err := e.rdb.HGet(ctx, q.keys.jobs, id).Result()
		if err != nil {
			return record{}, err
		}
		return decodeRecord(s)
	}
	rec, err := stored()
	if err != nil {
		return err
	}
	if rec.tok == "" {
		return fmt.Errorf("job %s is not running", id)
	}
	for ctx.Err() == nil {
		// The worker may renew the lease in between: try again.
		if err := e.rdb.ZAddXX(ctx, q.keys.active, redis.Z{Score: 0, Member: id}).Err(); err != nil {
			return err
		}
		if _, err := w.reclaimOnce(ctx, 100); err != nil {
			return err
		}
		now, err := stored()
		if err != nil {
			return err
		}
		if now.tok != rec.tok {
			return nil
		}
	}
	return ctx.Err()
}

// Cancel cancels the job with the queue's operator action: a waiting job
// ends failed at once, a running one too, its worker told at once (the
// cancel wakes it, and its reserve sees the cancel) or at its next lease
// renewal.
func (e *engine) Cancel(ctx context.Context, id string) error {
	_, err := e.q.Cancel(ctx, id)
	return err
}

// Pending is the number of attempts the worker holds.
func (e *engine) Pending() int {
	w := e.worker()
	n := 0
	ws := []*Worker{w}
	if w.parts != nil {
		w.parts.mu.Lock()
		ws = append(ws, w.parts.list...)
		w.parts.mu.Unlock()
	}
	for _, p := range ws {
		p.mu.Lock()
		n += len(p.running)
		p.mu.Unlock()
	}
	return n
}

// Lacks declares the one feature the native queue has no use for: rebound
// is the engine, so every retry is decided by the rule; nothing decides
// one without it.
func (h *harness) Lacks() map[conformance.Feature]string {
	return map[conformance.Feature]string{
		conformance.FeatureEngineDecisions: "rebound is the engine: the worker decides every retry under the rule, and no handler, hook or tool of the native queue schedules one without asking it",
	}
}

var (
	_ conformance.LackingHarness    = (*harness)(nil)
	_ conformance.SharedHarness     = (*harness)(nil)
	_ conformance.BreakerHarness    = (*harness)(nil)
	_ conformance.SynctestHarness   = (*harness)(nil)
	_ conformance.KindEngine        = (*engine)(nil)
	_ conformance.ErrorEngine       = (*engine)(nil)
	_ conformance.CancelEngine      = (*engine)(nil)
	_ conformance.RestartEngine     = (*engine)(nil)
	_ conformance.ReclaimEngine     = (*engine)(nil)
	_ conformance.BookkeepingEngine = (*engine)(nil)
)

func TestConformanceRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	// Idle p99 measures 5-15ms under -race on two cores; the bound leaves
	// room for a CI machine running other packages' tests at once. The
	// benchmarks measure the engine's own lateness (p99 of a few ms).
	conformance.Run(t, &harness{name: "native/redis", rdb: rdb, prefix: testenv.Prefix(t, rdb), lateness: 100 * time.Millisecond})
}

func TestConformanceMiniredis(t *testing.T) {
	rdb, prefix := backends[1].open(t)
	// miniredis interprets every script in Go (gopher-lua), which the race
	// detector slows about tenfold: idle p99 ~25ms plain, ~140ms under -race.
	conformance.Run(t, &harness{name: "native/miniredis", rdb: rdb, prefix: prefix, lateness: 250 * time.Millisecond})
}

// TestConformanceShardedMiniredis runs the suite on queues of three shards
// (all on the one miniredis: what it checks is the routing, the fetch over
// shards and the aggregation, not the placement).
func TestConformanceShardedMiniredis(t *testing.T) {
	rdb, prefix := backends[1].open(t)
	conformance.Run(t, &harness{name: "native/miniredis-3shards", rdb: rdb, prefix: prefix, lateness: 250 * time.Millisecond, shards: 3})
}

// TestConformanceSynctest runs the suite on a miniredis per check, dialled
// in-process, inside testing/synctest bubbles: the worker's timers and the
// server's clock run on fake time, so the lateness measured is the
// engine's own, free of the machine's load.
func TestConformanceSynctest(t *testing.T) {
	conformance.Run(t, &harness{name: "native/miniredis-synctest", synctest: true, lateness: 5 * time.Millisecond,
		open: func(t testing.TB) redis.UniversalClient {
			m := miniredis.NewMiniRedis()
			c := redis.NewClient(&redis.Options{Addr: "miniredis", // never dialled: the Dialer connects in-process
				Dialer: func(context.Context, string, string) (net.Conn, error) { return m.Dial() },
				// Its cleanup goroutines outlive Close, which a bubble
				// does not allow; miniredis sends no such notifications.
				MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
			t.Cleanup(func() { _ = c.Close(); m.Close() })
			return c
		}})
}
