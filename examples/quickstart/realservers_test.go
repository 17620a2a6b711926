package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/rebound-go/rebound/internal/testenv"
)

// TestQuickstartRealServers runs the quickstart against the real Redis and
// PostgreSQL, as -redis and -postgres do, and checks the same table and that
// nothing is left behind. It is skipped without servers, and fails under
// REBOUND_REQUIRE_SERVERS=1.
func TestQuickstartRealServers(t *testing.T) {
	rdb := testenv.Redis(t)
	pool := testenv.Postgres(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	ns := "rbt_quickstart_" + hex.EncodeToString(b[:])

	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"-redis", "redis://" + testenv.RedisAddr(), "-postgres", testenv.PostgresURL(), "-namespace", ns}
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	t.Log("\n" + stdout.String())
	if stderr.Len() > 0 {
		t.Errorf("stderr is not empty:\n%s", &stderr)
	}
	checkTable(t, stdout.String(), 5, []string{"asynq", "river", "native"})

	// Cleaned up: no keys under the queue or the prefix, no schema.
	for _, pattern := range []string{"asynq:{" + ns + "}*", ns + ":*"} {
		keys, err := rdb.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			t.Errorf("keys left behind under %s: %v", pattern, keys)
			testenv.DeleteKeys(rdb, pattern)
		}
	}
	if ok, _ := rdb.SIsMember(ctx, "asynq:queues", ns).Result(); ok {
		t.Errorf("asynq queue %s left registered", ns)
		rdb.SRem(ctx, "asynq:queues", ns)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", ns).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("schema %s left behind", ns)
		_, _ = pool.Exec(ctx, "DROP SCHEMA "+ns+" CASCADE")
	}
}
