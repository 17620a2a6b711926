package reboundotel_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	"go.opentelemetry.io/otel/trace"
	_ "modernc.org/sqlite"

	reboundriver "github.com/rebound-go/rebound/adapters/river"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
	"github.com/rebound-go/rebound/observe"
)

type emailArgs struct {
	Name string `json:"name"` // flaky, doomed or bad: how scripted treats it; sleepy: see emailWorker
}

func (emailArgs) Kind() string { return "email.send" }

type emailWorker struct {
	river.WorkerDefaults[emailArgs]
	h      *scripted
	sleepy atomic.Int32 // runs of the sleepy job
}

// Work runs the scripted stories; the sleepy job snoozes on its first run
// (which River does not count), fails on its second and succeeds on its
// third.
func (w *emailWorker) Work(_ context.Context, job *river.Job[emailArgs]) error {
	if job.Args.Name != "sleepy" {
		return w.h.attempt(job.Args.Name)
	}
	switch w.sleepy.Add(1) {
	case 1:
		return river.JobSnooze(20 * time.Millisecond)
	case 2:
		return &errTimeout{host: "smtp"}
	}
	return nil
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func migrateRiver[TTx any](t *testing.T, driver riverdriver.Driver[TTx], schema string) {
	t.Helper()
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: quiet})
	if err != nil {
		t.Fatalf("rivermigrate: %v", err)
	}
	if _, err := m.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		t.Fatalf("migrate: %v", err)
	}
}

// runRiverStory runs flaky, doomed, bad and sleepy on a River client over driver
// with the Retrier (and its Observer) plugged in as documented. With
// withOtelriver, rivercontrib/otelriver runs outside the Retrier: it injects
// the producer's context at insert and wraps each attempt in its own work
// span, which becomes the parent of rebound's attempt span. Without it the
// test injects the producer's context into the job metadata itself.
func runRiverStory[TTx any](t *testing.T, driver riverdriver.Driver[TTx], schema string, withOtelriver bool) {
	f := newFixture(t)
	p, _ := backoff.Fixed(20 * time.Millisecond)
	rule, _ := backoff.NewRule(p, 3)
	retrier, err := reboundriver.New(rule, reboundriver.WithObserver(f.obs))
	if err != nil {
		t.Fatal(err)
	}
	h := &scripted{}
	workers := river.NewWorkers()
	river.AddWorker(workers, &emailWorker{h: h})
	middleware := []rivertype.Middleware{retrier}
	if withOtelriver {
		middleware = []rivertype.Middleware{
			otelriver.NewMiddleware(&otelriver.MiddlewareConfig{TracerProvider: f.tp, EnableTracePropagation: true}),
			retrier,
		}
	}
	client, err := river.NewClient(driver, &river.Config{
		FetchCooldown:     20 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Logger:            quiet,
		Middleware:        middleware,
		Queues:            map[string]river.QueueConfig{"emails": {MaxWorkers: 4}},
		RetryPolicy:       retrier,
		Schema:            schema,
		Workers:           workers,
	})
	if err != nil {
		t.Fatalf("river client: %v", err)
	}

	ids := map[string]string{}
	producers := map[string]trace.SpanID{}
	for _, name := range []string{"flaky", "doomed", "bad", "sleepy"} {
		pctx, producer := f.tp.Tracer("producer").Start(context.Background(), "send emails",
			trace.WithSpanKind(trace.SpanKindProducer))
		opts := &river.InsertOpts{Queue: "emails"}
		if !withOtelriver {
			meta := map[string]string{}
			f.obs.Inject(pctx, observe.MapCarrier(meta))
			opts.Metadata, _ = json.Marshal(meta)
		}
		res, err := client.Insert(pctx, emailArgs{Name: name}, opts)
		producer.End()
		if err != nil {
			t.Fatalf("insert %s: %v", name, err)
		}
		ids[name] = itoa(res.Job.ID)
		producers[name] = producer.SpanContext().SpanID()
		if withOtelriver {
			// otelriver injected the context of its own insert span, a
			// child of the producer's.
			ended := f.spans.Ended()
			producers[name] = ended[len(ended)-2].SpanContext().SpanID()
			if ended[len(ended)-2].Parent().SpanID() != producer.SpanContext().SpanID() {
				t.Fatalf("otelriver's insert span %q is not the producer's child", ended[len(ended)-2].Name())
			}
		}
	}
	if err := client.Start(context.Background()); err != nil {
		t.Fatalf("start river: %v", err)
	}
	waitSpans(t, f, 10, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Stop(ctx); err != nil {
		t.Fatalf("stop river: %v", err)
	}

	base := story{system: reboundriver.System, queue: "emails", maxAttempts: 3}
	for name, outcomes := range map[string][]string{
		"flaky":  {"retry", "retry", "success"},
		"doomed": {"retry", "retry", "exhausted"},
		"bad":    {"permanent"},
		"sleepy": {"snoozed", "retry", "success"},
	} {
		st := base
		st.jobID, st.outcomes, st.producer = ids[name], outcomes, producers[name]
		if name == "sleepy" {
			st.numbers = []int{1, 1, 2} // the snooze did not count
		}
		spans := jobSpans(f.spans, ids[name])
		st.check(t, spans)
		if withOtelriver {
			for i, s := range spans {
				if !s.Parent().IsValid() {
					t.Errorf("%s attempt %d has no parent, want otelriver's work span", name, i+1)
				}
			}
		}
	}
	checkJobMetrics(t, f, reboundriver.System, "emails", map[string]int64{"retry": 5, "success": 2, "exhausted": 1, "permanent": 1, "snoozed": 1}, 5, 1)
}

// TestRiverAdapter tells the three stories on River over SQLite, with
// rivercontrib/otelriver composed outside the Retrier.
func TestRiverAdapter(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "river.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	driver := riversqlite.New(db)
	migrateRiver(t, driver, "")
	runRiverStory(t, driver, "", true)
}

// TestRiverAdapterPostgres tells them on River over the real PostgreSQL,
// with the producer's context injected by hand.
func TestRiverAdapterPostgres(t *testing.T) {
	pool := testenv.Postgres(t)
	schema := testenv.Schema(shortTB{t}, pool)
	driver := riverpgxv5.New(pool)
	migrateRiver(t, driver, schema)
	runRiverStory(t, driver, schema, false)
}

// shortTB gives testenv.Schema a short name: River caps schema names at 46
// characters.
type shortTB struct{ testing.TB }

func (shortTB) Name() string { return "otel" }
