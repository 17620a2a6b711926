package reboundriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/conformance"
)

// confArgs is the job the conformance suite enqueues.
type confArgs struct {
	Payload []byte `json:"payload"`
}

func (confArgs) Kind() string { return "rebound_conformance" }

// confWorker hands each attempt to the suite's handler.
type confWorker struct {
	river.WorkerDefaults[confArgs]
	handler func(context.Context, conformance.Job) error
}

func (w *confWorker) Work(ctx context.Context, job *river.Job[confArgs]) error {
	return w.handler(ctx, conformance.Job{ID: strconv.FormatInt(job.ID, 10), Attempt: job.Attempt, Payload: job.Args.Payload})
}

// harness runs the conformance suite on one River backend.
type harness struct {
	name   string
	limits conformance.Limits
	poll   time.Duration
	// client starts a River client with cfg on a fresh database.
	client func(t testing.TB, cfg func(schema string) *river.Config) conformance.Engine
}

func (h *harness) Name() string               { return h.name }
func (h *harness) Limits() conformance.Limits { return h.limits }

// Start starts a client with its own database (a schema on PostgreSQL, a
// file on SQLite), the Retrier plugged in as a user would.
func (h *harness) Start(t testing.TB, cfg conformance.Config) conformance.Engine {
	r, err := New(cfg.Rule, WithLogger(quietLogs))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &confWorker{handler: cfg.Handler})
	return h.client(t, func(schema string) *river.Config {
		return clientConfig(t, r, schema, workers, 100, h.poll)
	})
}

// HookDelay runs one attempt through the Retrier's middleware and then does
// what River's executor does with the result: a JobCancel error or an
// attempt at MaxAttempts ends the job, anything else asks NextRetry.
func (h *harness) HookDelay(cfg conformance.Config, id string, attempt int, err error) (time.Duration, bool) {
	r, rerr := New(cfg.Rule, WithLogger(quietLogs))
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

// engine enqueues on a running client.
type engine struct {
	insert func(ctx context.Context, args river.JobArgs) (*rivertype.JobInsertResult, error)
	get    func(ctx context.Context, id int64) (*rivertype.JobRow, error)
}

func (e engine) Enqueue(ctx context.Context, payload []byte) (string, error) {
	res, err := e.insert(ctx, confArgs{Payload: payload})
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(res.Job.ID, 10), nil
}

func (e engine) State(ctx context.Context, id string) (conformance.State, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return conformance.StatePending, fmt.Errorf("job ID %q is not an int64: %w", id, err)
	}
	job, err := e.get(ctx, n)
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

func postgresHarness(poll, lateness time.Duration) *harness {
	return &harness{
		name:   "river/postgres",
		limits: conformance.Limits{Resolution: Resolution, Lateness: lateness},
		poll:   poll,
		client: func(t testing.TB, cfg func(string) *river.Config) conformance.Engine {
			pool, schema := postgresDB(t)
			c := startClient(t, riverpgxv5.New(pool), cfg(schema))
			return engine{
				insert: func(ctx context.Context, a river.JobArgs) (*rivertype.JobInsertResult, error) {
					return c.Insert(ctx, a, nil)
				},
				get: c.JobGet,
			}
		},
	}
}

func sqliteHarness(poll, lateness time.Duration) *harness {
	return &harness{
		name:   "river/sqlite",
		limits: conformance.Limits{Resolution: Resolution, Lateness: lateness},
		poll:   poll,
		client: func(t testing.TB, cfg func(string) *river.Config) conformance.Engine {
			db := sqliteDB(t)
			c := startClient(t, riversqlite.New(db), cfg(""))
			return engine{
				insert: func(ctx context.Context, a river.JobArgs) (*rivertype.JobInsertResult, error) {
					return c.Insert(ctx, a, nil)
				},
				get: c.JobGet,
			}
		},
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

// TestConformanceSQLite runs the suite on SQLite. Under the race detector the
// pure-Go SQLite driver is an order of magnitude slower and retries on a
// shared 2-core machine ran up to 6 s late, which says nothing about the
// adapter; there the test skips unless REBOUND_RIVER_SQLITE_RACE=1. Run it
// without -race (CI: a separate step) for the real check.
func TestConformanceSQLite(t *testing.T) {
	if raceEnabled && os.Getenv("REBOUND_RIVER_SQLITE_RACE") != "1" {
		t.Skip("SQLite conformance timing is meaningless under -race; run without -race or set REBOUND_RIVER_SQLITE_RACE=1")
	}
	conformance.Run(t, sqliteHarness(testPoll, sqliteLateness))
}
