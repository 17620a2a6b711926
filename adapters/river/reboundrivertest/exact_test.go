package reboundrivertest_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	reboundriver "github.com/rebound-go/rebound/adapters/river"
	"github.com/rebound-go/rebound/adapters/river/reboundrivertest"
	"github.com/rebound-go/rebound/backoff"
)

// The mappings whose exact times matter, through reboundrivertest: River's
// executor, the Retrier as documented, and a clock that stands still, so
// a fire time is exactly the clock plus the delay.

var errSend = errors.New("smtp: 421")

type mailArgs struct {
	// Hint is a retry-after hint to fail with; zero fails without one.
	Hint time.Duration `json:"hint"`
}

func (mailArgs) Kind() string { return "rebound_mail" }

type mailWorker struct {
	river.WorkerDefaults[mailArgs]
}

func (mailWorker) Work(_ context.Context, job *river.Job[mailArgs]) error {
	if job.Args.Hint > 0 {
		return backoff.RetryAfter(errSend, job.Args.Hint)
	}
	return errSend
}

func exactMappings[TTx any](t *testing.T, b env[TTx]) {
	ctx := context.Background()
	newWorker := func(t *testing.T, rule backoff.Rule) *reboundrivertest.Worker[mailArgs, TTx] {
		return reboundrivertest.NewWorker(t, b.driver, &river.Config{Schema: b.schema, Logger: slog.New(slog.DiscardHandler)},
			river.Worker[mailArgs](mailWorker{}), rule)
	}

	// The middleware captures the error, and River stores the rule's delay
	// for the job's key, exactly, attempt after attempt.
	t.Run("KeyedSchedule", func(t *testing.T) {
		rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.EqualJitter(backoff.Must(backoff.Exponential(10*time.Second, time.Hour)))), 3))
		w := newWorker(t, rule)
		tx := b.tx(t)
		res, err := w.Work(ctx, t, tx, mailArgs{}, nil)
		key := backoff.Key(strconv.FormatInt(res.Job.ID, 10))
		for n := 1; n <= 2; n++ {
			want := w.Clock.Now().Add(rule.Decide(n, errSend, key).Delay)
			if !errors.Is(err, errSend) || res.Job.State != rivertype.JobStateRetryable || res.NextRun().Before(want) || res.NextRun().Sub(want) >= reboundriver.Resolution {
				t.Fatalf("attempt %d: %v, state %s, next run %v; want the error, retryable at %v", n, err, res.Job.State, res.NextRun(), want)
			}
			res, err = w.WorkJob(ctx, t, tx, res.Job)
		}
		if res.Job.State != rivertype.JobStateDiscarded || w.Retrier.Pending() != 0 {
			t.Fatalf("attempt 3: state %s, Pending %d; want discarded, nothing pending", res.Job.State, w.Retrier.Pending())
		}
	})

	// A retry-after hint longer than the policy's delay is the delay.
	t.Run("RetryAfter", func(t *testing.T) {
		w := newWorker(t, backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Second)), 3)))
		res, _ := w.Work(ctx, t, b.tx(t), mailArgs{Hint: 30 * time.Second}, nil)
		if want := w.Clock.Now().Add(30 * time.Second); !res.NextRun().Equal(want) || res.Event.Result.Decision.Delay != 30*time.Second {
			t.Fatalf("next run %v, told delay %v; want %v, 30s", res.NextRun(), res.Event.Result.Decision.Delay, want)
		}
	})
}

func TestExactMappings(t *testing.T) {
	forBackends(t, exactMappings[pgx.Tx], exactMappings[*sql.Tx])
}
