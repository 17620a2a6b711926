package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/pgstore"
	"github.com/rebound-go/rebound/internal/storetest"
	"github.com/rebound-go/rebound/internal/testenv"
)

func TestStore(t *testing.T) {
	pool := testenv.Postgres(t)
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		schema := testenv.Schema(t, pool)
		if err := pgstore.Migrate(context.Background(), pool, schema); err != nil {
			t.Fatal(err)
		}
		return func(rules breaker.Rules, now func() time.Time) breaker.Store {
			return pgstore.New(pool, rules, pgstore.Options{Schema: schema, Now: now})
		}
	})
}

// TestMigrate: the migration runs twice without harm, and a store without
// its table says so.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	pool := testenv.Postgres(t)
	schema := testenv.Schema(t, pool)
	rules := breaker.Rules{Default: breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1s))"))}
	_, err := pgstore.New(pool, rules, pgstore.Options{Schema: schema}).Allow(ctx, "payments", breaker.Job{Kind: breaker.Fresh})
	if !errors.Is(err, pgstore.ErrNoTable) {
		t.Fatalf("Allow before Migrate: %v, want ErrNoTable", err)
	}
	for range 2 {
		if err := pgstore.Migrate(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := pgstore.New(pool, rules, pgstore.Options{Schema: schema}).Allow(ctx, "payments", breaker.Job{Kind: breaker.Fresh}); err != nil || v.Decision != breaker.Run {
		t.Fatalf("Allow after Migrate: %v, %v; want run", v.Decision, err)
	}
}

// TestTimeoutOnAServerThatHangs: every call of the store returns within
// its own Timeout when the server accepts the connection and never
// answers.
func TestTimeoutOnAServerThatHangs(t *testing.T) {
	cfg, err := pgxpool.ParseConfig("postgres://test@" + storetest.Hanging(t) + "/test?connect_timeout=30")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	rules := breaker.Rules{Default: breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1s))"))}
	const timeout = 200 * time.Millisecond
	storetest.Bounded(t, pgstore.New(pool, rules, pgstore.Options{Timeout: timeout}), timeout, 10*time.Second)
}
