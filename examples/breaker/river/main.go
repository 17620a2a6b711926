// Command river shows a circuit breaker on River: a payment API is down
// for two seconds while twenty charges run. The breaker trips after three
// failures, snoozes the charges without spending their attempts, probes
// the API, and once it is back releases the backlog at its retry budget's
// rate: every charge succeeds, none is exhausted, and the dead API gets a
// handful of calls.
//
//	go run ./examples/breaker/river                                      # SQLite, breaker in memory
//	go run ./examples/breaker/river -postgres postgres://localhost/mydb  # PostgreSQL, breaker in a table
//
// On PostgreSQL the breaker lives in a table beside River's
// (breaker/pgstore), so every client shares it.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite"

	reboundriver "github.com/rebound-go/rebound/adapters/river"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/memstore"
	"github.com/rebound-go/rebound/breaker/pgstore"
	"github.com/rebound-go/rebound/examples/breaker/internal/outage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "breaker example:", err)
		os.Exit(1)
	}
}

// ChargeArgs is a charge through the payment API.
type ChargeArgs struct {
	Order string `json:"order"`
}

// Kind implements river.JobArgs.
func (ChargeArgs) Kind() string { return "charge" }

// ChargeWorker charges through the payment API.
type ChargeWorker struct {
	river.WorkerDefaults[ChargeArgs]
	api *outage.API
}

// Work implements river.Worker.
func (w *ChargeWorker) Work(ctx context.Context, _ *river.Job[ChargeArgs]) error {
	return w.api.Charge(ctx)
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("river", flag.ContinueOnError)
	postgresURL := fs.String("postgres", "", "PostgreSQL `URL` (default: SQLite in a temporary file)")
	schema := fs.String("schema", "", "PostgreSQL `schema` for River's and the breaker's tables (default: the search path)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *postgresURL != "" {
		pool, err := pgxpool.New(ctx, *postgresURL)
		if err != nil {
			return err
		}
		defer pool.Close()
		// The breaker's table sits beside River's, migrated alike.
		if err := pgstore.Migrate(ctx, pool, *schema); err != nil {
			return err
		}
		store := pgstore.New(pool, outage.Rules(), pgstore.Options{Schema: *schema})
		return charge(ctx, riverpgxv5.New(pool), *schema, store, out)
	}
	dir, err := os.MkdirTemp("", "rebound-breaker-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// SQLite wants WAL, a busy timeout and one connection under River.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "river.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// One process on one file: the breaker can live in its memory.
	return charge(ctx, riversqlite.New(db), "", memstore.New(outage.Rules(), memstore.Options{}), out)
}

// charge migrates the database, inserts the charges and runs River until
// every one has ended.
func charge[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], schema string, store breaker.Store, out io.Writer) error {
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	api := &outage.API{}
	watch := outage.NewWatcher(out)
	retrier, err := reboundriver.New(outage.Rule,
		reboundriver.WithObserver(watch),
		reboundriver.WithBreaker(store),
		reboundriver.WithDependency(ChargeArgs{}.Kind(), outage.Dependency), // charges need the payment API
	)
	if err != nil {
		return err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &ChargeWorker{api: api})
	client, err := river.NewClient(driver, &river.Config{
		RetryPolicy: retrier,
		Plugins:     []rivertype.Plugin{retrier},
		Queues:      map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 20}},
		Schema:      schema,
		Workers:     workers,
		// River polls every second by default; shorter for a quick demo.
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     50 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	api.Start(out)
	params := make([]river.InsertManyParams, outage.Jobs)
	for i := range params {
		params[i] = river.InsertManyParams{Args: ChargeArgs{Order: fmt.Sprint("order-", i+1)}}
	}
	if _, err := client.InsertMany(ctx, params); err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()
	return watch.Finish(ctx, api)
}
