package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// script is what one job does on each attempt. The suite encodes it as the
// job's payload, so the handler it gives the harness needs no other state.
// Runs are counted by the suite itself (n = 1 for the first run the handler
// sees), whatever attempt number the engine reports.
type script struct {
	// Nonce makes every payload unique.
	Nonce int64 `json:"n"`
	// Fail is how many runs fail before one succeeds.
	Fail int `json:"fail,omitempty"`
	// Always makes every run fail.
	Always bool `json:"always,omitempty"`
	// Permanent marks every failure with backoff.Permanent.
	Permanent bool `json:"permanent,omitempty"`
	// Panic makes every failing run panic instead of returning.
	Panic bool `json:"panic,omitempty"`
	// After attaches a backoff.RetryAfter hint to every failure.
	After time.Duration `json:"after,omitempty"`
	// Hostile makes every failure return the named hostile error (see
	// hostileError) instead of the scripted one.
	Hostile string `json:"hostile,omitempty"`
	// Block makes every failing run wait until its context is done (a
	// restart or a cancel), then return the context's error.
	Block bool `json:"block,omitempty"`
	// Overrun makes every failing run ignore its context and return only
	// after this long: nil (a late success), or with OverrunErr the
	// scripted error.
	Overrun    time.Duration `json:"overrun,omitempty"`
	OverrunErr bool          `json:"overrunErr,omitempty"`
	// Stale makes the first run wait for the recorder's gate and then
	// succeed, and every later run fail permanently: the Reclaim check's
	// job, whose first run is made stale while it waits.
	Stale bool `json:"stale,omitempty"`
}

// fails reports whether run n fails.
func (s script) fails(n int) bool {
	if s.Stale {
		return n > 1
	}
	return s.Always || s.Permanent || n <= s.Fail
}

// err returns the error run n ends with as the script sees it (nil for a
// success), without panicking, blocking or sleeping: what the suite
// computes its expected decisions from.
func (s script) err(n int) error {
	if !s.fails(n) {
		return nil
	}
	if s.Hostile != "" {
		return hostileError(s.Hostile)
	}
	var err error = &scriptedError{n: n}
	switch {
	case s.Permanent || s.Stale:
		err = backoff.Permanent(err)
	case s.After > 0:
		err = backoff.RetryAfter(err, s.After)
	}
	return err
}

// run runs attempt n of the script with the handler's context.
func (s script) run(ctx context.Context, n int, rec *recorder) error {
	if s.Stale && n == 1 {
		select {
		case <-rec.gate:
		case <-time.After(blockBound):
			return errors.New("conformance: the stale run was never released")
		}
		return nil
	}
	err := s.err(n)
	if err == nil {
		return nil
	}
	switch {
	case s.Block:
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(blockBound):
			return errNotCancelled
		}
	case s.Overrun > 0:
		time.Sleep(s.Overrun)
		if !s.OverrunErr {
			return nil
		}
	case s.Panic:
		panic(err)
	}
	return err
}

// maxRuns is the most runs of one job the handler goes along with.
const maxRuns = 1000

// blockBound is how long a blocked run waits for its context to be done
// before giving up on the engine.
const blockBound = 15 * time.Second

// errNotCancelled ends a blocked run whose context the engine never
// cancelled.
var errNotCancelled = fmt.Errorf("conformance: the run's context was not cancelled within %v", blockBound)

// scriptedError is the failure of a scripted run.
type scriptedError struct{ n int }

func (e *scriptedError) Error() string {
	return fmt.Sprintf("conformance: scripted failure of attempt %d", e.n)
}

// expect returns how many runs a job with this script gets under a cap of
// maxAttempts, and the state it must end in.
func (s script) expect(maxAttempts int) (runs int, final State) {
	switch {
	case s.Stale:
		return 2, StateFailed
	case s.Permanent:
		return 1, StateFailed
	case s.Always || s.Fail >= maxAttempts:
		return maxAttempts, StateFailed
	}
	return s.Fail + 1, StateCompleted
}

// describe summarises the script for violations.
func (s script) describe() string {
	var what string
	switch {
	case s.Stale:
		return "is made stale on its first run, then fails permanently"
	case s.Permanent:
		return "fails permanently"
	case s.Always:
		what = "always fails"
	case s.Fail == 0:
		return "succeeds"
	default:
		what = fmt.Sprintf("fails %s, then succeeds", times(s.Fail))
	}
	switch {
	case s.Panic:
		what = strings.Replace(what, "fails", "panics", 1)
	case s.Block:
		what = strings.Replace(what, "fails", "blocks until cancelled", 1)
	case s.Overrun > 0 && s.OverrunErr:
		what = strings.Replace(what, "fails", fmt.Sprintf("outlives its timeout (runs %v) and fails", s.Overrun), 1)
	case s.Overrun > 0:
		what = strings.Replace(what, "fails", fmt.Sprintf("outlives its timeout (runs %v) and returns nil", s.Overrun), 1)
	case s.Hostile != "":
		what += " with " + hostileKinds[s.Hostile]
	case s.After > 0:
		what += fmt.Sprintf(" with a retry-after hint of %v", s.After)
	}
	return what
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func (s script) encode() []byte {
	b, err := json.Marshal(s)
	if err != nil { // a struct of plain fields always marshals
		panic(err)
	}
	return b
}

func decodeScript(b []byte) (script, error) {
	var s script
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return script{}, fmt.Errorf("payload %q is not the one the suite enqueued (%v)", b, err)
	}
	return s, nil
}

// run is one recorded attempt, as the handler saw it.
type run struct {
	reported   int       // Job.Attempt as the harness reported it
	start, end time.Time // as seen by the handler
	ended      bool
	err        error // what the attempt returned or panicked with
	panicked   bool
	payload    []byte
	// ev is the observer's record of this attempt, found in the handler's
	// context; nil when the handler did not get the context AttemptStarted
	// returned.
	ev *event
	// deadline is the handler's context deadline; zero if it had none.
	deadline time.Time
	// overran reports that the run returned after its context's deadline.
	overran bool
	// interrupt is set by a check that cuts the run short with a restart:
	// the run must not count as an attempt.
	interrupt bool
	// stale is set by a check that has the run's job reclaimed while it
	// runs: its outcome must not be applied.
	stale bool
}

// recorder is the handler the suite gives a harness: it runs each job's
// script and records every attempt.
type recorder struct {
	mu       sync.Mutex
	jobs     map[string][]run
	problems []string
	nonce    int64
	// gate releases the first runs of Stale scripts.
	gate chan struct{}
}

func newRecorder() *recorder {
	return &recorder{jobs: make(map[string][]run), gate: make(chan struct{})}
}

// handle is the Config.Handler of every worker the suite starts.
func (r *recorder) handle(ctx context.Context, job Job) (err error) {
	start := time.Now()
	payload := bytes.Clone(job.Payload)
	ev, _ := ctx.Value(witnessKey{}).(*event)
	deadline, _ := ctx.Deadline()
	r.mu.Lock()
	idx := len(r.jobs[job.ID])
	r.jobs[job.ID] = append(r.jobs[job.ID], run{reported: job.Attempt, start: start, payload: payload, ev: ev, deadline: deadline})
	r.mu.Unlock()

	n := idx + 1 // the suite counts runs itself; Job.Attempt is checked, not trusted
	if n > maxRuns {
		// A runaway engine (retrying at once, for ever) is stopped here,
		// so that the suite ends and says so.
		r.mu.Lock()
		if n == maxRuns+1 {
			r.problems = append(r.problems, fmt.Sprintf("job %s ran more than %d times; stopping it with a success", job.ID, maxRuns))
		}
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			rr := &r.jobs[job.ID][idx]
			rr.end, rr.ended = time.Now(), true
			r.mu.Unlock()
		}()
		return nil
	}
	s, derr := decodeScript(payload)
	defer func() {
		rec := recover()
		end := time.Now()
		r.mu.Lock()
		rr := &r.jobs[job.ID][idx]
		rr.end, rr.ended, rr.err = end, true, err
		rr.overran = !deadline.IsZero() && !end.Before(deadline)
		if rec != nil {
			rr.panicked = true
			if e, ok := rec.(error); ok {
				rr.err = e
			} else {
				rr.err = fmt.Errorf("panic: %v", rec)
			}
		}
		r.mu.Unlock()
		if rec != nil {
			panic(rec)
		}
	}()
	if derr != nil {
		r.mu.Lock()
		r.problems = append(r.problems, fmt.Sprintf("job %s: %v", job.ID, derr))
		r.mu.Unlock()
		return backoff.Permanent(derr)
	}
	return s.run(ctx, n, r)
}

// runs returns a copy of the job's recorded attempts.
func (r *recorder) runs(id string) []run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]run(nil), r.jobs[id]...)
}

// count returns how many attempts of the job have started.
func (r *recorder) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.jobs[id])
}

// mark sets a flag on run i (0-based) of the job.
func (r *recorder) mark(id string, i int, f func(*run)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i < len(r.jobs[id]) {
		f(&r.jobs[id][i])
	}
}

// release lets the first runs of Stale scripts return.
func (r *recorder) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.gate:
	default:
		close(r.gate)
	}
}

// next returns a fresh nonce.
func (r *recorder) next() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nonce++
	return r.nonce
}
