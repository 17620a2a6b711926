package outage

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	reboundriver "github.com/rebound-go/rebound/adapters/river"
	"github.com/rebound-go/rebound/breaker/pgstore"
)

// River runs the scenario on River on PostgreSQL, the breaker in a table
// beside River's (pgstore).
type River struct {
	URL string // PostgreSQL

	pool   *pgxpool.Pool
	schema string
}

// Name returns "river".
func (r *River) Name() string { return "river" }

// ChargeArgs is the scenario's River job.
type ChargeArgs struct{}

// Kind implements river.JobArgs.
func (ChargeArgs) Kind() string { return Kind }

var quiet = slog.New(slog.DiscardHandler)

// Setup migrates River and the breaker's table into a schema of the run's
// own and inserts the jobs.
func (r *River) Setup(ctx context.Context, s Scenario, mode string) (Spec, error) {
	pool, err := pgxpool.New(ctx, r.URL)
	if err != nil {
		return Spec{}, err
	}
	r.pool = pool
	r.schema = fmt.Sprintf("rbo_%s_%d", mode, time.Now().UnixNano()%1e12)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{r.schema}.Sanitize()); err != nil {
		return Spec{}, err
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: r.schema, Logger: quiet})
	if err != nil {
		return Spec{}, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return Spec{}, err
	}
	if err := pgstore.Migrate(ctx, pool, r.schema); err != nil {
		return Spec{}, err
	}
	retrier, err := reboundriver.New(s.Rule)
	if err != nil {
		return Spec{}, err
	}
	// An inserting client that works nothing, with the Retrier's insert
	// middleware: the jobs get the rule's max_attempts.
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: quiet, Schema: r.schema,
		Plugins: []rivertype.Plugin{retrier}})
	if err != nil {
		return Spec{}, err
	}
	const batch = 1000
	for i := 0; i < s.Jobs; i += batch {
		params := make([]river.InsertManyParams, min(batch, s.Jobs-i))
		for j := range params {
			params[j] = river.InsertManyParams{Args: ChargeArgs{}}
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return Spec{}, err
		}
	}
	return Spec{Postgres: r.URL, Schema: r.schema}, nil
}

// Ended counts the jobs completed, and those discarded or cancelled.
func (r *River) Ended(ctx context.Context) (int, int, error) {
	var done, failed int
	err := r.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'completed'),
		count(*) FILTER (WHERE state IN ('discarded', 'cancelled')) FROM `+pgx.Identifier{r.schema, "river_job"}.Sanitize()).Scan(&done, &failed)
	return done, failed, err
}

// Teardown drops the schema.
func (r *River) Teardown(ctx context.Context) {
	_, _ = r.pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{r.schema}.Sanitize()+" CASCADE")
	r.pool.Close()
}

// chargeWorker calls the dependency.
type chargeWorker struct {
	river.WorkerDefaults[ChargeArgs]
	dep *caller
}

func (w *chargeWorker) Work(ctx context.Context, _ *river.Job[ChargeArgs]) error {
	return w.dep.call(ctx)
}

// runRiver is a worker process: a River client with the Retrier plugged in
// as documented, fetching every 100ms.
func runRiver(ctx context.Context, sp Spec, stop <-chan struct{}) error {
	rule, err := sp.rule()
	if err != nil {
		return err
	}
	cfg, err := pgxpool.ParseConfig(sp.Postgres)
	if err != nil {
		return err
	}
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	opts := []reboundriver.Option{reboundriver.WithErrorHandler(report("river"))}
	if sp.Guarded() {
		rules, err := sp.rules()
		if err != nil {
			return err
		}
		opts = append(opts, reboundriver.WithBreaker(pgstore.New(pool, rules, pgstore.Options{Schema: sp.Schema})),
			reboundriver.WithDependency(Kind, Dependency))
	}
	retrier, err := reboundriver.New(rule, opts...)
	if err != nil {
		return err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &chargeWorker{dep: newCaller(sp.Dep, sp.Concurrency)})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		RetryPolicy:       retrier,
		Plugins:           []rivertype.Plugin{retrier},
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: sp.Concurrency}},
		Schema:            sp.Schema,
		Workers:           workers,
		FetchPollInterval: 100 * time.Millisecond,
		FetchCooldown:     20 * time.Millisecond,
		Logger:            quiet,
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	return untilStop(ctx, stop, client.Stop)
}
