package reboundrivertest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite"

	"github.com/rebound-go/rebound/adapters/river/reboundrivertest"
	"github.com/rebound-go/rebound/backoff"
)

// SyncArgs is a job that syncs an account with a flaky partner API.
type SyncArgs struct {
	Account int `json:"account"`
}

func (SyncArgs) Kind() string { return "sync_account" }

// SyncWorker fails twice, then syncs.
type SyncWorker struct {
	river.WorkerDefaults[SyncArgs]
}

func (w *SyncWorker) Work(_ context.Context, job *river.Job[SyncArgs]) error {
	if job.Attempt < 3 {
		return errors.New("partner API: 503")
	}
	return nil
}

// A test of the worker's retry story: each attempt runs through River's
// executor at once, the clock jumps to each retry's fire time, and the
// story is what the Retrier reported. In a real test, t comes from the
// test function and the transaction from the test's database.
func Example() {
	t := &testing.T{} // your test's *testing.T
	ctx := context.Background()
	tx, done := sqliteTx()
	defer done()

	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Exponential(time.Second, time.Minute)), 5))
	w := reboundrivertest.NewWorker(t, riversqlite.New(nil), &river.Config{Logger: slog.New(slog.DiscardHandler)}, &SyncWorker{}, rule)
	start := w.Clock.Now()

	res, err := w.Work(ctx, t, tx, SyncArgs{Account: 42}, nil)
	fmt.Printf("attempt %d: %v; next run %v later\n", res.Event.Attempt.Number, err, res.NextRun().Sub(start))
	res, _ = w.WorkJob(ctx, t, tx, res.Job) // at its fire time, without sleeping
	fmt.Printf("attempt %d: next run %v after the first\n", res.Event.Attempt.Number, res.NextRun().Sub(start))
	res, _ = w.WorkJob(ctx, t, tx, res.Job)
	fmt.Printf("attempt %d: %s\n", res.Event.Attempt.Number, res.Job.State)
	fmt.Println(w.Recorder.Story(res.Event.Attempt.JobID))
	// Output:
	// attempt 1: partner API: 503; next run 1s later
	// attempt 2: next run 3s after the first
	// attempt 3: completed
	// 1 retry 1s
	// 2 retry 2s
	// 3 success
}

// sqliteTx opens a migrated SQLite database in a temporary directory and
// begins a transaction; done rolls it back and removes the database.
func sqliteTx() (*sql.Tx, func()) {
	dir, err := os.MkdirTemp("", "reboundrivertest-")
	if err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "river.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		log.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	m, err := rivermigrate.New(riversqlite.New(db), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := m.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		log.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		log.Fatal(err)
	}
	return tx, func() {
		_ = tx.Rollback()
		_ = db.Close()
		_ = os.RemoveAll(dir)
	}
}
