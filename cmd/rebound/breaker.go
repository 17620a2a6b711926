package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/pgstore"
	"github.com/rebound-go/rebound/breaker/redisstore"
)

func breakerHelp(fs *flag.FlagSet) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprint(w, `Usage: rebound breaker -redis URL [-prefix P]
       rebound breaker -postgres URL [-schema S]

breaker lists the circuit breaker of every dependency the fleet's workers
share, as the store holds it now (on the store's clock): its state, the
consecutive failures (and the failure-rate window's failures/calls), the
consecutive trips, when the next probe may run, the probes running, the
retry budget's tokens, and the rule the workers run it with.

A Redis URL with addr= parameters (redis://h1:7000?addr=h2:7000) is read as
a Redis Cluster, every master scanned.

Flags:
`)
		printFlags(w, fs)
	}
}

type breakerOptions struct {
	redis, prefix, postgres, schema string
	timeout                         time.Duration
}

func breakerFlags() (*flag.FlagSet, *breakerOptions) {
	fs := newFlagSet("breaker")
	o := new(breakerOptions)
	fs.StringVar(&o.redis, "redis", "", "read the breakers from the Redis at `URL`, such as redis://localhost:6379/0 (default $"+envRedisURL+")")
	fs.StringVar(&o.prefix, "prefix", redisstore.DefaultPrefix, "the Redis store's key `prefix`")
	fs.StringVar(&o.postgres, "postgres", "", "read the breakers from the PostgreSQL at `URL`, such as postgres://localhost/app (default $"+envPostgresURL+")")
	fs.StringVar(&o.schema, "schema", "", "the PostgreSQL `schema` of the breaker table (default: the search path)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "give up after this long")
	return fs, o
}

func runBreaker(args []string, stdout, stderr io.Writer) int {
	fs, o := breakerFlags()
	pos, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		breakerHelp(fs)(stdout)
		return exitOK
	}
	switch {
	case err != nil:
		return usageError(stderr, fs, "%v", err)
	case len(pos) > 0:
		return usageError(stderr, fs, "got arguments %q, want only flags", pos)
	case o.redis != "" && o.postgres != "":
		return usageError(stderr, fs, "want exactly one of -redis URL and -postgres URL, not both")
	case o.timeout <= 0:
		return usageError(stderr, fs, "-timeout %s is not positive", o.timeout)
	}
	redisURL, pgURL := connFrom("-redis", o.redis, envRedisURL), connFrom("-postgres", o.postgres, envPostgresURL)
	switch {
	case o.redis != "":
		pgURL = connURL{}
	case o.postgres != "":
		redisURL = connURL{}
	case redisURL.raw == "" && pgURL.raw == "":
		return usageError(stderr, fs, "want one of -redis URL and -postgres URL (or $%s, $%s)", envRedisURL, envPostgresURL)
	case redisURL.raw != "" && pgURL.raw != "":
		return usageError(stderr, fs, "both $%s and $%s are set: say which store to read with -redis or -postgres", envRedisURL, envPostgresURL)
	}
	// The command's one read is bounded by -timeout, not by the stores'
	// per-call bound for workers (1s), which a client still retrying its
	// dial would reach first, reporting its own deadline instead of why
	// the server could not be reached.
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	var (
		list  []breaker.Status
		where string
	)
	if redisURL.raw != "" {
		rdb, err := redisClient(redisURL.raw)
		if err != nil {
			return usageError(stderr, fs, "%s: %s", redisURL, redisURL.describe(err))
		}
		defer rdb.Close()
		list, err = redisstore.New(rdb, breaker.Rules{}, redisstore.Options{Prefix: o.prefix, Timeout: o.timeout}).List(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "rebound breaker: %s\n", redisURL.describe(err))
			return exitFail
		}
		where = "redis, prefix " + strconv.Quote(o.prefix)
	} else {
		cfg, err := pgxpool.ParseConfig(pgURL.raw)
		if err != nil {
			return usageError(stderr, fs, "%s: %s", pgURL, pgURL.describe(err))
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "rebound breaker: %s\n", pgURL.describe(err))
			return exitFail
		}
		defer pool.Close()
		list, err = pgstore.New(pool, breaker.Rules{}, pgstore.Options{Schema: o.schema, Timeout: o.timeout}).List(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "rebound breaker: %s\n", pgURL.describe(err))
			return exitFail
		}
		where = "postgres"
		if o.schema != "" {
			where += ", schema " + strconv.Quote(o.schema)
		}
	}
	writeBreakers(stdout, where, list)
	return exitOK
}

// redisClient connects to a Redis URL, or to a cluster when the URL
// lists more nodes with addr= parameters.
func redisClient(raw string) (redis.UniversalClient, error) {
	if u, err := url.Parse(raw); err == nil && u.Query().Has("addr") {
		o, err := redis.ParseClusterURL(raw)
		if err != nil {
			return nil, err
		}
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(o), nil
}

// writeBreakers prints one row per dependency, then each rule.
func writeBreakers(w io.Writer, where string, list []breaker.Status) {
	if len(list) == 0 {
		fmt.Fprintf(w, "no breakers (%s)\n", where)
		return
	}
	at := list[0].At
	fmt.Fprintf(w, "%d breakers (%s) at %s\n\n", len(list), where, at.UTC().Format("2006-01-02 15:04:05.000Z"))
	header := []string{"dependency", "state", "failures", "trips", "next probe", "probes", "tokens"}
	rows := [][]string{header}
	for _, s := range list {
		failures := strconv.FormatInt(s.Failures, 10)
		if s.Calls > 0 {
			failures += fmt.Sprintf(" (%d/%d)", s.WindowFailures, s.Calls)
		}
		next := "-"
		if !s.NextProbe.IsZero() {
			if d := s.NextProbe.Sub(s.At); d > 0 {
				next = "in " + fmtDur(d)
			} else {
				next = "now"
			}
		}
		tokens := "-"
		if s.Tokens >= 0 {
			tokens = strconv.FormatFloat(s.Tokens, 'f', 2, 64)
		}
		rows = append(rows, []string{s.Dependency, s.State.String(), failures, strconv.FormatInt(s.Trips, 10), next, strconv.FormatInt(s.Probes, 10), tokens})
	}
	widths := make([]int, len(header))
	for _, r := range rows {
		for c, cell := range r {
			widths[c] = max(widths[c], runeLen(cell))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for c, cell := range r {
			line.WriteString(padRight(cell, widths[c]) + "  ")
		}
		fmt.Fprintln(w, strings.TrimRight(line.String(), " "))
	}
	fmt.Fprintln(w)
	for _, s := range list {
		rule := s.Rule
		if rule == "" {
			rule = "(unknown)"
		}
		fmt.Fprintf(w, "%s: %s\n", s.Dependency, rule)
	}
}
