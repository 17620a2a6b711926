package reboundriver

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// scriptArgs tells scriptWorker what to return.
type scriptArgs struct {
	// Mode is one of "ok", "fail", "permanent", "cancel", "snooze",
	// "retry-after", "fail-once", "panic".
	Mode string `json:"mode"`
}

func (scriptArgs) Kind() string { return "rebound_script" }

var errScripted = errors.New("scripted failure")

type scriptWorker struct {
	river.WorkerDefaults[scriptArgs]
	snoozed sync.Map // job ID -> snoozed once
}

func (w *scriptWorker) Work(ctx context.Context, job *river.Job[scriptArgs]) error {
	switch job.Args.Mode {
	case "fail":
		return errScripted
	case "permanent":
		return backoff.Permanent(errScripted)
	case "cancel":
		return river.JobCancel(errScripted)
	case "snooze":
		if _, done := w.snoozed.LoadOrStore(job.ID, true); !done {
			return river.JobSnooze(time.Millisecond)
		}
	case "retry-after":
		return backoff.RetryAfter(errScripted, 30*time.Second)
	case "fail-once":
		if job.Attempt == 1 {
			return errScripted
		}
	case "panic":
		panic("scripted panic")
	}
	return nil
}

// rtEnv is one backend for rivertest: a pool-less driver, a transaction
// maker and a schema.
type rtEnv[TTx any] struct {
	driver riverdriver.Driver[TTx]
	tx     func(t testing.TB) TTx
	schema string
	// setAttempt overwrites a job's stored attempt number in tx, as if it
	// had run that many times.
	setAttempt func(t testing.TB, tx TTx, id int64, attempt int)
}

// forBackends runs body on PostgreSQL and on SQLite.
func forBackends(t *testing.T, pg func(t *testing.T, e rtEnv[pgxTx]), lite func(t *testing.T, e rtEnv[sqlTx])) {
	t.Run("postgres", func(t *testing.T) {
		pool, schema := postgresDB(t)
		pg(t, rtEnv[pgxTx]{driver: riverpgxv5.New(nil), tx: func(t testing.TB) pgxTx { return pgTx(t, pool) }, schema: schema,
			setAttempt: func(t testing.TB, tx pgxTx, id int64, attempt int) {
				if _, err := tx.Exec(context.Background(), "UPDATE "+schema+".river_job SET attempt = $1 WHERE id = $2", attempt, id); err != nil {
					t.Fatalf("set attempt: %v", err)
				}
			}})
	})
	t.Run("sqlite", func(t *testing.T) {
		db := sqliteDB(t)
		lite(t, rtEnv[sqlTx]{driver: riversqlite.New(nil), tx: func(t testing.TB) sqlTx { return sqliteTx(t, db) },
			setAttempt: func(t testing.TB, tx sqlTx, id int64, attempt int) {
				if _, err := tx.Exec("UPDATE river_job SET attempt = ? WHERE id = ?", attempt, id); err != nil {
					t.Fatalf("set attempt: %v", err)
				}
			}})
	})
}

// testWorker builds a rivertest worker with r plugged into River's config.
func testWorker[TTx any](t testing.TB, e rtEnv[TTx], r *Retrier) *rivertest.Worker[scriptArgs, TTx] {
	return rivertest.NewWorker(t, e.driver, &river.Config{
		Logger:      watchRetryWarnings(t),
		Middleware:  []rivertype.Middleware{r},
		RetryPolicy: r,
		Schema:      e.schema,
	}, river.Worker[scriptArgs](&scriptWorker{}))
}

// rivertestMappings checks each mapping through River's real executor.
func rivertestMappings[TTx any](t *testing.T, e rtEnv[TTx]) {
	ctx := context.Background()
	jittered := backoff.Must(backoff.EqualJitter(backoff.Must(backoff.Exponential(10*time.Second, time.Hour))))
	rule := mustRule(t, jittered, 3)
	// The keyed schedule and retry-after hints are in reboundrivertest's
	// TestExactMappings.

	t.Run("PermanentCancels", func(t *testing.T) {
		r, _ := New(rule, quietErrors)
		res, _ := testWorker(t, e, r).Work(ctx, t, e.tx(t), scriptArgs{Mode: "permanent"}, nil)
		if res.Job.State != rivertype.JobStateCancelled || res.EventKind != river.EventKindJobCancelled {
			t.Fatalf("permanent error: state %s, event %s; want cancelled", res.Job.State, res.EventKind)
		}
		if r.Pending() != 0 {
			t.Fatalf("Pending = %d, want 0", r.Pending())
		}
	})

	// A job inserted with MaxAttempts far above the rule's cap, by a client
	// without the insert middleware, still ends discarded at the cap.
	t.Run("InsertedAboveCap", func(t *testing.T) {
		r, _ := New(mustRule(t, backoff.Must(backoff.Fixed(time.Millisecond)), 2), quietErrors)
		w := testWorker(t, e, r)
		tx := e.tx(t)
		plain, err := river.NewClient(e.driver, &river.Config{Schema: e.schema, Logger: quietLogs})
		if err != nil {
			t.Fatal(err)
		}
		ins, err := plain.InsertTx(ctx, tx, scriptArgs{Mode: "fail"}, &river.InsertOpts{MaxAttempts: 50})
		if err != nil || ins.Job.MaxAttempts != 50 {
			t.Fatalf("insert: %v, max_attempts %d", err, ins.Job.MaxAttempts)
		}
		res, _ := w.WorkJob(ctx, t, tx, ins.Job)
		if res.Job.State == rivertype.JobStateDiscarded {
			t.Fatalf("attempt 1 of 2 discarded")
		}
		res, _ = w.WorkJob(ctx, t, tx, res.Job)
		if res.Job.State != rivertype.JobStateDiscarded || res.Job.Attempt != 2 {
			t.Fatalf("attempt %d: state %s, want discarded at attempt 2 (the rule's cap)", res.Job.Attempt, res.Job.State)
		}
		// Through the Retrier's own client the insert middleware stores the cap.
		res, _ = w.Work(ctx, t, tx, scriptArgs{Mode: "ok"}, &river.InsertOpts{MaxAttempts: 50})
		if res.Job.MaxAttempts != 2 {
			t.Fatalf("inserted through the middleware: max_attempts %d, want the rule's 2", res.Job.MaxAttempts)
		}
		if r.Pending() != 0 {
			t.Fatalf("Pending = %d, want 0", r.Pending())
		}
	})

	// A rule whose cap is above 32767, the largest attempt number
	// PostgreSQL stores (smallint), gives up at 32767 runs: a retry after
	// that run would make every later fetch of the queue fail with
	// "smallint out of range".
	t.Run("CapAboveSmallint", func(t *testing.T) {
		r, _ := New(mustRule(t, backoff.Must(backoff.Fixed(time.Millisecond)), 1<<20), quietErrors)
		w := testWorker(t, e, r)
		tx := e.tx(t)
		res, _ := w.Work(ctx, t, tx, scriptArgs{Mode: "ok"}, nil)
		if res.Job.MaxAttempts != math.MaxInt16 {
			t.Fatalf("inserted max_attempts %d, want 32767", res.Job.MaxAttempts)
		}
		ins, err := w.Work(ctx, t, tx, scriptArgs{Mode: "fail"}, nil)
		if err == nil || ins.Job.State == rivertype.JobStateDiscarded {
			t.Fatalf("attempt 1: %v, state %s; want a failure to retry", err, ins.Job.State)
		}
		e.setAttempt(t, tx, ins.Job.ID, math.MaxInt16-1)
		ins.Job.Attempt = math.MaxInt16 - 1
		res, _ = w.WorkJob(ctx, t, tx, ins.Job)
		if res.Job.Attempt != math.MaxInt16 || res.Job.State != rivertype.JobStateDiscarded {
			t.Fatalf("run 32767: attempt %d, state %s; want discarded at 32767", res.Job.Attempt, res.Job.State)
		}
		if r.Pending() != 0 {
			t.Fatalf("Pending = %d, want 0", r.Pending())
		}
	})

	t.Run("BrokenPolicy", func(t *testing.T) {
		broken, _ := backoff.NewRule(panicPolicy{}, 3)
		r, _ := New(broken, quietErrors, WithFallbackDelay(time.Hour))
		before := time.Now()
		res, _ := testWorker(t, e, r).Work(ctx, t, e.tx(t), scriptArgs{Mode: "fail"}, nil)
		if d := res.Job.ScheduledAt.Sub(before); d < time.Hour || d > time.Hour+2*time.Second {
			t.Fatalf("panicking policy: scheduled %v ahead, want the 1h fallback (not River's default)", d)
		}
	})

	t.Run("PanicRetried", func(t *testing.T) {
		r, _ := New(rule, quietErrors)
		res, err := testWorker(t, e, r).Work(ctx, t, e.tx(t), scriptArgs{Mode: "panic"}, nil)
		var pe *rivertest.PanicError
		if !errors.As(err, &pe) || res.Job.State != rivertype.JobStateRetryable {
			t.Fatalf("panic: err %v, state %s; want River's PanicError and retryable", err, res.Job.State)
		}
		if r.Pending() != 0 {
			t.Fatalf("Pending = %d, want 0", r.Pending())
		}
	})

	// The observer's Carrier writes job metadata that the next attempt reads.
	t.Run("CarrierPersists", func(t *testing.T) {
		o := &countingObserver{}
		r, _ := New(mustRule(t, backoff.Must(backoff.Fixed(time.Millisecond)), 5), quietErrors, WithObserver(o))
		w := testWorker(t, e, r)
		tx := e.tx(t)
		res, _ := w.Work(ctx, t, tx, scriptArgs{Mode: "fail"}, nil)
		res, _ = w.WorkJob(ctx, t, tx, res.Job)
		var md map[string]any
		if err := json.Unmarshal(res.Job.Metadata, &md); err != nil {
			t.Fatal(err)
		}
		if md["rebound_seen"] != "2" || o.lastSeen.Load() != 1 {
			t.Fatalf("metadata %v, observer read %d at attempt 2; want rebound_seen 2 and a read of 1", md, o.lastSeen.Load())
		}
		res, _ = w.Work(ctx, t, tx, scriptArgs{Mode: "ok"}, nil)
		md = nil
		if err := json.Unmarshal(res.Job.Metadata, &md); err != nil {
			t.Fatal(err)
		}
		if _, ok := md["rebound_late"]; ok || md["rebound_seen"] != "1" {
			t.Fatalf("metadata %v after a success: want rebound_seen 1 and no value Set after the worker returned", md)
		}
	})
}

// countingObserver counts attempts in the job's metadata through the Carrier.
type countingObserver struct{ lastSeen atomic.Int64 }

func (o *countingObserver) AttemptStarted(ctx context.Context, a observe.Attempt) context.Context {
	n, _ := strconv.Atoi(a.Carrier.Get("rebound_seen"))
	o.lastSeen.Store(int64(n))
	a.Carrier.Set("rebound_seen", strconv.Itoa(n+1))
	return ctx
}
func (o *countingObserver) AttemptEnded(_ context.Context, a observe.Attempt, _ observe.Result) {
	a.Carrier.Set("rebound_late", "1")
}

func TestRivertest(t *testing.T) {
	forBackends(t, rivertestMappings[pgxTx], rivertestMappings[sqlTx])
}

// Thousands of jobs through every terminal state leave no entry behind.
func cleanupAfterManyJobs[TTx any](t *testing.T, driver riverdriver.Driver[TTx], schema string) {
	const n = 1000
	modes := []string{"ok", "permanent", "cancel", "snooze", "fail", "fail-once", "panic"}
	r, _ := New(mustRule(t, backoff.Must(backoff.Fixed(time.Millisecond)), 2), quietErrors)
	workers := river.NewWorkers()
	river.AddWorker(workers, &scriptWorker{})
	cfg := clientConfig(t, r, schema, workers, 50, testPoll)
	cfg.Logger = quietLogs // the panics are deliberate
	client := startClient(t, driver, cfg)
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: scriptArgs{Mode: modes[i%len(modes)]}}
	}
	ctx := context.Background()
	if _, err := client.InsertMany(ctx, params); err != nil {
		t.Fatalf("InsertMany: %v", err)
	}
	waitTerminal(t, client, 2*time.Minute)
	counts := map[rivertype.JobState]int{}
	var cursor *river.JobListCursor
	for {
		p := river.NewJobListParams().First(500)
		if cursor != nil {
			p = p.After(cursor)
		}
		res, err := client.JobList(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range res.Jobs {
			counts[j.State]++
		}
		if len(res.Jobs) < 500 {
			break
		}
		cursor = res.LastCursor
	}
	per := n / len(modes) // every mode gets n/len or n/len+1 jobs
	if counts[rivertype.JobStateCompleted] < 3*per || counts[rivertype.JobStateCancelled] < 2*per || counts[rivertype.JobStateDiscarded] < 2*per {
		t.Fatalf("states %v, want completed (ok, snooze, fail-once), cancelled (permanent, cancel) and discarded (fail, panic)", counts)
	}
	if got := r.Pending(); got != 0 {
		t.Fatalf("Pending = %d after %d jobs reached %v, want 0", got, n, counts)
	}
}

func TestNoLeakAfterManyJobs(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		pool, schema := postgresDB(t)
		cleanupAfterManyJobs(t, riverpgxv5.New(pool), schema)
	})
	t.Run("sqlite", func(t *testing.T) {
		cleanupAfterManyJobs(t, riversqlite.New(sqliteDB(t)), "")
	})
}

// blockArgs jobs run until their context is done and return its error.
type blockArgs struct{}

func (blockArgs) Kind() string { return "rebound_block" }

type blockWorker struct {
	river.WorkerDefaults[blockArgs]
	running chan struct{} // receives once per run, when the run starts
}

func (w *blockWorker) Work(ctx context.Context, _ *river.Job[blockArgs]) error {
	select {
	case w.running <- struct{}{}:
	case <-ctx.Done():
	}
	<-ctx.Done()
	return ctx.Err()
}

// stopMidAttempt starts a client whose only job blocks until cancelled,
// stops the client with stop once the job runs, and returns the job as
// River left it and what the observer was told.
func stopMidAttempt[TTx any](t *testing.T, driver riverdriver.Driver[TTx], schema string,
	stop func(ctx context.Context, client *river.Client[TTx], cancelStart context.CancelFunc) error,
) (*rivertype.JobRow, []observe.Result, *Retrier) {
	t.Helper()
	o := &reboundtest.Recorder{}
	r, _ := New(mustRule(t, backoff.Must(backoff.Fixed(time.Hour)), 3), quietErrors, WithObserver(o))
	w := &blockWorker{running: make(chan struct{}, 1)}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, err := river.NewClient(driver, clientConfig(t, r, schema, workers, 1, testPoll))
	if err != nil {
		t.Fatalf("river.NewClient: %v", err)
	}
	ctx, cancelStart := context.WithCancel(context.Background())
	defer cancelStart()
	if err := client.Start(ctx); err != nil {
		t.Fatalf("client.Start: %v", err)
	}
	ins, err := client.Insert(context.Background(), blockArgs{}, nil)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	select {
	case <-w.running:
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not start within 30s")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := stop(sctx, client, cancelStart); err != nil {
		t.Fatalf("stopping the client: %v", err)
	}
	select {
	case <-client.Stopped():
	case <-sctx.Done():
		t.Fatal("the client did not stop within 30s")
	}
	job, err := client.JobGet(context.Background(), ins.Job.ID)
	if err != nil {
		t.Fatalf("JobGet: %v", err)
	}
	// The next client on this database must not find this job.
	if _, err := client.JobDelete(context.Background(), ins.Job.ID); err != nil {
		t.Fatalf("JobDelete: %v", err)
	}
	if len(started(o)) != 1 || started(o)[0].JobID != strconv.FormatInt(ins.Job.ID, 10) {
		t.Fatalf("observer saw %d attempts (%+v), want one of job %d", len(started(o)), started(o), ins.Job.ID)
	}
	return job, append([]observe.Result(nil), ended(o)...), r
}

// A client that stops while a job runs puts the job back without counting
// the attempt, and the observer hears an interrupted run, not a failure;
// when River does count the cancellation (the start context cancelled
// without StopAndCancel) the observer hears a retry, and NextRetry gets
// the rule's time.
func stopInterrupts[TTx any](t *testing.T, driver riverdriver.Driver[TTx], schema string) {
	t.Run("StopAndCancel", func(t *testing.T) {
		job, ended, r := stopMidAttempt(t, driver, schema, func(ctx context.Context, c *river.Client[TTx], _ context.CancelFunc) error {
			return c.StopAndCancel(ctx)
		})
		if job.State != rivertype.JobStateAvailable || job.Attempt != 0 || len(job.Errors) != 0 {
			t.Fatalf("job left %s at attempt %d with %d errors, want available at 0 with none (River's soft stop)", job.State, job.Attempt, len(job.Errors))
		}
		if len(ended) != 1 || ended[0].Counting != observe.Interrupted || ended[0].Outcome() != "interrupted" || !errors.Is(ended[0].Err, context.Canceled) {
			t.Fatalf("observer heard %+v, want one interrupted run with context.Canceled", ended)
		}
		if r.Pending() != 0 {
			t.Fatalf("Pending = %d, want 0", r.Pending())
		}
	})
	t.Run("StartContextCancelled", func(t *testing.T) {
		before := time.Now()
		job, ended, r := stopMidAttempt(t, driver, schema, func(_ context.Context, _ *river.Client[TTx], cancelStart context.CancelFunc) error {
			cancelStart()
			return nil
		})
		if len(ended) != 1 || ended[0].Counting != observe.Counted || ended[0].Outcome() != "retry" {
			t.Fatalf("observer heard %+v, want one counted retry", ended)
		}
		if job.State != rivertype.JobStateRetryable || job.Attempt != 1 || !job.ScheduledAt.Equal(ended[0].FireAt) || job.ScheduledAt.Before(before.Add(time.Hour)) {
			t.Fatalf("job left %s at attempt %d scheduled %v, want retryable at 1, scheduled at the reported %v (an hour on)",
				job.State, job.Attempt, job.ScheduledAt, ended[0].FireAt)
		}
		if r.Pending() != 0 {
			t.Fatalf("Pending = %d, want 0", r.Pending())
		}
	})
}

func TestStopInterrupts(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		pool, schema := postgresDB(t)
		stopInterrupts(t, riverpgxv5.New(pool), schema)
	})
	t.Run("sqlite", func(t *testing.T) {
		stopInterrupts(t, riversqlite.New(sqliteDB(t)), "")
	})
}
