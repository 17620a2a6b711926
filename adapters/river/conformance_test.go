package reboundriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/memstore"
	"github.com/rebound-go/rebound/conformance"
)

// confArgs is the job the conformance suite enqueues with Enqueue.
type confArgs struct {
	Payload []byte `json:"payload"`
}

func (confArgs) Kind() string { return "rebound_conformance" }

// kindArgs is a job of a kind the suite names (EnqueueKind); each kind gets
// a worker of its own with river.AddWorkerArgs.
type kindArgs struct {
	kind    string
	Payload []byte `json:"payload"`
}

func (a kindArgs) Kind() string { return a.kind }

// ownArgs is a job the suite enqueues with EnqueueEngineRetried: its
// worker answers River's NextRetry itself, so River retries it without
// asking the Retrier.
type ownArgs struct {
	Payload []byte `json:"payload"`
}

func (ownArgs) Kind() string { return "rebound_conformance_own" }

// ownDelay is how long after a failure River runs an ownArgs job again,
// by its worker's own NextRetry.
const ownDelay = 60 * time.Millisecond

// ownWorker is a confWorker whose NextRetry does not ask the Retrier
// (no WorkerNextRetry): River decides the retry.
type ownWorker struct {
	confWorker[ownArgs]
}

func (*ownWorker) NextRetry(*river.Job[ownArgs]) time.Time { return time.Now().Add(ownDelay) }

// confWorker hands each attempt to the suite's handler.
type confWorker[T river.JobArgs] struct {
	river.WorkerDefaults[T]
	handler func(context.Context, conformance.Job) error
	payload func(T) []byte
}

func (w *confWorker[T]) Work(ctx context.Context, job *river.Job[T]) error {
	return w.handler(ctx, conformance.Job{ID: strconv.FormatInt(job.ID, 10), Attempt: job.Attempt, Payload: w.payload(job.Args)})
}

// retrier builds the Retrier for cfg as a user would, with every option the
// suite asks for.
func retrier(cfg conformance.Config) (*Retrier, error) {
	opts := []Option{
		WithObserver(cfg.Observer),
		WithGiveUp(cfg.GiveUp),
		WithErrorHandler(cfg.OnError),
	}
	if cfg.FallbackDelay > 0 {
		opts = append(opts, WithFallbackDelay(cfg.FallbackDelay))
	}
	if cfg.Key != nil {
		opts = append(opts, WithKey(func(job *rivertype.JobRow) backoff.Source { return cfg.Key(strconv.FormatInt(job.ID, 10)) }))
	}
	for kind, rule := range cfg.KindRules {
		opts = append(opts, WithKindRule(kind, rule))
	}
	opts = append(opts, WithBreaker(cfg.Breaker))
	for kind, dep := range cfg.Dependencies {
		opts = append(opts, WithDependency(kind, dep))
	}
	return New(cfg.Rule, opts...)
}

// workersFor registers the suite's handler for the default kind and for
// every kind cfg has a rule for.
func workersFor(cfg conformance.Config) *river.Workers {
	workers := river.NewWorkers()
	river.AddWorker(workers, &confWorker[confArgs]{handler: cfg.Handler, payload: func(a confArgs) []byte { return a.Payload }})
	river.AddWorker(workers, &ownWorker{confWorker[ownArgs]{handler: cfg.Handler, payload: func(a ownArgs) []byte { return a.Payload }}})
	kinds := map[string]bool{}
	for kind := range cfg.KindRules {
		kinds[kind] = true
	}
	for kind := range cfg.Dependencies {
		kinds[kind] = true
	}
	for kind := range kinds {
		river.AddWorkerArgs(workers, kindArgs{kind: kind}, river.Worker[kindArgs](&confWorker[kindArgs]{handler: cfg.Handler, payload: func(a kindArgs) []byte { return a.Payload }}))
	}
	return workers
}

// backend opens fresh, migrated databases of one kind for River clients.
type backend[TTx any] struct {
	// open returns a driver on a database of its own and the schema to use.
	open func(t testing.TB) (riverdriver.Driver[TTx], string)
	// breaker returns a breaker store of its own where the clients of
	// this backend would keep one.
	breaker func(t testing.TB, rules breaker.Rules) breaker.Store
}

// harness runs the conformance suite on one River backend.
type harness[TTx any] struct {
	name    string
	limits  conformance.Limits
	poll    time.Duration
	backend backend[TTx]
}

func (h *harness[TTx]) Name() string               { return h.name }
func (h *harness[TTx]) Limits() conformance.Limits { return h.limits }

// Start starts a client on a database of its own with the Retrier plugged
// in as the package documents.
func (h *harness[TTx]) Start(t testing.TB, cfg conformance.Config) conformance.Engine {
	r, err := retrier(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h.start(t, r, cfg)
}

// StartShared starts one client per Config, each on a database of its own
// (job IDs count from 1 on each), all sharing one Retrier built from
// cfgs[0].
func (h *harness[TTx]) StartShared(t testing.TB, cfgs []conformance.Config) []conformance.Engine {
	if len(cfgs) == 0 {
		return nil
	}
	r, err := retrier(cfgs[0])
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	engines := make([]conformance.Engine, len(cfgs))
	for i, cfg := range cfgs {
		engines[i] = h.start(t, r, cfg)
	}
	return engines
}

func (h *harness[TTx]) start(t testing.TB, r *Retrier, cfg conformance.Config) *engine[TTx] {
	driver, schema := h.backend.open(t)
	workers := workersFor(cfg)
	config := func() *river.Config {
		c := &river.Config{
			FetchCooldown:     min(h.poll, river.FetchCooldownDefault),
			FetchPollInterval: h.poll,
			JobTimeout:        cfg.Timeout,
			Logger:            watchRetryWarnings(t),
			Plugins:           []rivertype.Plugin{r},
			Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}},
			RetryPolicy:       r,
			Schema:            schema,
			Workers:           workers,
		}
		if cfg.Timeout <= 0 {
			c.JobTimeout = -1 // no timeout, as the suite asks
		}
		return c
	}
	operator, err := river.NewClient(driver, &river.Config{Logger: quietLogs, Schema: schema})
	if err != nil {
		t.Fatalf("river.NewClient: %v", err)
	}
	e := &engine[TTx]{t: t, r: r, driver: driver, config: config, operator: operator}
	e.client = startClient(t, driver, config())
	return e
}

// BreakerStore returns a breaker store on the harness's backend: pgstore
// in a schema of its own on PostgreSQL; on SQLite, whose River clients
// live in one process, memstore.
func (h *harness[TTx]) BreakerStore(t testing.TB, rules breaker.Rules) breaker.Store {
	return h.backend.breaker(t, rules)
}

// HookDelay runs one attempt through the Retrier's middleware and then does
// what River's executor does with the result: a JobCancel error or an
// attempt at MaxAttempts ends the job, anything else asks NextRetry.
func (h *harness[TTx]) HookDelay(cfg conformance.Config, id string, attempt int, err error) (time.Duration, bool) {
	// Only the decision is asked for: no attempt ran, so nothing is told.
	cfg.Observer, cfg.GiveUp = nil, nil
	r, rerr := retrier(cfg)
	if rerr != nil {
		panic(rerr)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	jobID, perr := strconv.ParseInt(id, 10, 64)
	if perr != nil {
		panic(fmt.Sprintf("conformance gave job ID %q, want an int64: %v", id, perr))
	}
	job := &rivertype.JobRow{ID: jobID, Attempt: attempt, MaxAttempts: river.MaxAttemptsDefault, Kind: confArgs{}.Kind(), Queue: river.QueueDefault}
	returned := r.Work(context.Background(), job, func(context.Context) error { return err })
	var cancel *rivertype.JobCancelError
	if errors.As(returned, &cancel) || job.Attempt >= job.MaxAttempts {
		return 0, false
	}
	return r.NextRetry(job).Sub(now), true
}

// engine is one running client and what the suite asks of it.
type engine[TTx any] struct {
	t        testing.TB
	r        *Retrier
	driver   riverdriver.Driver[TTx]
	config   func() *river.Config
	operator *river.Client[TTx] // another client, for JobCancel

	mu     sync.Mutex
	client *river.Client[TTx]
}

func (e *engine[TTx]) current() *river.Client[TTx] {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.client
}

func (e *engine[TTx]) Enqueue(ctx context.Context, payload []byte) (string, error) {
	return e.insert(ctx, confArgs{Payload: payload})
}

func (e *engine[TTx]) EnqueueKind(ctx context.Context, kind string, payload []byte) (string, error) {
	return e.insert(ctx, kindArgs{kind: kind, Payload: payload})
}

// EnqueueEngineRetried inserts a job whose worker answers NextRetry
// itself: River retries its failures at that time without asking the
// Retrier.
func (e *engine[TTx]) EnqueueEngineRetried(ctx context.Context, payload []byte) (string, error) {
	return e.insert(ctx, ownArgs{Payload: payload})
}

func (e *engine[TTx]) insert(ctx context.Context, args river.JobArgs) (string, error) {
	res, err := e.current().Insert(ctx, args, nil)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(res.Job.ID, 10), nil
}

func (e *engine[TTx]) get(ctx context.Context, id string) (*rivertype.JobRow, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("job ID %q is not an int64: %w", id, err)
	}
	return e.operator.JobGet(ctx, n)
}

func (e *engine[TTx]) State(ctx context.Context, id string) (conformance.State, error) {
	job, err := e.get(ctx, id)
	if err != nil {
		return conformance.StatePending, err
	}
	switch job.State {
	case rivertype.JobStateCompleted:
		return conformance.StateCompleted, nil
	case rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
		return conformance.StateFailed, nil
	}
	return conformance.StatePending, nil
}

// LastError reads the message River stored for the job's last failed
// attempt.
func (e *engine[TTx]) LastError(ctx context.Context, id string) (string, error) {
	job, err := e.get(ctx, id)
	if err != nil || len(job.Errors) == 0 {
		return "", err
	}
	return job.Errors[len(job.Errors)-1].Error, nil
}

// Cancel cancels the job with JobCancel from another client, as an
// operator's tool does.
func (e *engine[TTx]) Cancel(ctx context.Context, id string) error {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return fmt.Errorf("job ID %q is not an int64: %w", id, err)
	}
	_, err = e.operator.JobCancel(ctx, n)
	return err
}

// Restart stops the client as a deploy with a short shutdown timeout does
// (StopAndCancel cancels running jobs' contexts) and starts a new one with
// the same configuration on the same database.
func (e *engine[TTx]) Restart(ctx context.Context) error {
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.current().StopAndCancel(stopCtx); err != nil {
		return fmt.Errorf("StopAndCancel: %w", err)
	}
	next := startClient(e.t, e.driver, e.config())
	e.mu.Lock()
	e.client = next
	e.mu.Unlock()
	return nil
}

// Pending reports the Retrier's pending decisions.
func (e *engine[TTx]) Pending() int { return e.r.Pending() }

var (
	_ conformance.SharedHarness     = (*harness[pgxTx])(nil)
	_ conformance.BreakerHarness    = (*harness[pgxTx])(nil)
	_ conformance.KindEngine        = (*engine[pgxTx])(nil)
	_ conformance.ErrorEngine       = (*engine[pgxTx])(nil)
	_ conformance.CancelEngine      = (*engine[pgxTx])(nil)
	_ conformance.RestartEngine     = (*engine[pgxTx])(nil)
	_ conformance.BookkeepingEngine = (*engine[pgxTx])(nil)
	_ conformance.EngineDecider     = (*engine[pgxTx])(nil)
)

// riverLimits is what River with the Retrier promises, on both backends.
func riverLimits(lateness time.Duration) conformance.Limits {
	return conformance.Limits{
		Resolution: Resolution,
		Lateness:   lateness,
		// Any time.Duration: now plus math.MaxInt64 is in 2318, which both
		// backends store (PostgreSQL up to year 294276, SQLite to 9999).
		MaxDelay:      0,
		MaxAttempts:   maxStoredAttempts,
		MaxErrorBytes: MaxErrorBytes,
		// River's JobTimeout is a context deadline: exact.
		TimeoutResolution: 0,
	}
}

func postgresHarness(poll, lateness time.Duration) *harness[pgxTx] {
	return &harness[pgxTx]{
		name:    "river/postgres",
		limits:  riverLimits(lateness),
		poll:    poll,
		backend: backend[pgxTx]{open: postgresDriver, breaker: pgBreakerStore},
	}
}

func sqliteHarness(poll, lateness time.Duration) *harness[sqlTx] {
	return &harness[sqlTx]{
		name:   "river/sqlite",
		limits: riverLimits(lateness),
		poll:   poll,
		backend: backend[sqlTx]{open: sqliteDriver, breaker: func(_ testing.TB, rules breaker.Rules) breaker.Store {
			return memstore.New(rules, memstore.Options{})
		}},
	}
}

// The lateness the harnesses declare with FetchPollInterval testPoll. River's
// batch completer records a failed attempt up to 250 ms after it ends (it
// flushes small batches every fifth 50 ms tick), and the job cannot be
// fetched again before that; then comes one poll interval and the fetch
// itself, with headroom for a shared 2-core machine.
const postgresLateness = 750 * time.Millisecond

const sqliteLateness = 750 * time.Millisecond

func TestConformancePostgres(t *testing.T) {
	conformance.Run(t, postgresHarness(testPoll, postgresLateness))
}

// TestConformanceSQLite runs the suite on SQLite. Under the race detector
// the pure-Go SQLite driver is an order of magnitude slower: retries on a
// shared 2-core machine ran up to 4 s late, and the whole suite, whose
// waits grow with the declared lateness, took over 10 minutes. So under
// -race the test skips unless REBOUND_RIVER_SQLITE_RACE=1, and then
// declares sqliteRaceLateness. CI sets it for the checks of the hostile,
// lifecycle, concurrency and bookkeeping classes (a -run filter), and runs
// the whole suite a second time without -race, where the lateness bound is
// the one measured.
func TestConformanceSQLite(t *testing.T) {
	lateness := sqliteLateness
	if raceEnabled {
		if os.Getenv("REBOUND_RIVER_SQLITE_RACE") != "1" {
			t.Skip("the whole suite on SQLite under -race takes over 10 minutes; run it without -race, or set REBOUND_RIVER_SQLITE_RACE=1 (with a -run filter for the checks you want)")
		}
		lateness = sqliteRaceLateness
	}
	conformance.Run(t, sqliteHarness(testPoll, lateness))
}

// sqliteRaceLateness is the lateness the SQLite harness declares under the
// race detector.
const sqliteRaceLateness = 5 * time.Second
