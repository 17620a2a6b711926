package reboundasynq

import (
	"cmp"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

const kind = "rebound:test"

// miniRedis returns a client of a fresh in-process miniredis whose TTLs
// follow the clock, closed when t ends. Inside a synctest bubble its clock is
// the bubble's.
func miniRedis(t testing.TB) redis.UniversalClient {
	t.Helper()
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	c := redis.NewClient(&redis.Options{
		Addr:   "127.0.0.1:1", // never dialled: Dialer connects in-process
		Dialer: func(context.Context, string, string) (net.Conn, error) { return m.Dial() },
	})
	t.Cleanup(func() {
		_ = c.Close()
		m.Close()
	})
	return c
}

// realRedis returns a client of the real Redis server and a queue name unique
// to t whose keys are deleted when t ends.
func realRedis(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	c := testenv.Redis(t)
	q := "rbt-" + testenv.Name(t, 24)
	t.Cleanup(func() {
		testenv.DeleteKeys(c, "asynq:{"+q+"}*")
		c.SRem(context.Background(), "asynq:queues", q)
	})
	return c, q
}

// server is a running asynq server on one queue.
type server struct {
	srv    *asynq.Server
	rdb    redis.UniversalClient // the client asynq's server, client and inspector share
	client *asynq.Client
	insp   *asynq.Inspector
	queue  string
}

type serverOpts struct {
	delayedCheck time.Duration // Config.DelayedTaskCheckInterval; 0: 100ms
	taskCheck    time.Duration // Config.TaskCheckInterval; 0: 100ms
	concurrency  int
	errorHandler asynq.ErrorHandlerFunc
	isFailure    func(error) bool
	noMiddleware bool
	shutdown     time.Duration // Config.ShutdownTimeout; 0: 2s
	types        []string      // task types handled besides kind
}

// start runs a server for queue on c with r plugged in the documented way,
// shut down when t ends (before c is closed).
func start(t testing.TB, c redis.UniversalClient, queue string, r *Retrier, h asynq.HandlerFunc, o serverOpts) *server {
	t.Helper()
	if o.delayedCheck == 0 {
		o.delayedCheck = 100 * time.Millisecond
	}
	if o.taskCheck == 0 {
		o.taskCheck = 100 * time.Millisecond
	}
	if o.concurrency == 0 {
		o.concurrency = 4
	}
	cfg := asynq.Config{
		Concurrency:              o.concurrency,
		Queues:                   map[string]int{queue: 1},
		RetryDelayFunc:           r.RetryDelay,
		DelayedTaskCheckInterval: o.delayedCheck,
		TaskCheckInterval:        o.taskCheck,
		ShutdownTimeout:          cmp.Or(o.shutdown, 2*time.Second),
		LogLevel:                 asynq.FatalLevel,
		IsFailure:                o.isFailure,
	}
	if o.errorHandler != nil {
		cfg.ErrorHandler = o.errorHandler
	}
	srv := asynq.NewServerFromRedisClient(c, cfg)
	mux := asynq.NewServeMux()
	if !o.noMiddleware {
		mux.Use(r.Middleware)
	}
	mux.Handle(kind, h)
	for _, typ := range o.types {
		mux.Handle(typ, h)
	}
	if err := srv.Start(mux); err != nil {
		t.Fatalf("start asynq server: %v", err)
	}
	s := &server{
		srv:    srv,
		rdb:    c,
		client: asynq.NewClientFromRedisClient(c),
		insp:   asynq.NewInspectorFromRedisClient(c),
		queue:  queue,
	}
	t.Cleanup(srv.Shutdown)
	return s
}

// enqueue adds a task of kind with payload to the server's queue.
func (s *server) enqueue(t testing.TB, payload []byte, headers map[string]string, opts ...asynq.Option) string {
	t.Helper()
	return s.enqueueType(t, kind, payload, headers, opts...)
}

// enqueueType adds a task of the given type to the server's queue.
func (s *server) enqueueType(t testing.TB, typ string, payload []byte, headers map[string]string, opts ...asynq.Option) string {
	t.Helper()
	opts = append([]asynq.Option{asynq.Queue(s.queue)}, opts...)
	info, err := s.client.Enqueue(asynq.NewTaskWithHeaders(typ, payload, headers), opts...)
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	return info.ID
}

// info returns the task's info, or nil once asynq has deleted it.
func (s *server) info(t testing.TB, id string) *asynq.TaskInfo {
	t.Helper()
	info, err := s.insp.GetTaskInfo(s.queue, id)
	if err != nil {
		return nil
	}
	return info
}

// waitState polls until the task is in state want, failing t after limit.
func (s *server) waitState(t testing.TB, id string, want asynq.TaskState, limit time.Duration) *asynq.TaskInfo {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		info := s.info(t, id)
		if info != nil && info.State == want {
			return info
		}
		if time.Now().After(deadline) {
			got := "deleted"
			if info != nil {
				got = info.State.String()
			}
			t.Fatalf("task %s is %s after %v, want %s", id, got, limit, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// blockFirstRun returns a handler whose first run signals running, then
// waits for its context to end and returns the context's error; every
// later run succeeds.
func blockFirstRun(running chan<- struct{}) func(context.Context, *asynq.Task) error {
	var runs atomic.Int64
	return func(ctx context.Context, _ *asynq.Task) error {
		if runs.Add(1) == 1 {
			running <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
}

// runRec is one attempt as a handler saw it.
type runRec struct {
	attempt    int
	start, end time.Time
}

// recorder records the attempts of tasks and fails them as told.
type recorder struct {
	mu   sync.Mutex
	runs map[string][]runRec
	fail func(id string, attempt int) error
}

func newRecorder(fail func(id string, attempt int) error) *recorder {
	return &recorder{runs: map[string][]runRec{}, fail: fail}
}

func (rc *recorder) handle(ctx context.Context, t *asynq.Task) error {
	start := time.Now()
	id, _ := asynq.GetTaskID(ctx)
	n, _ := asynq.GetRetryCount(ctx)
	err := rc.fail(id, n+1)
	rc.mu.Lock()
	rc.runs[id] = append(rc.runs[id], runRec{attempt: n + 1, start: start, end: time.Now()})
	rc.mu.Unlock()
	return err
}

func (rc *recorder) get(id string) []runRec {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]runRec(nil), rc.runs[id]...)
}

// results returns the ended attempts rec holds, in the order they started.
func results(rec *reboundtest.Recorder) ([]observe.Attempt, []observe.Result) {
	var as []observe.Attempt
	var rs []observe.Result
	for _, e := range rec.Events() {
		if e.Ended {
			as, rs = append(as, e.Attempt), append(rs, e.Result)
		}
	}
	return as, rs
}

// panicking is a Recorder whose AttemptStarted or AttemptEnded (on says
// which) panics after recording.
type panicking struct {
	*reboundtest.Recorder
	on string
}

func (o panicking) AttemptStarted(ctx context.Context, a observe.Attempt) context.Context {
	ctx = o.Recorder.AttemptStarted(ctx, a)
	if o.on == "started" {
		panic("observer started boom")
	}
	return ctx
}

func (o panicking) AttemptEnded(ctx context.Context, a observe.Attempt, r observe.Result) {
	o.Recorder.AttemptEnded(ctx, a, r)
	if o.on == "ended" {
		panic("observer ended boom")
	}
}

// errs collects what the Retrier reports to its error handler.
type errs struct {
	mu  sync.Mutex
	all []error
}

func (e *errs) add(err error) { e.mu.Lock(); e.all = append(e.all, err); e.mu.Unlock() }
func (e *errs) list() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.all...)
}

func mustRule(t testing.TB, p backoff.Policy, n int) backoff.Rule {
	t.Helper()
	r, err := backoff.NewRule(p, n)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustNew(t testing.TB, rule backoff.Rule, opts ...Option) *Retrier {
	t.Helper()
	r, err := New(rule, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fixed(t testing.TB, d time.Duration) backoff.Policy {
	t.Helper()
	return backoff.Must(backoff.Fixed(d))
}

// decideNow runs the middleware's decision step for a failure with err of
// task t (ID id, retry count n, MaxRetry k) that ended at end while its
// context was live, as the middleware does, and returns the error it
// hands asynq.
func (r *Retrier) decideNow(t *asynq.Task, id string, n, k int, err error, end time.Time) *carrier {
	ru := r.newRun(context.Background(), t, id, "q", n, k, r.RuleFor(t.Type()))
	ru.started, ru.ctx = true, context.Background()
	c := r.carrierFor(err)
	c.run = ru
	res, exact := r.judge(ru, c, end)
	res, _ = r.decideRun(ru, res, exact)
	c.gaveUp = !res.Decision.Retry()
	return c
}
