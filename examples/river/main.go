// Command river runs a River client whose retries follow a rebound policy:
// one flaky job fails twice, then succeeds, and each attempt is printed.
//
//	go run ./examples/river                                       # SQLite in a temporary file
//	go run ./examples/river -postgres postgres://localhost/mydb   # a real PostgreSQL
//
// The integration is one value in two places: river.Config's RetryPolicy and
// Plugins.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite"

	reboundriver "github.com/rebound-go/rebound/adapters/river"
	"github.com/rebound-go/rebound/backoff"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "river example:", err)
		os.Exit(1)
	}
}

// WelcomeArgs is a job that sends a welcome email.
type WelcomeArgs struct {
	Email string `json:"email"`
}

// Kind implements river.JobArgs.
func (WelcomeArgs) Kind() string { return "welcome_email" }

// WelcomeWorker sends welcome emails; the mail server refuses the first two.
type WelcomeWorker struct {
	river.WorkerDefaults[WelcomeArgs]
	out   io.Writer
	start time.Time
	done  chan struct{}
}

// Work implements river.Worker.
func (w *WelcomeWorker) Work(_ context.Context, job *river.Job[WelcomeArgs]) error {
	at := time.Since(w.start).Round(time.Millisecond)
	if job.Attempt <= 2 {
		fmt.Fprintf(w.out, "attempt %d/%d at +%s: smtp: 421 try again later\n", job.Attempt, job.MaxAttempts, at)
		return errors.New("smtp: 421 try again later")
	}
	fmt.Fprintf(w.out, "attempt %d/%d at +%s: sent to %s\n", job.Attempt, job.MaxAttempts, at, job.Args.Email)
	close(w.done)
	return nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("river", flag.ContinueOnError)
	postgresURL := fs.String("postgres", "", "PostgreSQL `URL` (default: SQLite in a temporary file)")
	if err := fs.Parse(args); err != nil {
		return err
	}

	// One rule: the backoff curve and the attempts cap (5 runs in total).
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Parse("jitter(exponential(100ms, 2s))")), 5))
	retrier, err := reboundriver.New(rule)
	if err != nil {
		return err
	}

	worker := &WelcomeWorker{out: out, done: make(chan struct{})}
	workers := river.NewWorkers()
	river.AddWorker(workers, worker)
	config := &river.Config{
		RetryPolicy: retrier,                     // rebound decides every retry time
		Plugins:     []rivertype.Plugin{retrier}, // with the attempt's error at hand
		Queues:      map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
		Workers:     workers,
		// River polls every second by default; shorter for a quick demo.
		FetchPollInterval: 50 * time.Millisecond,
		FetchCooldown:     50 * time.Millisecond,
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}

	if *postgresURL != "" {
		pool, err := pgxpool.New(ctx, *postgresURL)
		if err != nil {
			return err
		}
		defer pool.Close()
		return sendWelcome(ctx, riverpgxv5.New(pool), config, rule, worker, out)
	}
	dir, err := os.MkdirTemp("", "rebound-river-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// SQLite wants WAL, a busy timeout and one connection under River.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "river.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return sendWelcome(ctx, riversqlite.New(db), config, rule, worker, out)
}

// sendWelcome migrates the database, inserts one job and runs River until
// the job has succeeded.
func sendWelcome[TTx any](ctx context.Context, driver riverdriver.Driver[TTx], config *river.Config, rule backoff.Rule, worker *WelcomeWorker, out io.Writer) error {
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	client, err := river.NewClient(driver, config)
	if err != nil {
		return err
	}
	res, err := client.Insert(ctx, WelcomeArgs{Email: "ada@example.com"}, nil)
	if err != nil {
		return err
	}
	// Jitter is keyed by the job ID, so the job's schedule is known now.
	fmt.Fprintf(out, "inserted job %d, policy %s\n", res.Job.ID, rule)
	for _, s := range backoff.Schedule(rule.Policy(), backoff.Key(strconv.FormatInt(res.Job.ID, 10)), 2) {
		fmt.Fprintf(out, "  plan: retry after attempt %d waits %s\n", s.Attempt, s.Delay.Round(time.Millisecond))
	}

	worker.start = time.Now()
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()
	select {
	case <-worker.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("job %d did not succeed: %w", res.Job.ID, ctx.Err())
	}
}
