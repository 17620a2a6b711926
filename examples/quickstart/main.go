// Command quickstart runs one rebound retry policy on asynq, River and
// rebound's own Redis queue side by side, and shows what each engine did.
//
//	go run ./examples/quickstart
//
// It needs no server: asynq and the native queue run on an in-process
// miniredis, River on SQLite in a temporary file. Three jobs go to every
// engine under the same rule: one fails twice and then succeeds, one always
// fails, one fails with a permanent error. Each attempt is printed as it
// ends; then a table sets rebound's planned delay for each retry beside the
// gap each engine really left, and each job's final state.
//
// Flags:
//
//	-policy P      retry policy in rebound's text form (default jitter(exponential(100ms, 2s)))
//	-attempts N    total runs per job, the first included (default 5)
//	-redis URL     run asynq and the native queue on this Redis instead of miniredis
//	-postgres URL  run River on this PostgreSQL instead of SQLite
//	-precise       asynq retries to the millisecond (reboundasynq.WithPrecise)
//
// On a real server everything lives under a name of its own (an asynq queue,
// a key prefix, a schema) and is removed at the end.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		var reported flagError
		if !errors.As(err, &reported) {
			fmt.Fprintln(os.Stderr, "quickstart:", err)
		}
		os.Exit(2)
	}
}

// defaultPolicy is the policy the quickstart runs unless -policy says
// otherwise.
const defaultPolicy = "jitter(exponential(100ms, 2s))"

// config is what the flags say.
type config struct {
	rule        backoff.Rule
	redisURL    string
	postgresURL string
	precise     bool
	// namespace isolates the run on real servers: the asynq queue, the
	// native key prefix and the River schema are named after it.
	namespace string
	timeout   time.Duration
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: quickstart [flags]\n\n"+
			"Runs the same retry policy on asynq, River and rebound's native Redis queue,\n"+
			"on embedded stores unless -redis or -postgres name real servers.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	policy := backoff.Spec{Policy: backoff.Must(backoff.Parse(defaultPolicy))}
	fs.Var(&policy, "policy", "retry `policy` in rebound's text form")
	attempts := fs.Int("attempts", 5, "total `runs` per job, the first included")
	var cfg config
	fs.StringVar(&cfg.redisURL, "redis", "", "Redis `URL` for asynq and the native queue (default: in-process miniredis)")
	fs.StringVar(&cfg.postgresURL, "postgres", "", "PostgreSQL `URL` for River (default: SQLite in a temporary file)")
	fs.BoolVar(&cfg.precise, "precise", false, "asynq retries to the millisecond instead of rounding up to whole seconds")
	fs.StringVar(&cfg.namespace, "namespace", "", "`name` of the queue, key prefix and schema used on real servers (default: random; removed afterwards)")
	fs.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up if the jobs have not finished after this `long`")
	if err := fs.Parse(args); err != nil {
		return cfg, flagError{err}
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q: every setting is a flag (see -h)", fs.Arg(0))
	}
	rule, err := backoff.NewRule(policy, *attempts)
	if err != nil {
		return cfg, fmt.Errorf("-policy %q -attempts %d: %w", policy.String(), *attempts, err)
	}
	cfg.rule = rule
	if cfg.timeout <= 0 {
		return cfg, fmt.Errorf("-timeout %s: want a positive duration", cfg.timeout)
	}
	if cfg.namespace == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		cfg.namespace = "rebound_quickstart_" + hex.EncodeToString(b[:])
	}
	return cfg, nil
}

// flagError is an error the flag package has already printed, with the
// usage.
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

// run is the whole command: it parses args, runs the jobs on the three
// engines, prints each attempt as it ends and then the side-by-side table.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	rep, err := race(ctx, cfg, stdout, stderr)
	if err != nil {
		return err
	}
	rep.print(stdout)
	return nil
}
