package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/pgstore"
	"github.com/rebound-go/rebound/breaker/redisstore"
	"github.com/rebound-go/rebound/internal/testenv"
)

// fleet puts three dependencies' breakers into s at fake time t0: payments
// open after its second trip, search half-open with a probe running, and
// mail closed with two failures and a spent budget.
func fleet(t *testing.T, s breaker.Store, clock *time.Time) {
	t.Helper()
	ctx := context.Background()
	t0 := *clock
	step := func(d time.Duration) { *clock = t0.Add(d) }
	must := func(v breaker.Verdict, err error) breaker.Verdict {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	rec := func(dep string, tk breaker.Ticket, o breaker.Outcome) {
		t.Helper()
		if _, err := s.Record(ctx, dep, tk, o); err != nil {
			t.Fatal(err)
		}
	}
	rec("payments", breaker.Ticket{}, breaker.Failure)
	rec("search", breaker.Ticket{}, breaker.Failure)
	step(5 * time.Second)
	rec("payments", must(s.Allow(ctx, "payments", breaker.Job{Kind: breaker.Retry})).Ticket, breaker.Failure) // a failed probe: trip 2
	must(s.Allow(ctx, "search", breaker.Job{Kind: breaker.Fresh}))                                            // a probe, running
	for range 2 {
		rec("mail", must(s.Allow(ctx, "mail", breaker.Job{Kind: breaker.Fresh})).Ticket, breaker.Failure)
	}
	for range 3 {
		must(s.Allow(ctx, "mail", breaker.Job{Kind: breaker.Retry}))
	}
	step(6 * time.Second)
}

var fleetRules = breaker.Rules{
	Default: breaker.Must(breaker.Parse("breaker(failures=1, cooldown=exponential(5s, 1m), lease=30s)")),
	Named: map[string]breaker.Breaker{
		"mail": breaker.Must(breaker.Parse("breaker(failures=5, rate=50%, min=10, window=1m, cooldown=fixed(30s), budget=budget(10%, 1/s, 5))")),
	},
}

// TestBreakerRedisGolden lists a fleet's breakers from miniredis, whose
// clock the test sets, against a golden file.
func TestBreakerRedisGolden(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	fleet(t, redisstore.New(rdb, fleetRules, redisstore.Options{Prefix: "app", Now: func() time.Time { return clock }}), &clock)
	mr.SetTime(clock)
	out, errOut, code := rebound(t, "breaker", "-redis", "redis://"+mr.Addr(), "-prefix", "app")
	if code != exitOK || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	golden(t, "breaker.golden", out)
	out, _, _ = rebound(t, "breaker", "-redis", "redis://"+mr.Addr(), "-prefix", "other")
	if out != "no breakers (redis, prefix \"other\")\n" {
		t.Errorf("empty prefix printed %q", out)
	}
}

// TestBreakerRedis lists breakers a store wrote on the real Redis, on its
// clock.
func TestBreakerRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	// The fake clock runs 20s behind the server's, which the command
	// reads: the fleet's events are in its past.
	clock := time.Now().Add(-20 * time.Second)
	fleet(t, redisstore.New(rdb, fleetRules, redisstore.Options{Prefix: prefix, Now: func() time.Time { return clock }}), &clock)
	out, errOut, code := rebound(t, "breaker", "-redis", "redis://"+testenv.RedisAddr(), "-prefix", prefix)
	if code != exitOK || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"3 breakers", "mail        closed     2 (2/2)", "payments    open", "search      half-open", "budget=budget(10%, 1/s, 5)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBreakerPostgres lists breakers a store wrote to PostgreSQL.
func TestBreakerPostgres(t *testing.T) {
	pool := testenv.Postgres(t)
	schema := testenv.Schema(t, pool)
	if err := pgstore.Migrate(context.Background(), pool, schema); err != nil {
		t.Fatal(err)
	}
	// The fake clock runs 20s behind the server's, which the command
	// reads: the fleet's events are in its past.
	clock := time.Now().Add(-20 * time.Second)
	fleet(t, pgstore.New(pool, fleetRules, pgstore.Options{Schema: schema, Now: func() time.Time { return clock }}), &clock)
	out, errOut, code := rebound(t, "breaker", "-postgres", testenv.PostgresURL(), "-schema", schema)
	if code != exitOK || errOut != "" {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"3 breakers (postgres, schema", "mail        closed     2 (2/2)", "payments    open", "search      half-open", "payments: breaker(failures=1, cooldown=exponential(5s, 1m)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBreakerUsage(t *testing.T) {
	t.Setenv(envRedisURL, "")
	t.Setenv(envPostgresURL, "")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"breaker"}, exitUsage, "want one of -redis URL and -postgres URL"},
		{[]string{"breaker", "-redis", "redis://x", "-postgres", "postgres://y"}, exitUsage, "want exactly one of -redis URL and -postgres URL"},
		{[]string{"breaker", "-redis", "http://x"}, exitUsage, `-redis "http://x": `},
		{[]string{"breaker", "-redis", "redis://x", "extra"}, exitUsage, `got arguments ["extra"], want only flags`},
		{[]string{"breaker", "-redis", "redis://127.0.0.1:1", "-timeout", "2s"}, exitFail, "rebound breaker: redisstore: list"},
	} {
		out, errOut, code := rebound(t, tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: code %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
	out, _, code := rebound(t, "breaker", "-h")
	if code != exitOK || !strings.Contains(out, "-postgres URL") {
		t.Errorf("breaker -h: code %d:\n%s", code, out)
	}
}
