package reboundrivertest_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite"

	reboundriver "github.com/rebound-go/rebound/adapters/river"
	"github.com/rebound-go/rebound/adapters/river/reboundrivertest"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
	"github.com/rebound-go/rebound/observe"
)

var errFlaky = errors.New("flaky")

// storyArgs tells storyWorker how its attempts end.
type storyArgs struct {
	// Fail is how many attempts fail before one succeeds; -1 fails always.
	Fail int `json:"fail"`
	// Permanent marks the failures permanent.
	Permanent bool `json:"permanent"`
	// Snooze snoozes the first run for this long instead.
	Snooze time.Duration `json:"snooze"`
	// Panic panics instead of failing.
	Panic bool `json:"panic"`
}

func (storyArgs) Kind() string { return "rebound_story" }

type storyWorker struct {
	river.WorkerDefaults[storyArgs]
}

func (storyWorker) Work(_ context.Context, job *river.Job[storyArgs]) error {
	a := job.Args
	switch {
	case a.Snooze > 0 && !snoozed(job.JobRow):
		return river.JobSnooze(a.Snooze)
	case a.Fail >= 0 && job.Attempt > a.Fail:
		return nil
	case a.Panic:
		panic(errFlaky)
	case a.Permanent:
		return backoff.Permanent(errFlaky)
	}
	return errFlaky
}

// snoozed reports whether River has snoozed the job before: it counts
// snoozes in the job's metadata.
func snoozed(job *rivertype.JobRow) bool {
	return strings.Contains(string(job.Metadata), `"snoozes"`)
}

// env is one backend: a pool-less driver and a transaction per test.
type env[TTx any] struct {
	driver riverdriver.Driver[TTx]
	schema string
	tx     func(t *testing.T) TTx
}

func forBackends(t *testing.T, pg func(*testing.T, env[pgx.Tx]), lite func(*testing.T, env[*sql.Tx])) {
	t.Run("postgres", func(t *testing.T) {
		pool := testenv.Postgres(t)
		schema := testenv.Schema(t, pool)
		migrate(t, riverpgxv5.New(pool), schema)
		pg(t, env[pgx.Tx]{driver: riverpgxv5.New(nil), schema: schema, tx: func(t *testing.T) pgx.Tx {
			tx, err := pool.Begin(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
			return tx
		}})
	})
	t.Run("sqlite", func(t *testing.T) {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "river.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { _ = db.Close() })
		migrate(t, riversqlite.New(db), "")
		lite(t, env[*sql.Tx]{driver: riversqlite.New(nil), tx: func(t *testing.T) *sql.Tx {
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tx.Rollback() })
			return tx
		}})
	})
}

func migrate[TTx any](t *testing.T, driver riverdriver.Driver[TTx], schema string) {
	t.Helper()
	m, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		t.Fatal(err)
	}
}

// stories checks that the kit tells each story exactly: the attempt River
// ran, the Retrier's decision, and the fire time River stored.
func stories[TTx any](t *testing.T, e env[TTx]) {
	ctx := context.Background()
	jittered := backoff.Must(backoff.NewRule(backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(time.Second, time.Hour)))), 4))
	newWorker := func(t *testing.T, rule backoff.Rule, opts ...reboundriver.Option) *reboundrivertest.Worker[storyArgs, TTx] {
		cfg := &river.Config{Schema: e.schema, Logger: slog.New(slog.DiscardHandler)} // the panics are deliberate
		return reboundrivertest.NewWorker(t, e.driver, cfg, river.Worker[storyArgs](storyWorker{}), rule, opts...)
	}

	t.Run("RetriesAtTheKeyedDelay", func(t *testing.T) {
		w := newWorker(t, jittered)
		tx := e.tx(t)
		res, err := w.Work(ctx, t, tx, storyArgs{Fail: 3}, nil)
		id := strconv.FormatInt(res.Job.ID, 10)
		for n := 1; n <= 3; n++ {
			if !errors.Is(err, errFlaky) {
				t.Fatalf("attempt %d: err %v, want the worker's", n, err)
			}
			want := jittered.Decide(n, errFlaky, backoff.Key(id)).Delay
			at := w.Clock.Now()
			if got := res.Event.Result.Decision.Delay; res.Event.Attempt.Number != n || got != want {
				t.Fatalf("attempt %d: told attempt %d, delay %v; want attempt %d, the keyed %v", n, res.Event.Attempt.Number, got, n, want)
			}
			if next := res.NextRun(); next.Before(at.Add(want)) || next.Sub(at.Add(want)) >= reboundriver.Resolution || !next.Equal(res.Event.Result.FireAt) {
				t.Fatalf("attempt %d: next run %v after the attempt, told %v; want %v rounded up to the millisecond, as told", n, next.Sub(at), res.Event.Result.FireAt.Sub(at), want)
			}
			res, err = w.WorkJob(ctx, t, tx, res.Job)
			if !res.Job.AttemptedAt.Equal(w.Clock.Now()) {
				t.Fatalf("attempt %d ran at %v, want the clock moved to its fire time %v", n+1, res.Job.AttemptedAt, w.Clock.Now())
			}
		}
		if err != nil || res.Job.State != rivertype.JobStateCompleted || !res.NextRun().IsZero() {
			t.Fatalf("attempt 4: %v, state %s; want completed, no next run", err, res.Job.State)
		}
		if got := len(w.Recorder.Job(id)); got != 4 || len(w.Recorder.Problems()) > 0 {
			t.Fatalf("recorder holds %d attempts and problems %v, want 4 and none", got, w.Recorder.Problems())
		}
	})

	for _, c := range []struct {
		name  string
		args  storyArgs
		rule  backoff.Rule
		story string
		state rivertype.JobState
		gave  backoff.Outcome
	}{
		{"Exhausted", storyArgs{Fail: -1}, backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Minute)), 3)),
			"1 retry 1m0s\n2 retry 1m0s\n3 exhausted", rivertype.JobStateDiscarded, backoff.OutcomeExhausted},
		{"Permanent", storyArgs{Fail: -1, Permanent: true}, backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Minute)), 3)),
			"1 permanent", rivertype.JobStateCancelled, backoff.OutcomePermanent},
		{"Panic", storyArgs{Fail: 1, Panic: true}, backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Minute)), 3)),
			"1 retry 1m0s\n2 success", rivertype.JobStateCompleted, 0},
		{"Snooze", storyArgs{Fail: 0, Snooze: time.Hour}, backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Minute)), 3)),
			"1 snoozed\n1 success", rivertype.JobStateCompleted, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorker(t, c.rule)
			tx := e.tx(t)
			res, _ := w.Work(ctx, t, tx, c.args, nil)
			for i := 0; i < 5 && !res.NextRun().IsZero(); i++ {
				res, _ = w.WorkJob(ctx, t, tx, res.Job)
			}
			id := strconv.FormatInt(res.Job.ID, 10)
			if got := w.Recorder.Story(id); got != c.story || res.Job.State != c.state {
				t.Fatalf("story %q, state %s; want %q, %s", got, res.Job.State, c.story, c.state)
			}
			gave := w.Recorder.GiveUps()
			if (c.gave == 0) != (len(gave) == 0) || (c.gave != 0 && (len(gave) != 1 || gave[0].Outcome != c.gave)) {
				t.Fatalf("give-ups %+v, want %v", gave, c.gave)
			}
			if c.name == "Panic" {
				var pe *observe.PanicError
				if first := w.Recorder.Job(id)[0]; !errors.As(first.Result.Err, &pe) || pe.Op != "handler" {
					t.Fatalf("the panic was told as %v, want an *observe.PanicError{Op: handler}", first.Result.Err)
				}
			}
		})
	}
}

func TestStories(t *testing.T) {
	forBackends(t, stories[pgx.Tx], stories[*sql.Tx])
}

// The clock moves only when the test or WorkJob moves it.
func TestClock(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := reboundrivertest.NewClock(at)
	if !c.Now().Equal(at) || !c.NowOrNil().Equal(at) {
		t.Fatalf("clock reads %v, want %v", c.Now(), at)
	}
	if got := c.Advance(time.Minute); !got.Equal(at.Add(time.Minute)) || !c.Now().Equal(got) {
		t.Fatalf("Advance(1m) = %v, now %v; want %v", got, c.Now(), at.Add(time.Minute))
	}
	c.Set(at)
	if !c.Now().Equal(at) {
		t.Fatalf("Set(%v) left %v", at, c.Now())
	}
}
