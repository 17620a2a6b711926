package bench

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	fscb "github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/memstore"
	"github.com/rebound-go/rebound/breaker/pgstore"
	"github.com/rebound-go/rebound/breaker/redisstore"
	"github.com/rebound-go/rebound/internal/testenv"
)

// The breaker benchmarks time what every job bound to a dependency costs
// while the dependency is healthy: one question before the run and one
// report after (a success), on a breaker that trips after 5 failures in a
// row or, in the rate rows, at 50% failures of at least 20 calls in 10s.
//
//   - core: rebound's pure transitions on a Circuit the caller owns, the
//     time passed in (no lock, no clock read);
//   - memstore: the same behind rebound's in-process Store (a mutex, a
//     map lookup, a clock read), the like-for-like peer of the others;
//   - gobreaker: sony/gobreaker v2's TwoStepCircuitBreaker, Allow then
//     done(nil);
//   - failsafe: failsafe-go's CircuitBreaker, TryAcquirePermit then
//     RecordSuccess.
//
// Every 10th report is a failure, so the counters move as they do in a
// live system but nothing trips.

var redisNil = redis.Nil

var (
	sinkVerdict breaker.Verdict
	sinkBool    bool
)

const dep = "payments"

func coreBreaker(rate bool) breaker.Breaker {
	if rate {
		return breaker.Must(breaker.Parse("breaker(rate=50%, min=20, window=10s, cooldown=exponential(5s, 5m))"))
	}
	return breaker.Must(breaker.Parse("breaker(failures=5, cooldown=exponential(5s, 5m))"))
}

func outcome(i int) breaker.Outcome {
	if i%10 == 9 {
		return breaker.Failure
	}
	return breaker.Success
}

func BenchmarkBreaker(b *testing.B) {
	for _, rate := range []bool{false, true} {
		name := "consecutive"
		if rate {
			name = "rate"
		}
		b.Run(name+"/core", func(b *testing.B) {
			br := coreBreaker(rate)
			var c breaker.Circuit
			now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			b.ReportAllocs()
			cpu := startCPU()
			for i := 0; b.Loop(); i++ {
				now = now.Add(time.Millisecond)
				v := br.Allow(&c, now, breaker.Fresh)
				br.Record(&c, dep, now, v.Ticket, outcome(i))
				sinkVerdict = v
			}
			cpu.stop(b)
		})
		b.Run(name+"/memstore", func(b *testing.B) {
			s := memstore.New(breaker.Rules{Default: coreBreaker(rate)}, memstore.Options{})
			ctx := context.Background()
			b.ReportAllocs()
			cpu := startCPU()
			for i := 0; b.Loop(); i++ {
				v, _ := s.Allow(ctx, dep, breaker.Job{Kind: breaker.Fresh})
				_, _ = s.Record(ctx, dep, v.Ticket, outcome(i))
				sinkVerdict = v
			}
			cpu.stop(b)
		})
		b.Run(name+"/gobreaker", func(b *testing.B) {
			st := gobreaker.Settings{Name: dep, Timeout: 5 * time.Second, ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 5 }}
			if rate {
				st.Interval, st.BucketPeriod = 10*time.Second, time.Second
				st.ReadyToTrip = func(c gobreaker.Counts) bool {
					return c.Requests >= 20 && c.TotalFailures*2 >= c.Requests
				}
			}
			cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](st)
			b.ReportAllocs()
			cpu := startCPU()
			for i := 0; b.Loop(); i++ {
				done, err := cb.Allow()
				if err != nil {
					b.Fatal(err)
				}
				if outcome(i) == breaker.Failure {
					done(errFailed)
				} else {
					done(nil)
				}
			}
			cpu.stop(b)
		})
		b.Run(name+"/failsafe", func(b *testing.B) {
			bl := fscb.NewBuilder[any]().WithDelay(5 * time.Second)
			if rate {
				bl = bl.WithFailureRateThreshold(0.5, 20, 10*time.Second)
			} else {
				bl = bl.WithFailureThreshold(5)
			}
			cb := bl.Build()
			b.ReportAllocs()
			cpu := startCPU()
			for i := 0; b.Loop(); i++ {
				if !cb.TryAcquirePermit() {
					b.Fatal("failsafe breaker refused a permit")
				}
				if outcome(i) == breaker.Failure {
					cb.RecordFailure()
				} else {
					cb.RecordSuccess()
				}
			}
			cpu.stop(b)
		})
	}
}

// BenchmarkBreakerTransitions times the core's other transitions alone:
// a full trip-probe-close cycle, a deferral while open, and the budget.
func BenchmarkBreakerTransitions(b *testing.B) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	b.Run("cycle", func(b *testing.B) {
		// One failure trips; the probe after the cool-down closes.
		br := breaker.Must(breaker.Parse("breaker(failures=1, cooldown=jitter(exponential(5s, 5m)))"))
		var c breaker.Circuit
		now := t0
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			br.Record(&c, dep, now, breaker.Ticket{}, breaker.Failure)
			now = time.UnixMilli(c.Until)
			v := br.Allow(&c, now, breaker.Retry)
			br.Record(&c, dep, now, v.Ticket, breaker.Success)
		}
		cpu.stop(b)
	})
	b.Run("deferOpen", func(b *testing.B) {
		br := breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1h))"))
		var c breaker.Circuit
		br.Record(&c, dep, t0, breaker.Ticket{}, breaker.Failure)
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			sinkVerdict = br.Allow(&c, t0, breaker.Retry)
		}
		cpu.stop(b)
	})
	b.Run("budgetTake", func(b *testing.B) {
		bud := breaker.MustBudget(breaker.ParseBudget("budget(10%, 5/s, 20)"))
		var tk breaker.Tokens
		now := t0
		b.ReportAllocs()
		cpu := startCPU()
		for b.Loop() {
			now = now.Add(time.Millisecond)
			sinkBool, _ = bud.Take(&tk, now)
		}
		cpu.stop(b)
	})
}

// BenchmarkBreakerStore times one job event's round trip on the shared
// stores: the question of a fresh run through a closed breaker (Allow, a
// read), a success report (Record, a write), and both (one job).
func BenchmarkBreakerStore(b *testing.B) {
	rules := breaker.Rules{Default: coreBreaker(false), Named: map[string]breaker.Breaker{
		"never-trips": breaker.Must(breaker.Parse("breaker(failures=9223372036854775807, cooldown=fixed(1s))")),
	}}
	stores := map[string]func(b *testing.B) breaker.Store{
		"redis": func(b *testing.B) breaker.Store {
			rdb := testenv.Redis(b)
			return redisstore.New(rdb, rules, redisstore.Options{Prefix: testenv.Prefix(b, rdb)})
		},
		"postgres": func(b *testing.B) breaker.Store {
			pool := testenv.Postgres(b)
			schema := testenv.Schema(b, pool)
			if err := pgstore.Migrate(context.Background(), pool, schema); err != nil {
				b.Fatal(err)
			}
			return pgstore.New(pool, rules, pgstore.Options{Schema: schema})
		},
	}
	ctx := context.Background()
	// The bare round trip of each server, for scale.
	b.Run("redis/ping", func(b *testing.B) {
		rdb := testenv.Redis(b)
		for b.Loop() {
			if err := rdb.Ping(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("postgres/select1", func(b *testing.B) {
		pool := testenv.Postgres(b)
		for b.Loop() {
			if _, err := pool.Exec(ctx, "SELECT 1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, name := range []string{"redis", "postgres"} {
		b.Run(name+"/allow", func(b *testing.B) {
			s := stores[name](b)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Allow(ctx, dep, breaker.Job{Kind: breaker.Fresh}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/record", func(b *testing.B) {
			// Failures, which always change the circuit (a write), on a
			// breaker that never trips.
			s := stores[name](b)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Record(ctx, "never-trips", breaker.Ticket{}, breaker.Failure); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/job", func(b *testing.B) {
			s := stores[name](b)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				v, err := s.Allow(ctx, dep, breaker.Job{Kind: breaker.Fresh})
				if err == nil {
					_, err = s.Record(ctx, dep, v.Ticket, outcome(i))
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBreakerRedisServer times the scripts where they run: on a
// private redis-server, it reports the server's own microseconds per
// script call (INFO commandstats), which the client's load does not
// touch, beside a GET for scale.
func BenchmarkBreakerRedisServer(b *testing.B) {
	ctx := context.Background()
	rules := breaker.Rules{Default: coreBreaker(false), Named: map[string]breaker.Breaker{
		"never-trips": breaker.Must(breaker.Parse("breaker(failures=9223372036854775807, cooldown=fixed(1s))")),
	}}
	for _, op := range []string{"get", "allow", "record"} {
		b.Run(op, func(b *testing.B) {
			rdb := privateRedis(b)
			s := redisstore.New(rdb, rules, redisstore.Options{})
			// Load the scripts, then count from zero.
			_, _ = s.Allow(ctx, dep, breaker.Job{Kind: breaker.Fresh})
			_, _ = s.Record(ctx, "never-trips", breaker.Ticket{}, breaker.Failure)
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				var err error
				switch op {
				case "get":
					err = rdb.Get(ctx, "nothing").Err()
					if errors.Is(err, redisNil) {
						err = nil
					}
				case "allow":
					_, err = s.Allow(ctx, dep, breaker.Job{Kind: breaker.Fresh})
				case "record":
					_, err = s.Record(ctx, "never-trips", breaker.Ticket{}, breaker.Failure)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			stats, err := rdb.Info(ctx, "commandstats").Result()
			if err != nil {
				b.Fatal(err)
			}
			cmd := "cmdstat_evalsha:"
			if op == "get" {
				cmd = "cmdstat_get:"
			}
			for _, line := range strings.Split(stats, "\n") {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), cmd); ok {
					for _, kv := range strings.Split(rest, ",") {
						if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
							f, _ := strconv.ParseFloat(v, 64)
							b.ReportMetric(f, "server-us/op")
						}
					}
				}
			}
		})
	}
}
