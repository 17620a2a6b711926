// Command native shows a circuit breaker on rebound's own Redis queue: a
// payment API is down for two seconds while twenty charges run. The
// breaker trips after three failures, holds the charges back without
// spending their attempts, probes the API, and once it is back releases
// the backlog at its retry budget's rate: every charge succeeds, none is
// exhausted, and the dead API gets a handful of calls.
//
//	go run ./examples/breaker/native                                  # in-process miniredis
//	go run ./examples/breaker/native -redis redis://127.0.0.1:6379/0  # a real Redis
//
// The breaker lives in Redis (breaker/redisstore), so every worker process
// sharing the queue shares it too.
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
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
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
	fs := flag.NewFlagSet("native", flag.ContinueOnError)
	redisURL := fs.String("redis", "", "Redis `URL` (default: an in-process miniredis)")
	queueName := fs.String("queue", "payments", "`name` of the queue")
	prefix := fs.String("prefix", native.DefaultPrefix, "key `prefix` of the queue and the breaker")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rdb, closeRedis, err := openRedis(*redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()

	// The breaker's state lives in Redis, one hash per dependency.
	store := redisstore.New(rdb, outage.Rules(), redisstore.Options{Prefix: *prefix})
	queue, err := native.NewQueue(rdb, *queueName, native.WithPrefix(*prefix))
	if err != nil {
		return err
	}
	api := &outage.API{}
	watch := outage.NewWatcher(out)
	worker, err := native.NewWorker(queue, outage.Rule, func(ctx context.Context, _ *native.Job) error {
		return api.Charge(ctx)
	},
		native.WithConcurrency(20),
		native.WithObserver(watch),
		native.WithBreaker(store),
		native.WithDependency("charge", outage.Dependency), // jobs named "charge" need the payment API
	)
	if err != nil {
		return err
	}
	api.Start(out)
	for range outage.Jobs {
		if _, err := queue.Enqueue(ctx, []byte("order"), native.WithName("charge")); err != nil {
			return err
		}
	}
	if err := worker.Start(); err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = worker.Shutdown(stopCtx)
	}()
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
	c := redis.NewClient(&redis.Options{
		Addr:   "miniredis", // never dialled: the Dialer connects in-process
		Dialer: func(context.Context, string, string) (net.Conn, error) { return m.Dial() },
	})
	return c, func() { _ = c.Close(); m.Close() }, nil
}
