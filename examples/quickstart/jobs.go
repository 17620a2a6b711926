package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
)

// job is one of the jobs every engine runs. Its key names it on every
// engine and keys its jitter, so its planned schedule is the same everywhere.
type job struct {
	key   string
	about string
}

var jobs = []job{
	{"flaky", "fails twice, then succeeds"},
	{"always-fails", "fails on every run"},
	{"permanent", "fails with backoff.Permanent"},
}

// work is the jobs' handler, the same on every engine: what attempt number
// attempt of the job called key does.
func work(key string, attempt int) error {
	switch key {
	case "flaky":
		if attempt <= 2 {
			return fmt.Errorf("upstream timed out (run %d)", attempt)
		}
		return nil
	case "always-fails":
		return errors.New("upstream is down")
	case "permanent":
		return backoff.Permanent(errors.New("payload is invalid"))
	}
	return backoff.Permanent(fmt.Errorf("unknown job %q", key))
}

// attemptRun is one run of one job, as its handler saw it.
type attemptRun struct {
	attempt    int
	start, end time.Time
	err        error
}

// ref names a job on one engine.
type ref struct{ engine, key string }

// recorder runs the handlers and watches the engines: it times every run
// and, as an observe.Observer plugged into every adapter, prints each
// attempt as it ends and keeps the decision rebound made for it.
type recorder struct {
	out io.Writer

	mu        sync.Mutex
	t0        time.Time
	ids       map[ref]string // (engine, engine's job ID) -> job key
	runs      map[ref][]attemptRun
	decisions map[ref]map[int]backoff.Decision
}

func newRecorder(out io.Writer) *recorder {
	return &recorder{
		out:       out,
		t0:        time.Now(),
		ids:       map[ref]string{},
		runs:      map[ref][]attemptRun{},
		decisions: map[ref]map[int]backoff.Decision{},
	}
}

// name tells the recorder that engine knows the job called key as id.
func (r *recorder) name(engine, id, key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids[ref{engine, id}] = key
}

// start sets the time progress lines count from.
func (r *recorder) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t0 = time.Now()
}

// handle runs attempt number attempt of the job called key on engine and
// times it. The end time is taken before the adapter decides anything, so
// a measured gap is never shorter than the real one.
func (r *recorder) handle(engine, key string, attempt int) error {
	start := time.Now()
	err := work(key, attempt)
	end := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	k := ref{engine, key}
	r.runs[k] = append(r.runs[k], attemptRun{attempt: attempt, start: start, end: end, err: err})
	return err
}

// engineName is the name the quickstart shows for an adapter's system.
func engineName(system string) string {
	if system == "rebound" {
		return "native"
	}
	return system
}

// AttemptStarted implements observe.Observer.
func (r *recorder) AttemptStarted(ctx context.Context, _ observe.Attempt) context.Context {
	return ctx
}

// AttemptEnded implements observe.Observer: it prints the attempt and keeps
// the decision.
func (r *recorder) AttemptEnded(_ context.Context, a observe.Attempt, res observe.Result) {
	engine := engineName(a.System)
	r.mu.Lock()
	defer r.mu.Unlock()
	key, ok := r.ids[ref{engine, a.JobID}]
	if !ok {
		key = a.JobID
	}
	k := ref{engine, key}
	if res.Err != nil {
		if r.decisions[k] == nil {
			r.decisions[k] = map[int]backoff.Decision{}
		}
		r.decisions[k][a.Number] = res.Decision
	}
	var what string
	switch {
	case res.Err == nil:
		what = "succeeded"
	case res.Decision.Outcome == backoff.OutcomeRetry:
		what = fmt.Sprintf("failed: %v; retry in %s", res.Err, ms(res.Decision.Delay))
		if !res.FireAt.IsZero() {
			// Where the engine stores the fire time coarsely (asynq: whole
			// seconds), the adapter's fire time shows the rounding.
			what += fmt.Sprintf(", due at %s", ms(res.FireAt.Sub(r.t0)))
		}
	case res.Decision.Outcome == backoff.OutcomePermanent:
		what = fmt.Sprintf("failed: %v; permanent, no retry", res.Err)
	default:
		what = fmt.Sprintf("failed: %v; attempts used up", res.Err)
	}
	fmt.Fprintf(r.out, "%7s  %-6s  %-12s  attempt %d/%d  %s\n",
		ms(time.Since(r.t0)), engine, key, a.Number, a.MaxAttempts, what)
}

// ms rounds d to the millisecond for display.
func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
