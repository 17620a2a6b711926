package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

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
	// discarded reports that the run returned after its context was
	// cancelled: the engine may count it whatever it returned.
	discarded bool
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
	// dep is the dependency Dep scripts call (the Breaker check's); set
	// before the worker starts.
	dep *dependency
	// byID holds the scripts of look-alike jobs, whose payloads are all
	// empty: the script is found by the job ID the engine hands the
	// handler. assigned has a channel per ID, closed once its script is
	// in byID (Enqueue returned the ID).
	byID     map[string]script
	assigned map[string]chan struct{}
}

func newRecorder() *recorder {
	return &recorder{jobs: make(map[string][]run), gate: make(chan struct{}),
		byID: map[string]script{}, assigned: map[string]chan struct{}{}}
}

// assign records the script of the look-alike job with the given ID.
func (r *recorder) assign(id string, s script) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID[id] = s
	if ch, ok := r.assigned[id]; ok {
		close(ch)
		return
	}
	ch := make(chan struct{})
	close(ch)
	r.assigned[id] = ch
}

// scriptOf returns the script of the look-alike job with the given ID,
// waiting for Enqueue to have returned it (a job may start first).
func (r *recorder) scriptOf(id string) (script, error) {
	r.mu.Lock()
	ch, ok := r.assigned[id]
	if !ok {
		ch = make(chan struct{})
		r.assigned[id] = ch
	}
	r.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(blockBound):
		return script{}, fmt.Errorf("the handler got job ID %q with an empty payload, and no Enqueue of a look-alike job returned that ID within %v; want Job.ID to be the string Enqueue returned", id, blockBound)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[id], nil
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
	var s script
	var derr error
	if len(payload) == 0 {
		s, derr = r.scriptOf(job.ID) // a look-alike job: its script goes by its ID
	} else {
		s, derr = decodeScript(payload)
	}
	defer func() {
		rec := recover()
		end := time.Now()
		r.mu.Lock()
		rr := &r.jobs[job.ID][idx]
		rr.end, rr.ended, rr.err = end, true, err
		rr.overran = !deadline.IsZero() && !end.Before(deadline)
		rr.discarded = errors.Is(ctx.Err(), context.Canceled)
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
	if s.Dep {
		if r.dep == nil {
			return errors.New("conformance: a Dep script ran without the Breaker check's dependency")
		}
		return r.dep.call()
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
