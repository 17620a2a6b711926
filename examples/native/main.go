// Command native runs rebound's own Redis job queue: one flaky job fails
// twice, then succeeds, and each attempt is printed.
//
//	go run ./examples/native                                   # in-process miniredis
//	go run ./examples/native -redis redis://127.0.0.1:6379/0   # a real Redis
//
// The rule goes straight into the worker: native.NewWorker(queue, rule, handler).
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
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "native example:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("native", flag.ContinueOnError)
	redisURL := fs.String("redis", "", "Redis `URL` (default: an in-process miniredis)")
	queueName := fs.String("queue", "emails", "`name` of the queue")
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

	queue, err := native.NewQueue(rdb, *queueName)
	if err != nil {
		return err
	}
	id, err := queue.Enqueue(ctx, []byte("ada@example.com"), native.WithName("welcome_email"))
	if err != nil {
		return err
	}
	// Jitter is keyed by the job ID, so the job's schedule is known now.
	fmt.Fprintf(out, "enqueued job %s, policy %s\n", id, rule)
	for _, s := range backoff.Schedule(rule.Policy(), backoff.Key(id), 2) {
		fmt.Fprintf(out, "  plan: retry after attempt %d waits %s\n", s.Attempt, s.Delay.Round(time.Millisecond))
	}

	done := make(chan struct{})
	start := time.Now()
	worker, err := native.NewWorker(queue, rule, func(_ context.Context, job *native.Job) error {
		at := time.Since(start).Round(time.Millisecond)
		if job.Attempt <= 2 {
			fmt.Fprintf(out, "attempt %d/%d at +%s: smtp: 421 try again later\n", job.Attempt, job.MaxAttempts, at)
			return errors.New("smtp: 421 try again later")
		}
		fmt.Fprintf(out, "attempt %d/%d at +%s: sent to %s\n", job.Attempt, job.MaxAttempts, at, job.Payload)
		close(done)
		return nil
	})
	if err != nil {
		return err
	}
	if err := worker.Start(); err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = worker.Shutdown(stopCtx)
	}()

	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("job %s did not succeed: %w", id, ctx.Err())
	}
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
