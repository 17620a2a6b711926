// Command asynq runs an asynq server whose retries follow a rebound policy:
// one flaky task fails twice, then succeeds, and each attempt is printed.
//
//	go run ./examples/asynq                                   # in-process miniredis
//	go run ./examples/asynq -redis redis://127.0.0.1:6379/0   # a real Redis
//
// The integration is two lines, Config.RetryDelayFunc and mux.Use, and tasks
// built with the Retrier's NewTask.
package main

import (
	"context"
	"errors"
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
	"github.com/rebound-go/rebound/backoff"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "asynq example:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("asynq", flag.ContinueOnError)
	redisURL := fs.String("redis", "", "Redis `URL` (default: an in-process miniredis)")
	queue := fs.String("queue", "emails", "asynq `queue` to use")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rdb, closeRedis, err := openRedis(*redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()

	// One rule: the backoff curve and the attempts cap (5 runs in total).
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Parse("jitter(exponential(100ms, 2s))")), 5))
	retrier, err := reboundasynq.New(rule)
	if err != nil {
		return err
	}

	client := asynq.NewClientFromRedisClient(rdb)
	// NewTask: headers (precise mode and trace links ride in them) and the
	// rule's MaxRetry.
	info, err := client.EnqueueContext(ctx, retrier.NewTask("email:welcome", []byte("ada@example.com")),
		asynq.Queue(*queue))
	if err != nil {
		return err
	}
	// Jitter is keyed by the task ID, so the task's schedule is known now.
	fmt.Fprintf(out, "enqueued task %s, policy %s\n", info.ID, rule)
	for _, s := range backoff.Schedule(rule.Policy(), backoff.Key(info.ID), 2) {
		fmt.Fprintf(out, "  plan: retry after attempt %d waits %s\n", s.Attempt, s.Delay.Round(time.Millisecond))
	}

	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		RetryDelayFunc: retrier.RetryDelay, // rebound decides every retry delay
		Queues:         map[string]int{*queue: 1},
		// asynq polls every 1s and 5s by default; shorter for a quick demo.
		TaskCheckInterval:        100 * time.Millisecond,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		LogLevel:                 asynq.WarnLevel,
		ErrorHandler: asynq.ErrorHandlerFunc(func(_ context.Context, _ *asynq.Task, err error) {
			if d, fireAt, ok := reboundasynq.Decision(err); ok && d.Retry() {
				fmt.Fprintf(out, "  rebound: retry in %s, at %s (asynq fires on whole seconds)\n",
					d.Delay.Round(time.Millisecond), fireAt.Format("15:04:05.000"))
			}
		}),
	})
	mux := asynq.NewServeMux()
	mux.Use(retrier.Middleware) // numbers attempts, keys jitter by task ID, enforces the cap

	done := make(chan struct{})
	start := time.Now()
	mux.HandleFunc("email:welcome", func(ctx context.Context, t *asynq.Task) error {
		n, _ := asynq.GetRetryCount(ctx)
		attempt := n + 1
		if attempt <= 2 {
			fmt.Fprintf(out, "attempt %d at +%s: smtp: 421 try again later\n", attempt, since(start))
			return errors.New("smtp: 421 try again later")
		}
		fmt.Fprintf(out, "attempt %d at +%s: sent to %s\n", attempt, since(start), t.Payload())
		close(done)
		return nil
	})
	if err := srv.Start(mux); err != nil {
		return err
	}
	defer srv.Shutdown()

	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("task %s did not succeed: %w", info.ID, ctx.Err())
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

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
