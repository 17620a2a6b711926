package testenv

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// The first test to ask for a server finds out whether it answers; the
// answer holds for the whole process, so that with no server each skip
// is immediate instead of a dial's retries and timeouts per test.
var (
	redisOnce   sync.Once
	redisClient *redis.Client // shared by PingRedis; nil when Redis is down
	redisErr    error

	pgOnce sync.Once
	pgPool *pgxpool.Pool // shared by PingPostgres; nil when PostgreSQL is down
	pgErr  error
)

// redisDown returns why Redis does not answer, or nil, asking once.
func redisDown() error {
	redisOnce.Do(func() {
		c := redis.NewClient(&redis.Options{Addr: RedisAddr(), MaxRetries: -1, DialTimeout: 2 * time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if redisErr = c.Ping(ctx).Err(); redisErr != nil {
			_ = c.Close()
			return
		}
		redisClient = c
	})
	return redisErr
}

// postgresDown returns why PostgreSQL does not answer, or nil, asking once.
func postgresDown() error {
	pgOnce.Do(func() {
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
			pgErr = err
			return
		}
		pgPool = pool
	})
	return pgErr
}

// PingRedis makes one round trip (PING) to the real Redis on a client the
// process shares, for a test that measures how long the server takes to
// answer right now (a lateness witness's probe). It returns the cached
// reason when Redis does not answer.
func PingRedis(ctx context.Context) error {
	if err := redisDown(); err != nil {
		return err
	}
	return redisClient.Ping(ctx).Err()
}

// PingPostgres makes one round trip to the real PostgreSQL on a pool the
// process shares, as [PingRedis] does for Redis.
func PingPostgres(ctx context.Context) error {
	if err := postgresDown(); err != nil {
		return err
	}
	return pgPool.Ping(ctx)
}

// skipLedger counts the tests skipped for want of each server.
type skipLedger struct {
	mu     sync.Mutex
	counts map[string]int
	why    map[string]string
}

var skipped skipLedger

func (l *skipLedger) add(what string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts, l.why = map[string]int{}, map[string]string{}
	}
	l.counts[what]++
	if _, ok := l.why[what]; !ok {
		l.why[what] = fmt.Sprint(err)
	}
}

// Summary returns one line saying how many tests of this process skipped
// for want of which server and why, or "" when none did.
func Summary() string {
	skipped.mu.Lock()
	defer skipped.mu.Unlock()
	if len(skipped.counts) == 0 {
		return ""
	}
	whats := make([]string, 0, len(skipped.counts))
	total := 0
	for w, n := range skipped.counts {
		whats = append(whats, w)
		total += n
	}
	sort.Strings(whats)
	parts := make([]string, len(whats))
	for i, w := range whats {
		verb := "need"
		if skipped.counts[w] == 1 {
			verb = "needs"
		}
		parts[i] = fmt.Sprintf("%d %s %s, which does not answer (%s)", skipped.counts[w], verb, w, skipped.why[w])
	}
	test := "tests"
	if total == 1 {
		test = "test"
	}
	return fmt.Sprintf("testenv: skipped %d %s: %s; start the servers (docs/testing.md) or set %s=1 to make this a failure",
		total, test, strings.Join(parts, "; "), RequireServersEnv)
}

// Main runs the package's tests, then prints [Summary] when tests were
// skipped for want of a server, and exits with the tests' status. A
// package whose tests use this one calls it from TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if s := Summary(); s != "" {
		fmt.Println(s)
	}
	os.Exit(code)
}
