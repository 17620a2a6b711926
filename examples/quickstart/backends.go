package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/rebound-go/rebound/backoff"
)

// backends are the stores the engines run on, embedded or real.
type backends struct {
	redisDesc, sqlDesc string
	rdb                redis.UniversalClient
	// newRiver builds the River engine on the SQL store.
	newRiver func(rule backoff.Rule, rec *recorder) (engine, error)
	// closers run in reverse order when the run ends.
	closers []func()
}

func (b *backends) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// openBackends opens Redis (miniredis unless cfg.redisURL is set) and the
// SQL store for River (SQLite unless cfg.postgresURL is set). On a real
// server everything is created under cfg.namespace and removed by close.
func openBackends(ctx context.Context, cfg config, stderr io.Writer) (b *backends, err error) {
	b = &backends{}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	if err := b.openRedis(ctx, cfg); err != nil {
		return nil, err
	}
	if cfg.postgresURL != "" {
		err = b.openPostgres(ctx, cfg, stderr)
	} else {
		err = b.openSQLite(ctx, stderr)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (b *backends) openRedis(ctx context.Context, cfg config) error {
	if cfg.redisURL == "" {
		// In-process Redis: go-redis dials miniredis directly, no socket.
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true) // asynq relies on keys expiring
		c := redis.NewClient(&redis.Options{
			Addr:   "miniredis", // never dialled: Dialer connects in-process
			Dialer: func(context.Context, string, string) (net.Conn, error) { return m.Dial() },
		})
		b.rdb = c
		b.redisDesc = "miniredis (in-process)"
		b.closers = append(b.closers, func() { _ = c.Close(); m.Close() })
		return nil
	}
	opts, err := redis.ParseURL(cfg.redisURL)
	if err != nil {
		return fmt.Errorf("-redis %q: %w (want e.g. redis://127.0.0.1:6379/0)", cfg.redisURL, err)
	}
	c := redis.NewClient(opts)
	b.closers = append(b.closers, func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("-redis %s: %w", opts.Addr, err)
	}
	b.rdb = c
	b.redisDesc = fmt.Sprintf("Redis at %s (asynq queue and key prefix %s)", opts.Addr, cfg.namespace)
	b.closers = append(b.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		deleteKeys(ctx, c, "asynq:{"+cfg.namespace+"}*")
		c.SRem(ctx, "asynq:queues", cfg.namespace)
		deleteKeys(ctx, c, cfg.namespace+":*")
	})
	return nil
}

// deleteKeys deletes the keys matching pattern, best effort.
func deleteKeys(ctx context.Context, c redis.UniversalClient, pattern string) {
	iter := c.Scan(ctx, 0, pattern, 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		c.Del(ctx, keys[:n]...)
		keys = keys[n:]
	}
}

func (b *backends) openSQLite(ctx context.Context, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "rebound-quickstart-")
	if err != nil {
		return err
	}
	b.closers = append(b.closers, func() { _ = os.RemoveAll(dir) })
	// WAL and a busy timeout, and a single connection: SQLite has one
	// writer, and River's goroutines would otherwise meet SQLITE_BUSY.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "river.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return fmt.Errorf("open sqlite: %w", err)
	}
	db.SetMaxOpenConns(1)
	b.closers = append(b.closers, func() { _ = db.Close() })
	driver := riversqlite.New(db)
	if err := migrate(ctx, driver, ""); err != nil {
		return err
	}
	b.sqlDesc = "SQLite (temporary file)"
	b.newRiver = func(rule backoff.Rule, rec *recorder) (engine, error) {
		return newRiver(driver, "", rule, rec, stderr)
	}
	return nil
}

func (b *backends) openPostgres(ctx context.Context, cfg config, stderr io.Writer) error {
	pool, err := pgxpool.New(ctx, cfg.postgresURL)
	if err != nil {
		return fmt.Errorf("-postgres: %w (want e.g. postgres://user@127.0.0.1:5432/db)", err)
	}
	b.closers = append(b.closers, pool.Close)
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("-postgres: %w", err)
	}
	schema := cfg.namespace
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("-postgres: create schema %s: %w", schema, err)
	}
	b.closers = append(b.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	})
	driver := riverpgxv5.New(pool)
	if err := migrate(ctx, driver, schema); err != nil {
		return err
	}
	b.sqlDesc = fmt.Sprintf("PostgreSQL at %s (schema %s)", pool.Config().ConnConfig.Host, schema)
	b.newRiver = func(rule backoff.Rule, rec *recorder) (engine, error) {
		return newRiver(driver, schema, rule, rec, stderr)
	}
	return nil
}

// migrate brings River's tables up to date in schema ("" for the default).
func migrate[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], schema string) error {
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	return nil
}
