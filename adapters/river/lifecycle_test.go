package reboundriver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// gateArgs jobs run until released; Mode says how they treat their context
// and what they return.
type gateArgs struct {
	// Mode is "ctx" (return when the context ends, with its error),
	// "ignore" (ignore the context, fail when released) or "fail" (fail
	// at once).
	Mode string `json:"mode"`
}

func (gateArgs) Kind() string { return "rebound_gate" }

type gateWorker struct {
	river.WorkerDefaults[gateArgs]
	running chan int64    // receives the job ID when a run starts
	release chan struct{} // closed to let "ignore" runs return
}

func newGateWorker() *gateWorker {
	return &gateWorker{running: make(chan int64, 16), release: make(chan struct{})}
}

func (w *gateWorker) Work(ctx context.Context, job *river.Job[gateArgs]) error {
	if job.Args.Mode == "fail" {
		return errScripted
	}
	w.running <- job.ID
	if job.Args.Mode == "ctx" {
		<-ctx.Done()
		return ctx.Err()
	}
	<-w.release
	return backoff.RetryAfter(errScripted, 2*time.Hour)
}

// waitRunning waits until w starts a run, or fails t.
func (w *gateWorker) waitRunning(t testing.TB) int64 {
	t.Helper()
	select {
	case id := <-w.running:
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no job started within 30s")
	}
	return 0
}

// waitState waits until the job is in state, or fails t.
func waitState[TTx any](t testing.TB, c *river.Client[TTx], id int64, state rivertype.JobState, timeout time.Duration) *rivertype.JobRow {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		job, err := c.JobGet(context.Background(), id)
		if err != nil {
			t.Fatalf("JobGet: %v", err)
		}
		if job.State == state {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d still %s after %v, want %s", id, job.State, timeout, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// remoteCancel cancels jobs with JobCancel from a second client on the same
// database, as an operator's tool does, while they run and while they wait
// for a retry, and checks what the observer was told against the state River
// gave the job.
func remoteCancel[TTx any](t *testing.T, newDriver func(t testing.TB) (riverdriver.Driver[TTx], string)) {
	setup := func(t *testing.T) (*river.Client[TTx], *river.Client[TTx], *gateWorker, *reboundtest.Recorder, *Retrier) {
		o := &reboundtest.Recorder{}
		r, _ := New(mustRule(t, backoff.Must(backoff.Fixed(time.Hour)), 3), quietErrors, WithObserver(o))
		w := newGateWorker()
		workers := river.NewWorkers()
		river.AddWorker(workers, w)
		driver, schema := newDriver(t)
		worker := startClient(t, driver, clientConfig(t, r, schema, workers, 5, testPoll))
		operator, err := river.NewClient(driver, &river.Config{Schema: schema, Logger: quietLogs})
		if err != nil {
			t.Fatal(err)
		}
		return worker, operator, w, o, r
	}
	for _, mode := range []string{"ctx", "ignore"} {
		t.Run("Running/"+mode, func(t *testing.T) {
			worker, operator, w, o, r := setup(t)
			ins, err := worker.Insert(context.Background(), gateArgs{Mode: mode}, nil)
			if err != nil {
				t.Fatal(err)
			}
			w.waitRunning(t)
			if _, err := operator.JobCancel(context.Background(), ins.Job.ID); err != nil {
				t.Fatalf("JobCancel: %v", err)
			}
			if mode == "ignore" {
				// Let the cancellation reach the running client first.
				time.Sleep(2500 * time.Millisecond)
				close(w.release)
			}
			waitState(t, worker, ins.Job.ID, rivertype.JobStateCancelled, 30*time.Second)
			waitPending(t, r, 10*time.Second)
			if len(ended(o)) != 1 || ended(o)[0].Outcome() != "permanent" {
				t.Fatalf("observer heard %+v for a job River cancelled, want one permanent", ended(o))
			}
			// The engine's cancel reads as every adapter tells it: an
			// *observe.CancelledError with the text River stored.
			job, err := worker.JobGet(context.Background(), ins.Job.ID)
			if err != nil || len(job.Errors) == 0 {
				t.Fatalf("JobGet: %v, %d errors stored", err, len(job.Errors))
			}
			stored := job.Errors[len(job.Errors)-1].Error
			var ce *observe.CancelledError
			got := ended(o)[0].Err
			if !errors.As(got, &ce) || !errors.Is(got, observe.ErrCancelled) || !errors.Is(got, rivertype.ErrJobCancelledRemotely) || got.Error() != stored {
				t.Errorf("observer told error %T %q, want an *observe.CancelledError reading %q, the text River stored", got, got, stored)
			}
		})
	}
	t.Run("Waiting", func(t *testing.T) {
		worker, operator, _, o, r := setup(t)
		ins, err := worker.Insert(context.Background(), gateArgs{Mode: "fail"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, worker, ins.Job.ID, rivertype.JobStateRetryable, 30*time.Second)
		if _, err := operator.JobCancel(context.Background(), ins.Job.ID); err != nil {
			t.Fatalf("JobCancel: %v", err)
		}
		waitState(t, worker, ins.Job.ID, rivertype.JobStateCancelled, 30*time.Second)
		// River cancels a waiting job without running anything of the
		// Retrier's: the observer's last word stays the retry it was told.
		if len(ended(o)) != 1 || ended(o)[0].Outcome() != "retry" || r.Pending() != 0 {
			t.Fatalf("observer heard %+v, Pending %d; want the one retry and nothing pending", ended(o), r.Pending())
		}
	})
}

func TestRemoteCancel(t *testing.T) {
	t.Run("postgres", func(t *testing.T) { remoteCancel(t, postgresDriver) })
	t.Run("sqlite", func(t *testing.T) { remoteCancel(t, sqliteDriver) })
}

// River's rescuer calls NextRetry with the row it read for a stuck job, a
// row the middleware never saw: it gets the rule's delay for the attempt
// (neither River's default nor a time in the past), and never a decision
// taken for a live attempt of the same job.
func TestRescuedJob(t *testing.T) {
	t.Run("RowCopyGetsNoDecision", func(t *testing.T) {
		r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Minute)), 5))
		live := &rivertype.JobRow{ID: 5, Attempt: 2, MaxAttempts: 5}
		_ = r.Work(context.Background(), live, func(context.Context) error { return backoff.RetryAfter(errBoom, time.Hour) })
		rescued := *live
		if got := r.NextRetry(&rescued).Sub(base); got != time.Minute {
			t.Fatalf("the rescuer's copy of the row got +%v, want the rule's +1m", got)
		}
		if got := r.NextRetry(live).Sub(base); got != time.Hour {
			t.Fatalf("the live attempt got +%v, want its own +1h", got)
		}
	})
	t.Run("Rescuer", func(t *testing.T) {
		pool, schema := postgresDB(t)
		driver := riverpgxv5.New(pool)
		r, _ := New(mustRule(t, backoff.Must(backoff.Fixed(time.Hour)), 3), quietErrors)
		w := newGateWorker()
		workers := river.NewWorkers()
		river.AddWorker(workers, w)
		// The worker's client never leads, so its own rescuer never runs;
		// the second client leads and rescues as it starts.
		cfg := clientConfig(t, r, schema, workers, 5, testPoll)
		cfg.LeaderElectionDisabled = true
		worker := startClient(t, driver, cfg)
		defer close(w.release)
		ins, err := worker.Insert(context.Background(), gateArgs{Mode: "ignore"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		w.waitRunning(t)
		time.Sleep(1500 * time.Millisecond) // longer than RescueStuckJobsAfter below
		rcfg := clientConfig(t, r, schema, workers, 1, testPoll)
		rcfg.Queues = map[string]river.QueueConfig{"rebound_rescuer": {MaxWorkers: 1}}
		rcfg.JobTimeout = 500 * time.Millisecond
		rcfg.RescueStuckJobsAfter = time.Second
		before := time.Now()
		startClient(t, driver, rcfg)
		job := waitState(t, worker, ins.Job.ID, rivertype.JobStateRetryable, 30*time.Second)
		if n := len(job.Errors); n != 1 || !strings.Contains(job.Errors[0].Error, "rescued") {
			t.Fatalf("errors %+v, want River's rescue note", job.Errors)
		}
		if d := job.ScheduledAt.Sub(before); d < time.Hour || d > time.Hour+time.Minute {
			t.Fatalf("rescued job scheduled %v ahead, want the rule's hour for attempt %d", d, job.Attempt)
		}
		if r.Pending() != 0 {
			t.Fatalf("Pending = %d, want 0", r.Pending())
		}
	})
}
