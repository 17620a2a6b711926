package bench

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	reboundriver "github.com/rebound-go/rebound/adapters/river"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
)

// riverPoolConns is the pool size River runs on in the benchmarks: room for
// its fetches, completer and notifier beside 32 workers.
const riverPoolConns = 16

// quietLogger drops River's log output.
var quietLogger = slog.New(slog.DiscardHandler)

// riverSchemaName gives testenv.Schema a short name: River accepts schema
// names of at most 46 characters, and testenv builds one from the
// benchmark's full name (it still adds a random suffix).
type riverSchemaName struct{ testing.TB }

func (riverSchemaName) Name() string { return "bench" }

// riverPostgres returns a pool on the real PostgreSQL server and a schema
// of its own, migrated for River; both go when b ends.
func riverPostgres(b *testing.B) (*pgxpool.Pool, string) {
	b.Helper()
	admin := testenv.Postgres(b) // skips, or fails under REBOUND_REQUIRE_SERVERS=1
	schema := testenv.Schema(riverSchemaName{b}, admin)
	cfg, err := pgxpool.ParseConfig(testenv.PostgresURL())
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = riverPoolConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	m, err := rivermigrate.New(riverDriver(pool), &rivermigrate.Config{Schema: schema, Logger: quietLogger})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		b.Fatalf("migrate River into schema %s: %v", schema, err)
	}
	return pool, schema
}

// riverPoll is River's fetch tuning of one run; zero fields keep River's
// defaults (FetchPollInterval 1s, FetchCooldown 100ms).
type riverPoll struct {
	name           string
	poll, cooldown time.Duration
}

// startRiver starts a River client on pool and schema with rule applied by
// the rebound Retrier (as RetryPolicy and Middleware), maxWorkers workers
// on the default queue, and stops it when b ends.
func startRiver(b *testing.B, pool *pgxpool.Pool, schema string, rule backoff.Rule, workers *river.Workers, maxWorkers int, p riverPoll) *river.Client[pgx.Tx] {
	b.Helper()
	retrier, err := reboundriver.New(rule, reboundriver.WithErrorHandler(func(error) {}))
	if err != nil {
		b.Fatal(err)
	}
	client, err := river.NewClient(riverDriver(pool), &river.Config{
		FetchCooldown:     p.cooldown,
		FetchPollInterval: p.poll,
		Logger:            quietLogger,
		Middleware:        []rivertype.Middleware{retrier},
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}},
		RetryPolicy:       retrier,
		Schema:            schema,
		Workers:           workers,
	})
	if err != nil {
		b.Fatalf("river.NewClient: %v", err)
	}
	if err := client.Start(context.Background()); err != nil {
		b.Fatalf("start River: %v", err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.Stop(ctx)
	})
	return client
}

// riverDriver is River's driver for pgx v5 on pool.
func riverDriver(pool *pgxpool.Pool) *riverpgxv5.Driver { return riverpgxv5.New(pool) }
