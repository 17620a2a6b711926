// Command asynq shows a circuit breaker on asynq: a payment API is down for
// two seconds while twenty charges run. The breaker trips after three
// failures, holds the charges back without spending their retries (asynq
// retries them uncounted), probes the API, and once it is back releases
// the backlog at its retry budget's rate: every charge succeeds, none is
// exhausted, and the dead API gets a handful of calls.
//
//	go run ./examples/breaker/asynq                                  # in-process miniredis
//	go run ./examples/breaker/asynq -redis redis://127.0.0.1:6379/0  # a real Redis
//
// The breaker lives in Redis (breaker/redisstore), so every server sharing
// the queue shares it too. The server's IsFailure is the Retrier's, so
// that asynq does not count a deferred run; and the Retrier is precise
// (WithPrecise): asynq stores retry times in whole seconds, precise mode
// keeps the deferrals' exact times in a task header.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	reboundasynq "github.com/rebound-go/rebound/adapters/asynq"
	"github.com/rebound-go/rebound/breaker/redisstore"
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

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("asynq", flag.ContinueOnError)
	redisURL := fs.String("redis", "", "Redis `URL` (default: an in-process miniredis)")
	queue := fs.String("queue", "payments", "asynq `queue` to use")
	prefix := fs.String("prefix", redisstore.DefaultPrefix, "key `prefix` of the breaker")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rdb, closeRedis, err := openRedis(*redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()

	store := redisstore.New(rdb, outage.Rules(), redisstore.Options{Prefix: *prefix})
	api := &outage.API{}
	watch := outage.NewWatcher(out)
	retrier, err := reboundasynq.New(outage.Rule,
		reboundasynq.WithObserver(watch),
		reboundasynq.WithBreaker(store),
		reboundasynq.WithDependency("payment:charge", outage.Dependency), // charges need the payment API
		reboundasynq.WithPrecise(),
	)
	if err != nil {
		return err
	}
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		RetryDelayFunc: retrier.RetryDelay,
		IsFailure:      retrier.IsFailure, // a run the breaker deferred spends no retry
		Queues:         map[string]int{*queue: 1},
		Concurrency:    20,
		// asynq polls every 1s and 5s by default; shorter for a quick demo.
		TaskCheckInterval:        100 * time.Millisecond,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		LogLevel:                 asynq.WarnLevel,
	})
	mux := asynq.NewServeMux()
	mux.Use(retrier.Middleware)
	mux.HandleFunc("payment:charge", func(ctx context.Context, _ *asynq.Task) error {
		return api.Charge(ctx)
	})

	api.Start(out)
	client := asynq.NewClientFromRedisClient(rdb)
	for i := range outage.Jobs {
		// NewTask: headers (precise mode rides in them) and room in
		// MaxRetry for a deferral on every attempt.
		task := retrier.NewTask("payment:charge", fmt.Appendf(nil, "order-%d", i+1))
		if _, err := client.EnqueueContext(ctx, task, asynq.Queue(*queue)); err != nil {
			return err
		}
	}
	if err := srv.Start(mux); err != nil {
		return err
	}
	defer srv.Shutdown()
	return watch.Finish(ctx, api)
}

// openRedis connects to url, or to an in-process miniredis when url is empty.
func openRedis(url string) (*redis.Client, func(), error) {
	if url != "" {
		opts, err := redis.ParseURL(url)
		if err != nil {
			return nil, nil, err
		}
		c := redis.NewClient(opts)
		return c, func() { _ = c.Close() }, nil
	}
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true) // asynq relies on keys expiring
	c := redis.NewClient(&redis.Options{
		Addr:   "miniredis", // never dialled: the Dialer connects in-process
		Dialer: func(context.Context, string, string) (net.Conn, error) { return m.Dial() },
	})
	return c, func() { _ = c.Close(); m.Close() }, nil
}
