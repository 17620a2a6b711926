package reboundasynq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/redisstore"
	"github.com/rebound-go/rebound/conformance"
	"github.com/rebound-go/rebound/internal/testenv"
	"github.com/rebound-go/rebound/reboundtest"
)

// harness runs the conformance suite on asynq, on real Redis or on
// miniredis (inside a synctest bubble), rounding fire times up or precise.
type harness struct {
	real    bool
	precise bool
	// interval is the server's DelayedTaskCheckInterval and
	// TaskCheckInterval.
	interval time.Duration
}

// Lacks declares the one feature asynq has no path for: asynq asks the
// server's RetryDelayFunc, the Retrier's, for every retry it schedules, so
// no retry is decided without rebound (SkipRetry and RevokeTask are told as
// rebound's permanent decisions, IsFailure's non-failures as snoozes).
func (h harness) Lacks() map[conformance.Feature]string {
	return map[conformance.Feature]string{
		conformance.FeatureEngineDecisions: "asynq asks RetryDelayFunc, the Retrier's, for every retry it schedules; it has no retry of its own choosing",
	}
}

var (
	_ conformance.LackingHarness    = harness{}
	_ conformance.SharedHarness     = harness{}
	_ conformance.BreakerHarness    = harness{}
	_ conformance.SynctestHarness   = harness{}
	_ conformance.KindEngine        = (*engine)(nil)
	_ conformance.ErrorEngine       = (*engine)(nil)
	_ conformance.CancelEngine      = (*engine)(nil)
	_ conformance.RestartEngine     = (*engine)(nil)
	_ conformance.BookkeepingEngine = (*engine)(nil)
)

func (h harness) Name() string {
	name := "asynq/miniredis"
	if h.real {
		name = "asynq/redis"
	}
	if h.precise {
		name += "/precise"
	}
	return name
}

// Limits: asynq promotes a due retry on the forwarder's next tick (at most
// one interval) and an idle worker sees it on its next poll (at most 1.5
// intervals); the rest is Redis round trips and scheduling on a busy
// machine. Rounding mode adds up to one second of resolution; precise mode
// has none: the stored second is never after the exact time, and the
// middleware waits the rest. asynq's timeouts are whole seconds.
func (h harness) Limits() conformance.Limits {
	lim := conformance.Limits{
		Lateness:          5*h.interval/2 + 250*time.Millisecond,
		MaxDelay:          MaxDelay,
		MaxAttempts:       maxStoredAttempts,
		MaxErrorBytes:     MaxErrorBytes,
		TimeoutResolution: time.Second,
	}
	if !h.precise {
		lim.Resolution = time.Second
	}
	return lim
}

func (h harness) Synctest() bool { return !h.real }

// concurrency is the number of workers: enough for a cohort of the Herd
// check to re-fire together, fewer on miniredis, where every idle worker's
// poll is a script run in the test process.
func (h harness) concurrency() int {
	if h.real {
		return 32
	}
	return 8
}

// retrier builds the Retrier cfg asks for. Without cfg.OnError, anything
// rebound reports as an internal error fails t: the suite's ordinary
// checks give it no reason to.
func (h harness) retrier(t testing.TB, cfg conformance.Config) *Retrier {
	opts := []Option{WithObserver(cfg.Observer), WithGiveUp(cfg.GiveUp), WithErrorHandler(cfg.OnError)}
	if cfg.OnError == nil && t != nil {
		opts = append(opts, WithErrorHandler(func(err error) { t.Errorf("rebound reported: %v", err) }))
	}
	if h.precise {
		opts = append(opts, WithPrecise())
	}
	if cfg.FallbackDelay > 0 {
		opts = append(opts, WithFallbackDelay(cfg.FallbackDelay))
	}
	if cfg.Key != nil {
		opts = append(opts, WithKey(func(_ *asynq.Task, id string) backoff.Source { return cfg.Key(id) }))
	}
	for typ, rule := range cfg.KindRules {
		opts = append(opts, WithKindRule(typ, rule))
	}
	opts = append(opts, WithBreaker(cfg.Breaker))
	for typ, dep := range cfg.Dependencies {
		opts = append(opts, WithDependency(typ, dep))
	}
	r, err := New(cfg.Rule, opts...)
	if err != nil {
		panic(err)
	}
	return r
}

func (h harness) Start(t testing.TB, cfg conformance.Config) conformance.Engine {
	t.Helper()
	return h.start(t, []conformance.Config{cfg}, false)[0]
}

// StartShared starts one server per config, each on its own Redis database
// (its own miniredis) and the same queue name, all with one Retrier; task
// IDs are numbered from 1 on each, so they collide.
func (h harness) StartShared(t testing.TB, cfgs []conformance.Config) []conformance.Engine {
	t.Helper()
	return h.start(t, cfgs, true)
}

func (h harness) start(t testing.TB, cfgs []conformance.Config, shared bool) []conformance.Engine {
	r := h.retrier(t, cfgs[0])
	queue := "conformance"
	if h.real {
		queue = "rbt-" + testenv.Name(t, 24)
	}
	var out []conformance.Engine
	for i, cfg := range cfgs {
		var c redis.UniversalClient
		if h.real {
			c = realRedisDB(t, i, queue)
		} else {
			c = miniRedis(t)
		}
		e := &engine{h: h, t: t, r: r, cfg: cfg, rdb: c, queue: queue, numbered: shared,
			client: asynq.NewClientFromRedisClient(c), insp: asynq.NewInspectorFromRedisClient(c)}
		e.serve()
		t.Cleanup(e.stop)
		out = append(out, e)
	}
	return out
}

// realRedisDB returns a client of database db of the real Redis server;
// the keys of queue there are deleted when t ends.
func realRedisDB(t testing.TB, db int, queue string) redis.UniversalClient {
	t.Helper()
	testenv.Redis(t) // skip, or fail under REBOUND_REQUIRE_SERVERS=1
	c := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(), DB: db})
	t.Cleanup(func() {
		testenv.DeleteKeys(c, "asynq:{"+queue+"}*")
		c.SRem(context.Background(), "asynq:queues", queue)
		_ = c.Close()
	})
	return c
}

// BreakerStore returns a redisstore on the harness's Redis, under a prefix
// of its own (on miniredis, a miniredis of its own).
func (h harness) BreakerStore(t testing.TB, rules breaker.Rules) breaker.Store {
	if !h.real {
		return redisstore.New(miniRedis(t), rules, redisstore.Options{})
	}
	c := testenv.Redis(t)
	return redisstore.New(c, rules, redisstore.Options{Prefix: testenv.Prefix(t, c)})
}

// HookDelay runs the middleware's decision step for a failure that ended
// now, then RetryDelay on its result, as asynq would, and returns the gap
// between the failure and the time the retry runs: the whole second asynq
// stores, or in precise mode the exact time the middleware waits for.
func (h harness) HookDelay(cfg conformance.Config, id string, attempt int, err error) (time.Duration, bool) {
	// Only the decision is simulated: no attempt runs, nothing is told.
	cfg.Observer, cfg.GiveUp = nil, nil
	r := h.retrier(nil, cfg)
	end := time.Now()
	c := r.decideNow(asynq.NewTaskWithHeaders(kind, nil, map[string]string{"suite": "1"}), id, attempt-1, math.MaxInt32, err, end)
	if errors.Is(c, asynq.SkipRetry) {
		return 0, false
	}
	// asynq: d := RetryDelayFunc(...); retryAt := time.Now().Add(d).
	d := r.RetryDelay(attempt-1, c, nil)
	fire := time.Now().Add(d)
	if _, at, _ := Decision(c); h.precise {
		fire = at // the middleware waits until exactly this time
	} else {
		fire = time.Unix(fire.Unix(), 0) // what asynq stores and fires on
	}
	return fire.Sub(end), true
}

// engine is one asynq server on one queue, with the suite's handler behind
// the Retrier's middleware for every task type.
type engine struct {
	h        harness
	t        testing.TB
	r        *Retrier
	cfg      conformance.Config
	rdb      redis.UniversalClient
	queue    string
	client   *asynq.Client
	insp     *asynq.Inspector
	numbered bool
	lastID   atomic.Int64

	mu  sync.Mutex
	srv *asynq.Server
}

// serve starts a server for the engine.
func (e *engine) serve() {
	srv := asynq.NewServerFromRedisClient(e.rdb, asynq.Config{
		Concurrency:              e.h.concurrency(),
		Queues:                   map[string]int{e.queue: 1},
		RetryDelayFunc:           e.r.RetryDelay,
		IsFailure:                e.r.IsFailure,
		DelayedTaskCheckInterval: e.h.interval,
		TaskCheckInterval:        e.h.interval,
		ShutdownTimeout:          500 * time.Millisecond,
		LogLevel:                 asynq.FatalLevel,
	})
	handler := asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		n, _ := asynq.GetRetryCount(ctx)
		return e.cfg.Handler(ctx, conformance.Job{ID: id, Attempt: n + 1, Payload: task.Payload()})
	})
	if err := srv.Start(e.r.Middleware(handler)); err != nil {
		e.t.Fatalf("start asynq server: %v", err)
	}
	e.mu.Lock()
	e.srv = srv
	e.mu.Unlock()
}

func (e *engine) stop() {
	e.mu.Lock()
	srv := e.srv
	e.mu.Unlock()
	srv.Shutdown()
}

func (e *engine) Enqueue(ctx context.Context, payload []byte) (string, error) {
	return e.EnqueueKind(ctx, kind, payload)
}

// EnqueueKind enqueues a task of the given type, built by the Retrier's
// NewTask (headers, and its type's MaxRetry), kept an hour once done.
func (e *engine) EnqueueKind(ctx context.Context, typ string, payload []byte) (string, error) {
	opts := []asynq.Option{asynq.Queue(e.queue), asynq.Retention(time.Hour)}
	if e.cfg.Timeout > 0 {
		// asynq's timeouts are whole seconds.
		opts = append(opts, asynq.Timeout((e.cfg.Timeout+time.Second-1)/time.Second*time.Second))
	}
	if e.numbered {
		opts = append(opts, asynq.TaskID(strconv.FormatInt(e.lastID.Add(1), 10)))
	}
	info, err := e.client.EnqueueContext(ctx, e.r.NewTaskWithHeaders(typ, payload, map[string]string{"suite": "1"}), opts...)
	if err != nil {
		return "", err
	}
	return info.ID, nil
}

func (e *engine) State(_ context.Context, id string) (conformance.State, error) {
	info, err := e.insp.GetTaskInfo(e.queue, id)
	if err != nil {
		return 0, fmt.Errorf("task %s: %w", id, err)
	}
	switch info.State {
	case asynq.TaskStateCompleted:
		return conformance.StateCompleted, nil
	case asynq.TaskStateArchived:
		return conformance.StateFailed, nil
	}
	return conformance.StatePending, nil
}

// LastError reads the task's last_err.
func (e *engine) LastError(_ context.Context, id string) (string, error) {
	info, err := e.insp.GetTaskInfo(e.queue, id)
	if err != nil {
		return "", fmt.Errorf("task %s: %w", id, err)
	}
	return info.LastErr, nil
}

// Cancel cancels a running task with Inspector.CancelProcessing (asynq
// then counts a failed attempt and retries it) and archives a waiting one
// with Inspector.ArchiveTask.
func (e *engine) Cancel(_ context.Context, id string) error {
	info, err := e.insp.GetTaskInfo(e.queue, id)
	if err != nil {
		return fmt.Errorf("task %s: %w", id, err)
	}
	if info.State == asynq.TaskStateActive {
		return e.insp.CancelProcessing(id)
	}
	return e.insp.ArchiveTask(e.queue, id)
}

// Restart shuts the server down (a handler running past the 500ms
// ShutdownTimeout is cut short and its task put back), waits until the
// Retrier has settled every run the old server had, so that those runs
// are reported, and starts a new server on the same queue.
func (e *engine) Restart(ctx context.Context) error {
	e.stop()
	deadline := time.Now().Add(e.r.grace + 5*time.Second)
	for e.r.flight.len() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	e.serve()
	return nil
}

// Pending returns the number of runs the Retrier holds.
func (e *engine) Pending() int { return e.r.flight.len() }

func TestConformance(t *testing.T) {
	for _, h := range []harness{
		{interval: 100 * time.Millisecond},
		{interval: 100 * time.Millisecond, precise: true},
		{real: true, interval: 100 * time.Millisecond},
		{real: true, interval: 100 * time.Millisecond, precise: true},
	} {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(h.Name(), "asynq/"), "/", "-"), func(t *testing.T) {
			if h.real {
				testenv.Redis(t) // skip, or fail under REBOUND_REQUIRE_SERVERS=1, before any check
			}
			conformance.Run(t, h)
		})
	}
}

// TestHarnessEngines drives the harness's optional engines the way the
// suite's hostile checks do, on miniredis in a bubble: two servers on two
// databases share one Retrier and number task IDs from 1, so IDs collide;
// one server's tasks outlive their timeout (RetryDelay decides them),
// the other's fail plainly; a restart cuts a handler short; a cancel
// fails a running one; what asynq stored and what observers heard agree.
func TestHarnessEngines(t *testing.T) {
	h := harness{interval: 100 * time.Millisecond}
	synctest.Test(t, func(t *testing.T) {
		rec := &reboundtest.Recorder{}
		rule := mustRule(t, fixed(t, 2*time.Second), 3)
		var mu sync.Mutex
		runs := map[string]int{}
		handler := func(engine string, fail func(ctx context.Context, attempt int) error) func(context.Context, conformance.Job) error {
			return func(ctx context.Context, job conformance.Job) error {
				mu.Lock()
				runs[engine+"/"+job.ID]++
				mu.Unlock()
				return fail(ctx, job.Attempt)
			}
		}
		slow := handler("slow", func(ctx context.Context, attempt int) error {
			if attempt == 1 {
				time.Sleep(1500 * time.Millisecond) // past the 1s timeout
			}
			return nil
		})
		plain := handler("plain", func(_ context.Context, attempt int) error {
			if attempt == 1 {
				return backoff.RetryAfter(errBoom, 5*time.Second)
			}
			return nil
		})
		cfg := conformance.Config{Rule: rule, Observer: rec, GiveUp: rec.GiveUp, Timeout: time.Second}
		slowCfg, plainCfg := cfg, cfg
		slowCfg.Handler, plainCfg.Handler = slow, plain
		engines := h.StartShared(t, []conformance.Config{slowCfg, plainCfg})
		ctx := context.Background()
		var ids [2][]string
		for i, e := range engines {
			for range 3 {
				id, err := e.(conformance.KindEngine).EnqueueKind(ctx, []string{"slow", "plain"}[i], nil)
				if err != nil {
					t.Fatal(err)
				}
				ids[i] = append(ids[i], id)
			}
		}
		if ids[0][0] != "1" || ids[1][0] != "1" {
			t.Fatalf("IDs %v, want both engines to number from 1", ids)
		}
		for i, e := range engines {
			for _, id := range ids[i] {
				waitFor(t, time.Minute, "task "+id+" to complete", func() bool {
					st, _ := e.State(ctx, id)
					return st == conformance.StateCompleted
				})
			}
		}
		waitFor(t, 10*time.Second, "runs to settle", func() bool { return engines[0].(conformance.BookkeepingEngine).Pending() == 0 })
		for _, ev := range rec.Events() {
			switch {
			case ev.Attempt.Number == 2 && ev.Result.Outcome() != "success":
				t.Errorf("%s task %s attempt 2 reported %s", ev.Attempt.Kind, ev.Attempt.JobID, ev.Result.Outcome())
			case ev.Attempt.Number == 1 && ev.Attempt.Kind == "slow" && !errors.Is(ev.Result.Err, context.DeadlineExceeded):
				t.Errorf("slow task %s attempt 1 reported %v, want context.DeadlineExceeded", ev.Attempt.JobID, ev.Result.Err)
			case ev.Attempt.Number == 1 && ev.Attempt.Kind == "plain" && (!errors.Is(ev.Result.Err, errBoom) || ev.Result.Decision.Delay != 5*time.Second):
				t.Errorf("plain task %s attempt 1 reported %v after %v, want boom and its 5s hint", ev.Attempt.JobID, ev.Result.Err, ev.Result.Decision.Delay)
			}
		}
		if n := len(rec.Events()); n != 12 {
			t.Errorf("observer heard %d attempts, want 12", n)
		}

		// Restart cuts a running handler short; Cancel fails a running
		// one; LastError reads what asynq stored.
		block := make(chan struct{})
		var started atomic.Int32
		seen := map[string]bool{}
		cut := conformance.Config{Rule: rule, Observer: rec, Handler: func(ctx context.Context, job conformance.Job) error {
			mu.Lock()
			first := !seen[string(job.Payload)]
			seen[string(job.Payload)] = true
			mu.Unlock()
			if first {
				started.Add(1)
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-block:
					return nil
				}
			}
			return nil
		}}
		rec.Reset()
		e := h.Start(t, cut)
		a, _ := e.Enqueue(ctx, []byte("a"))
		waitFor(t, 10*time.Second, "the first handler to block", func() bool { return started.Load() == 1 })
		if err := e.(conformance.RestartEngine).Restart(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, "the restarted task to complete", func() bool {
			st, _ := e.State(ctx, a)
			return st == conformance.StateCompleted
		})
		if got := rec.Story(a); got != "1 interrupted\n1 success" {
			t.Errorf("restarted task's story:\n%s", got)
		}
		b, _ := e.Enqueue(ctx, []byte("b"))
		waitFor(t, 10*time.Second, "the second handler to block", func() bool { return started.Load() == 2 })
		if err := e.(conformance.CancelEngine).Cancel(ctx, b); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, "the cancelled task to complete", func() bool {
			st, _ := e.State(ctx, b)
			return st == conformance.StateCompleted
		})
		if got := rec.Story(b); got != "1 retry 2s\n2 success" {
			t.Errorf("cancelled task's story:\n%s", got)
		}
		if msg, err := e.(conformance.ErrorEngine).LastError(ctx, b); err != nil || msg != "context canceled" {
			t.Errorf("LastError = %q, %v; want context canceled", msg, err)
		}
		close(block)
	})
}
