package reboundriver

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/pgstore"
	"github.com/rebound-go/rebound/internal/testenv"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// testPoll is the FetchPollInterval of the tests' clients: short, so retries
// due in milliseconds run promptly and the suite finishes fast.
const testPoll = 20 * time.Millisecond

// postgresDB returns a pool on the test server and a schema of its own,
// migrated for River and dropped when t ends.
func postgresDB(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	pool := testenv.Postgres(t)
	// River limits schema names to 46 characters; testenv.Schema builds its
	// name from the test's, which can be longer. A short stand-in name keeps
	// it within the limit and still unique (testenv adds a random suffix).
	schema := testenv.Schema(shortName{t}, pool)
	migrate(t, riverpgxv5.New(pool), schema)
	return pool, schema
}

// pgBreakerStore returns a breaker store on the test server, in a schema
// of its own, migrated, dropped when t ends.
func pgBreakerStore(t testing.TB, rules breaker.Rules) breaker.Store {
	t.Helper()
	pool := testenv.Postgres(t)
	schema := testenv.Schema(shortName{t}, pool)
	if err := pgstore.Migrate(context.Background(), pool, schema); err != nil {
		t.Fatalf("pgstore.Migrate: %v", err)
	}
	return pgstore.New(pool, rules, pgstore.Options{Schema: schema})
}

// shortName is t under a short name, for testenv.Schema.
type shortName struct{ testing.TB }

func (shortName) Name() string { return "river" }

// sqliteDB returns a migrated SQLite database in a temporary file, set up as
// River needs it: WAL, a busy timeout and a single connection.
func sqliteDB(t testing.TB) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "river.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	migrate(t, riversqlite.New(db), "")
	return db
}

// postgresDriver and sqliteDriver open a migrated database of their own
// for t, and return River's driver on it and the schema to use.
func postgresDriver(t testing.TB) (riverdriver.Driver[pgxTx], string) {
	pool, schema := postgresDB(t)
	return riverpgxv5.New(pool), schema
}

func sqliteDriver(t testing.TB) (riverdriver.Driver[sqlTx], string) {
	return riversqlite.New(sqliteDB(t)), ""
}

func migrate[TTx any](t testing.TB, driver riverdriver.Driver[TTx], schema string) {
	t.Helper()
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: quietLogs})
	if err != nil {
		t.Fatalf("rivermigrate.New: %v", err)
	}
	if _, err := m.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		t.Fatalf("migrate: %v", err)
	}
}

// warnWatch is a slog handler for River's logger that keeps the warnings
// River logs about retry policies, so a test can fail on any of them.
type warnWatch struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnWatch) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnWatch) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "etry policy") {
		w.mu.Lock()
		w.msgs = append(w.msgs, r.Message)
		w.mu.Unlock()
	}
	return nil
}
func (w *warnWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnWatch) WithGroup(string) slog.Handler      { return w }

// watchRetryWarnings returns a logger for River that fails t if River ever
// complains about the retry policy (a past or zero NextRetry makes River warn
// and fall back to its own policy).
func watchRetryWarnings(t testing.TB) *slog.Logger {
	w := &warnWatch{}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, m := range w.msgs {
			t.Errorf("River warned about the retry policy: %s", m)
		}
	})
	return slog.New(w)
}

// clientConfig is the River configuration the integration tests use: the
// Retrier plugged in as retry policy and middleware, as a user would.
func clientConfig(t testing.TB, r *Retrier, schema string, workers *river.Workers, maxWorkers int, poll time.Duration) *river.Config {
	return &river.Config{
		FetchCooldown:     min(poll, river.FetchCooldownDefault),
		FetchPollInterval: poll,
		Logger:            watchRetryWarnings(t),
		Middleware:        []rivertype.Middleware{r},
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		RetryPolicy:       r,
		Schema:            schema,
		Workers:           workers,
	}
}

// startClient starts a River client on driver and stops it when t ends.
func startClient[TTx any](t testing.TB, driver riverdriver.Driver[TTx], cfg *river.Config) *river.Client[TTx] {
	t.Helper()
	client, err := river.NewClient(driver, cfg)
	if err != nil {
		t.Fatalf("river.NewClient: %v", err)
	}
	if err := client.Start(context.Background()); err != nil {
		t.Fatalf("client.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := client.Stop(ctx); err != nil {
			t.Logf("client.Stop: %v", err)
		}
	})
	return client
}

// pgTx and sqliteTx begin a transaction rolled back when t ends, for
// rivertest.
func pgTx(t testing.TB, pool *pgxpool.Pool) pgx.Tx {
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

func sqliteTx(t testing.TB, db *sql.DB) *sql.Tx {
	tx, err := db.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	return tx
}

// waitTerminal waits until no job of client is left to run, or fails t.
func waitTerminal[TTx any](t testing.TB, client *river.Client[TTx], timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for {
		res, err := client.JobList(ctx, river.NewJobListParams().States(
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
			rivertype.JobStateRunning, rivertype.JobStateScheduled).First(1))
		if err != nil {
			t.Fatalf("JobList: %v", err)
		}
		if len(res.Jobs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			j := res.Jobs[0]
			t.Fatalf("job %d (%s) still %s after %v, attempt %d of %d", j.ID, j.Kind, j.State, timeout, j.Attempt, j.MaxAttempts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ended returns the results rec was told, of the attempts that ended, in
// the order they started.
func ended(rec *reboundtest.Recorder) []observe.Result {
	var out []observe.Result
	for _, e := range rec.Events() {
		if e.Ended {
			out = append(out, e.Result)
		}
	}
	return out
}

// started returns the attempts rec was told of, in the order they started.
func started(rec *reboundtest.Recorder) []observe.Attempt {
	var out []observe.Attempt
	for _, e := range rec.Events() {
		out = append(out, e.Attempt)
	}
	return out
}

// The transaction types of the two drivers.
type (
	pgxTx = pgx.Tx
	sqlTx = *sql.Tx
)
