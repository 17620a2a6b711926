package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/redisstore"
	"github.com/rebound-go/rebound/internal/storetest"
	"github.com/rebound-go/rebound/internal/testenv"
)

// backendOn makes clients of one store under a fresh key prefix on rdb.
func backendOn(t *testing.T, rdb redis.UniversalClient) storetest.Backend {
	prefix := testenv.Prefix(t, rdb)
	return func(rules breaker.Rules, now func() time.Time) breaker.Store {
		return redisstore.New(rdb, rules, redisstore.Options{Prefix: prefix, Now: now})
	}
}

func TestStoreRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	storetest.Run(t, func(t *testing.T) storetest.Backend { return backendOn(t, rdb) })
}

func TestStoreMiniredis(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	storetest.Run(t, func(t *testing.T) storetest.Backend { return backendOn(t, rdb) })
}

func TestStoreCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	cc := testenv.Cluster(t)
	storetest.Run(t, func(t *testing.T) storetest.Backend { return backendOn(t, cc) })

	// Dependencies land on different masters, each wholly on one, and
	// List finds them all.
	ctx := context.Background()
	prefix := testenv.Prefix(t, cc)
	s := redisstore.New(cc, breaker.Rules{Default: breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1m))"))}, redisstore.Options{Prefix: prefix})
	slots := map[int64]bool{}
	deps := []string{"payments", "search", "mail", "geo", "ledger", "fx"}
	for _, dep := range deps {
		if _, err := s.Record(ctx, dep, breaker.Ticket{}, breaker.Failure); err != nil {
			t.Fatal(err)
		}
		slots[cc.ClusterKeySlot(ctx, redisstore.Key(prefix, dep)).Val()/5462] = true
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != len(deps) {
		t.Fatalf("List = %d statuses, %v; want %d", len(list), err, len(deps))
	}
	for _, st := range list {
		if st.State != breaker.Open {
			t.Errorf("%s is %v, want open", st.Dependency, st.State)
		}
	}
	if len(slots) < 2 {
		t.Errorf("%d dependencies all on one master; want them spread", len(deps))
	}
}

// TestTimeoutOnAServerThatHangs: every call of the store returns within
// its own Timeout when Redis accepts the connection and never answers,
// although the client would wait 30s (its ReadTimeout; go-redis does not
// honour a context's deadline unless told to).
func TestTimeoutOnAServerThatHangs(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: storetest.Hanging(t), ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	rules := breaker.Rules{Default: breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1s))"))}
	const timeout = 200 * time.Millisecond
	storetest.Bounded(t, redisstore.New(rdb, rules, redisstore.Options{Timeout: timeout}), timeout, 10*time.Second)
}
