// Package reboundrivertest helps a user's own tests check the retry story of
// a River worker under a rebound rule, without a running client and without
// sleeping: "this job failed attempt 2 and its next run is at 12:00:00.750".
//
// The guide to testing, with an example of each kit: https://github.com/rebound-go/rebound/blob/main/docs/testing.md
//
// A [Worker] wraps River's own test worker (rivertest.Worker), so each
// attempt runs through River's real executor in the test's transaction,
// with a [reboundriver.Retrier] installed as that package documents: the
// middleware decides, River asks NextRetry, and the job row River stores
// afterwards is what the test reads. Time is a [Clock] the test controls:
// River and the Retrier both read it, so a retry's fire time is exactly
// the clock plus the rule's delay, and [Worker.WorkJob] moves the clock to
// the job's fire time before running it, as River would have waited.
// Everything the Retrier reports goes to a [reboundtest.Recorder].
//
//	w := reboundrivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, &SyncWorker{}, rule)
//	res, err := w.Work(ctx, t, tx, SyncArgs{Account: 42}, nil)
//	// res.Event.Result.Outcome() == "retry", res.NextRun() == w.Clock.Now().Add(delay)
//	res, err = w.WorkJob(ctx, t, tx, res.Job) // the second attempt, at its fire time
//	// w.Recorder.Story(id) == "1 retry 1s\n2 success"
package reboundrivertest

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

	reboundriver "github.com/rebound-go/rebound/adapters/river"
	"github.com/rebound-go/rebound/adapters/river/internal/riverclock"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/reboundtest"
)

// Clock is the time a [Worker]'s River executor and Retrier read. It stands
// still until the test moves it (or [Worker.WorkJob] moves it to a job's
// fire time). It implements rivertype.TimeGenerator, River's own way of
// stubbing time in tests. It is safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock set to now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NowOrNil returns the clock's time; River stores it as the time of what
// it records (attempted_at, finalized_at).
func (c *Clock) NowOrNil() *time.Time {
	now := c.Now()
	return &now
}

// Set moves the clock to t, forward or back.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

var _ rivertype.TimeGenerator = (*Clock)(nil)

// Worker works jobs of one kind through River's executor with a Retrier
// installed, on Clock, recording every attempt in Recorder.
type Worker[T river.JobArgs, TTx any] struct {
	// Retrier is the Retrier installed in River's config.
	Retrier *reboundriver.Retrier
	// Recorder is the Retrier's observer and give-up hook, unless the
	// options given to NewWorker name others.
	Recorder *reboundtest.Recorder
	// Clock is the time River and the Retrier read. It starts at the
	// wall-clock time NewWorker was called, rounded down to a second.
	Clock *Clock

	rt *rivertest.Worker[T, TTx]
}

// NewWorker returns a Worker for worker, built like rivertest.NewWorker
// from driver (a driver without a pool, as rivertest recommends) and
// config, the user's River configuration. A Retrier for rule and opts is
// installed in a copy of config as RetryPolicy and first in Plugins, with
// Test.Time set to the Worker's Clock. The Retrier reports to Recorder
// (WithObserver and WithGiveUp come first, so opts may name others).
func NewWorker[T river.JobArgs, TTx any](tb testing.TB, driver riverdriver.Driver[TTx], config *river.Config, worker river.Worker[T], rule backoff.Rule, opts ...reboundriver.Option) *Worker[T, TTx] {
	tb.Helper()
	rec := &reboundtest.Recorder{}
	clock := NewClock(time.Now().Truncate(time.Second))
	rec.Now = clock.Now
	r, err := reboundriver.New(rule, append([]reboundriver.Option{reboundriver.WithObserver(rec), reboundriver.WithGiveUp(rec.GiveUp)}, opts...)...)
	if err != nil {
		tb.Fatalf("reboundrivertest: %v", err)
	}
	riverclock.Set(r, clock.Now)
	cfg := &river.Config{}
	if config != nil {
		c := *config
		cfg = &c
	}
	cfg.RetryPolicy = r
	cfg.Plugins = append([]rivertype.Plugin{r}, cfg.Plugins...)
	cfg.Test.Time = clock
	return &Worker[T, TTx]{Retrier: r, Recorder: rec, Clock: clock, rt: rivertest.NewWorker(tb, driver, cfg, worker)}
}

// Result is one attempt as River stored it and the Retrier reported it.
type Result struct {
	// Job is the job row as River stored it after the attempt.
	Job *rivertype.JobRow
	// Event is the attempt as the Retrier told Recorder (when it is the
	// Worker's observer): its number, and how it ended, with the retry's
	// delay and fire time.
	Event reboundtest.Event
}

// NextRun returns when River runs the job again, the fire time it stored,
// or the zero time when the job will not run again (completed, discarded,
// cancelled).
func (r *Result) NextRun() time.Time {
	switch r.Job.State {
	case rivertype.JobStateAvailable, rivertype.JobStateRetryable, rivertype.JobStateScheduled:
		return r.Job.ScheduledAt
	}
	return time.Time{}
}

// Work inserts a job with args and opts in tx and works its first attempt
// at the clock's time. The error is rivertest's: the attempt's error when
// it failed (a snooze or a cancel is not an error), or what went wrong
// working it.
func (w *Worker[T, TTx]) Work(ctx context.Context, tb testing.TB, tx TTx, args T, opts *river.InsertOpts) (*Result, error) {
	tb.Helper()
	res, err := w.rt.Work(ctx, tb, tx, args, opts)
	return w.result(res), err
}

// WorkJob works job's next attempt in tx. When the job is due later than
// the clock's time (it waits for a retry), the clock first moves to its
// fire time, as if the test had waited for River to run it.
func (w *Worker[T, TTx]) WorkJob(ctx context.Context, tb testing.TB, tx TTx, job *rivertype.JobRow) (*Result, error) {
	tb.Helper()
	if job.ScheduledAt.After(w.Clock.Now()) {
		w.Clock.Set(job.ScheduledAt)
	}
	res, err := w.rt.WorkJob(ctx, tb, tx, job)
	return w.result(res), err
}

func (w *Worker[T, TTx]) result(res *rivertest.WorkResult) *Result {
	if res == nil {
		return nil
	}
	out := &Result{Job: res.Job}
	if ev, ok := w.Recorder.Last(strconv.FormatInt(res.Job.ID, 10)); ok {
		out.Event = ev
	}
	return out
}
