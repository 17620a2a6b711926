package reboundriver

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/reboundtest"
)

type ownRetryArgs struct{}

func (ownRetryArgs) Kind() string { return "rebound_own_retry" }

// ownRetryWorker fails each job's first run and answers River's NextRetry
// itself, without asking the Retrier (no WorkerNextRetry).
type ownRetryWorker struct {
	river.WorkerDefaults[ownRetryArgs]
	mu   sync.Mutex
	runs map[int64]int
}

func (w *ownRetryWorker) Work(_ context.Context, job *river.Job[ownRetryArgs]) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.runs[job.ID]++
	if w.runs[job.ID] == 1 {
		return errScripted
	}
	return nil
}

func (w *ownRetryWorker) NextRetry(*river.Job[ownRetryArgs]) time.Time {
	return time.Now().Add(200 * time.Millisecond)
}

// snoozeErrors is a middleware outside the Retrier that turns every
// failure into a snooze: River runs the job again without asking the
// Retrier's NextRetry.
type snoozeErrors struct{ river.MiddlewareDefaults }

func (*snoozeErrors) Work(ctx context.Context, _ *rivertype.JobRow, doInner func(context.Context) error) error {
	if err := doInner(ctx); err != nil {
		return river.JobSnooze(200 * time.Millisecond)
	}
	return nil
}

// engineDecides runs jobs whose first run fails and which River then runs
// again, or completes, without asking the Retrier: a worker's own
// NextRetry, a middleware outside rebound's that snoozes the error, one
// that swallows it. Each job later succeeds, so none may reach the
// give-up hook, and none may be reported permanent: the attempt is told
// as the engine's decision ("engine"), with no decision or fire time of
// rebound's.
func engineDecides[TTx any](t *testing.T, newDriver func(t testing.TB) (riverdriver.Driver[TTx], string)) {
	const n = 3
	for _, tc := range []struct {
		name   string
		outer  rivertype.Middleware
		second bool // the job runs a second time
	}{
		{"WorkerNextRetry", nil, true},
		{"MiddlewareSnoozes", &snoozeErrors{}, true},
		{"MiddlewareSwallows", &swallow{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &reboundtest.Recorder{}
			r, _ := New(mustRule(t, backoff.Must(backoff.Fixed(time.Hour)), 5), quietErrors, WithObserver(rec), WithGiveUp(rec.GiveUp))
			workers := river.NewWorkers()
			w := &ownRetryWorker{runs: map[int64]int{}}
			river.AddWorker(workers, w)
			driver, schema := newDriver(t)
			cfg := clientConfig(t, r, schema, workers, 10, testPoll)
			if tc.outer != nil {
				cfg.Middleware = []rivertype.Middleware{tc.outer, r}
			}
			client := startClient(t, driver, cfg)
			params := make([]river.InsertManyParams, n)
			for i := range params {
				params[i] = river.InsertManyParams{Args: ownRetryArgs{}}
			}
			if _, err := client.InsertMany(context.Background(), params); err != nil {
				t.Fatal(err)
			}
			jobs := waitAllInState(t, client, n, rivertype.JobStateCompleted, time.Minute)
			waitPending(t, r, 10*time.Second)
			for _, job := range jobs {
				w.mu.Lock()
				runs := w.runs[job.ID]
				w.mu.Unlock()
				if want := map[bool]int{false: 1, true: 2}[tc.second]; runs != want {
					t.Errorf("job %d ran %d times, want %d", job.ID, runs, want)
				}
			}
			if g := rec.GiveUps(); len(g) != 0 {
				t.Errorf("give-up hook told %d times (first: %+v) about jobs that then succeeded", len(g), g[0])
			}
			for _, e := range rec.Events() {
				if !e.Ended {
					t.Errorf("job %s attempt %d never ended", e.Attempt.JobID, e.Attempt.Number)
					continue
				}
				res := e.Result
				if res.Err == nil {
					continue
				}
				if res.Outcome() != "engine" || !res.EngineDecided() || res.Decision != (backoff.Decision{}) || !res.FireAt.IsZero() {
					t.Errorf("job %s attempt %d reported %s %+v at %v, want the engine's decision (outcome engine, no decision or fire time of rebound's)",
						e.Attempt.JobID, e.Attempt.Number, res.Outcome(), res.Decision, res.FireAt)
				}
			}
		})
	}
}

func TestEngineDecides(t *testing.T) {
	t.Run("postgres", func(t *testing.T) { engineDecides(t, postgresDriver) })
	t.Run("sqlite", func(t *testing.T) { engineDecides(t, sqliteDriver) })
}
