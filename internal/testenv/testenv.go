// Package testenv finds the real servers rebound's tests talk to and isolates
// each test on them.
//
// Tests reach Redis at REBOUND_REDIS_ADDR (default 127.0.0.1:6379) and
// PostgreSQL at REBOUND_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable). When a server
// does not answer, a test that needs it is skipped, so `go test ./...` passes
// on a machine without servers by running the embedded backends only. When
// REBOUND_REQUIRE_SERVERS is set to 1 (CI sets it), a missing server fails
// the test instead: CI never falls back silently.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// RequireServersEnv is the variable that turns a missing server into a test
// failure.
const RequireServersEnv = "REBOUND_REQUIRE_SERVERS"

// RequireServers reports whether a missing server must fail the test.
func RequireServers() bool { return os.Getenv(RequireServersEnv) == "1" }

// missing skips t, or fails it when servers are required. A skip is
// counted for the package's summary line (see [Main]).
func missing(t testing.TB, what string, err error) {
	t.Helper()
	if RequireServers() {
		t.Fatalf("%s is required (%s=1) but does not answer: %v", what, RequireServersEnv, err)
	}
	skipped.add(what, err)
	t.Skipf("%s does not answer (%v); set %s=1 to make this a failure", what, err, RequireServersEnv)
}

// RedisAddr returns the address of the real Redis server.
func RedisAddr() string {
	if a := os.Getenv("REBOUND_REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// PostgresURL returns the connection string of the real PostgreSQL server.
func PostgresURL() string {
	if u := os.Getenv("REBOUND_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// Redis returns a client of the real Redis server, closed when t ends, or
// skips t (fails it under REBOUND_REQUIRE_SERVERS=1) when Redis is down.
// Isolate the test's keys with [Prefix]; never FLUSHDB a shared database.
//
// Whether Redis answers is asked once per test process: when it does not,
// every later call skips at once, with the same reason.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	if err := redisDown(); err != nil {
		missing(t, "Redis at "+RedisAddr(), err)
	}
	c := redis.NewClient(&redis.Options{Addr: RedisAddr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Prefix returns a key prefix unique to t, made of letters, digits and
// dashes, such as "rbt-TestRetry-3f9a1c". Keys the test writes under it are
// deleted when t ends if c is not nil.
func Prefix(t testing.TB, c redis.UniversalClient) string {
	t.Helper()
	p := "rbt-" + Name(t, 24)
	if c != nil {
		t.Cleanup(func() { DeleteKeys(c, p+"*") })
	}
	return p
}

// DeleteKeys deletes every key matching pattern, on every master of a
// cluster. It is best effort: a test's cleanup must not fail the test.
func DeleteKeys(c redis.UniversalClient, pattern string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del := func(ctx context.Context, n redis.Cmdable) error {
		iter := n.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			n.Del(ctx, iter.Val())
		}
		return iter.Err()
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return del(ctx, m) })
		return
	}
	_ = del(ctx, c)
}

// Postgres returns a pool on the real PostgreSQL server, closed when t ends,
// or skips t (fails it under REBOUND_REQUIRE_SERVERS=1) when it is down.
//
// Whether PostgreSQL answers is asked once per test process, as for
// [Redis].
func Postgres(t testing.TB) *pgxpool.Pool {
	t.Helper()
	if err := postgresDown(); err != nil {
		missing(t, "PostgreSQL at "+PostgresURL(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, PostgresURL())
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		missing(t, "PostgreSQL at "+PostgresURL(), err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Schema creates a PostgreSQL schema unique to t, at most 45 characters long
// (River allows 46), and drops it, with all it holds, when t ends. Pass it to rivermigrate.Config and river.Config.
func Schema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	// River caps schema names at 46 characters: 4 + 32 + 1 + 8 = 45.
	name := "rbt_" + strings.ReplaceAll(strings.ToLower(Name(t, 32)), "-", "_")
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("create schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+name+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", name, err)
		}
	})
	return name
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9]+`)

// Name returns t's name reduced to letters, digits and dashes, cut to at most
// n characters, with a random suffix so parallel and repeated runs never
// share it.
func Name(t testing.TB, n int) string {
	base := strings.Trim(unsafeChars.ReplaceAllString(t.Name(), "-"), "-")
	if len(base) > n {
		base = base[len(base)-n:]
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%s", strings.Trim(base, "-"), hex.EncodeToString(b[:]))
}
