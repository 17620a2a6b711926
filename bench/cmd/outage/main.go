// Command outage runs issue 16's measurement: a dependency that answers
// errors for 30 s, then recovers; 10,000 jobs from 4 worker processes per
// engine (this binary, run again as workers); every call recorded; each
// engine with and without rebound's circuit breaker, in one run. It prints
// the table and, with -json, writes the results for bench/cmd/report.
//
//	go run ./bench/cmd/outage                      # every engine whose server answers
//	go run ./bench/cmd/outage -engines native -jobs 2000 -outage 10s
//
// It uses the Redis and PostgreSQL servers named by REBOUND_REDIS_ADDR and
// REBOUND_POSTGRES_URL (defaults 127.0.0.1:6379 and 127.0.0.1:5432/test);
// an engine whose server does not answer is reported as not measured.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/bench/outage"
	"github.com/rebound-go/rebound/internal/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "outage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	s := outage.Default()
	worker := flag.String("worker", "", "run as a worker process with this `spec` (JSON; set by the measuring process)")
	engines := flag.String("engines", "native,asynq,river", "comma-separated `engines` to measure")
	flag.IntVar(&s.Jobs, "jobs", s.Jobs, "`jobs` enqueued per run")
	flag.IntVar(&s.Workers, "workers", s.Workers, "worker `processes` per run")
	flag.IntVar(&s.Concurrency, "concurrency", s.Concurrency, "handlers per worker process")
	flag.DurationVar(&s.Outage, "outage", s.Outage, "how long the dependency answers errors")
	jsonOut := flag.String("json", "", "write the results to this `file` as JSON")
	flag.Parse()
	if *worker != "" {
		var sp outage.Spec
		if err := json.Unmarshal([]byte(*worker), &sp); err != nil {
			return fmt.Errorf("-worker: %w", err)
		}
		return outage.RunWorker(ctx, sp, outage.StopOnStdin())
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	rep := outage.Report{Scenario: outage.Describe(s)}
	for _, name := range strings.Split(*engines, ",") {
		e, why := engine(ctx, strings.TrimSpace(name))
		for _, mode := range outage.Modes {
			if e == nil {
				rep.Results = append(rep.Results, outage.Result{Engine: name, Mode: mode, Jobs: s.Jobs, Err: why})
				continue
			}
			fmt.Fprintf(os.Stderr, "outage: %s, %s: %d jobs, %d workers, %v outage\n", name, mode, s.Jobs, s.Workers, s.Outage)
			began := time.Now()
			r := outage.Run(ctx, exe, e, s, mode, os.Stderr)
			fmt.Fprintf(os.Stderr, "outage: %s (%v)\n", r, time.Since(began).Round(time.Second))
			rep.Results = append(rep.Results, r)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	fmt.Print(rep.Markdown())
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
	}
	return nil
}

// engine returns the engine named name if its server answers, or why not.
func engine(ctx context.Context, name string) (outage.Engine, string) {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	switch name {
	case "native", "asynq":
		addr := testenv.RedisAddr()
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		if err := c.Ping(pctx).Err(); err != nil {
			return nil, fmt.Sprintf("Redis at %s does not answer: %v", addr, err)
		}
		if name == "native" {
			return &outage.Native{Addr: addr}, ""
		}
		return &outage.Asynq{Addr: addr}, ""
	case "river":
		url := testenv.PostgresURL()
		conn, err := pgx.Connect(pctx, url)
		if err != nil {
			return nil, fmt.Sprintf("PostgreSQL at %s does not answer: %v", url, err)
		}
		_ = conn.Close(pctx)
		return &outage.River{URL: url}, ""
	}
	return nil, fmt.Sprintf("unknown engine %q, want native, asynq or river", name)
}
