package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// script is what one job does on each attempt. The suite encodes it as the
// job's payload, so the handler it gives the harness needs no other state.
type script struct {
	// Nonce makes every payload unique.
	Nonce int64 `json:"n"`
	// Fail is how many attempts fail before one succeeds.
	Fail int `json:"fail,omitempty"`
	// Always makes every attempt fail.
	Always bool `json:"always,omitempty"`
	// Permanent marks every failure with backoff.Permanent.
	Permanent bool `json:"permanent,omitempty"`
	// Panic makes every failing attempt panic instead of returning.
	Panic bool `json:"panic,omitempty"`
	// After attaches a backoff.RetryAfter hint to every failure.
	After time.Duration `json:"after,omitempty"`
}

// fails reports whether attempt n (1-based, as counted by the suite) fails.
func (s script) fails(n int) bool { return s.Always || s.Permanent || n <= s.Fail }

// outcome runs attempt n: it returns nil, returns the scripted error, or
// panics with it.
func (s script) outcome(n int) error {
	if !s.fails(n) {
		return nil
	}
	err := fmt.Errorf("conformance: scripted failure of attempt %d", n)
	switch {
	case s.Permanent:
		err = backoff.Permanent(err)
	case s.After > 0:
		err = backoff.RetryAfter(err, s.After)
	}
	if s.Panic {
		panic(err)
	}
	return err
}

// expect returns how many runs a job with this script gets under a cap of
// maxAttempts, and the state it must end in.
func (s script) expect(maxAttempts int) (runs int, final State) {
	switch {
	case s.Permanent:
		return 1, StateFailed
	case s.Always || s.Fail >= maxAttempts:
		return maxAttempts, StateFailed
	}
	return s.Fail + 1, StateCompleted
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

// run is one recorded attempt.
type run struct {
	reported   int       // Job.Attempt as the harness reported it
	start, end time.Time // as seen by the handler
	ended      bool
	err        error // what the attempt returned or panicked with
	payload    []byte
}

// recorder is the handler the suite gives a harness: it runs each job's
// script and records every attempt.
type recorder struct {
	mu       sync.Mutex
	jobs     map[string][]run
	problems []string
	nonce    int64
}

func newRecorder() *recorder { return &recorder{jobs: make(map[string][]run)} }

// handle is the Config.Handler of every worker the suite starts.
func (r *recorder) handle(ctx context.Context, job Job) (err error) {
	start := time.Now()
	payload := bytes.Clone(job.Payload)
	r.mu.Lock()
	idx := len(r.jobs[job.ID])
	r.jobs[job.ID] = append(r.jobs[job.ID], run{reported: job.Attempt, start: start, payload: payload})
	r.mu.Unlock()

	n := idx + 1 // the suite counts runs itself; Job.Attempt is checked, not trusted
	s, derr := decodeScript(payload)
	defer func() {
		rec := recover()
		end := time.Now()
		r.mu.Lock()
		rr := &r.jobs[job.ID][idx]
		rr.end, rr.ended, rr.err = end, true, err
		if rec != nil {
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
	return s.outcome(n)
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

// next returns a fresh nonce.
func (r *recorder) next() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nonce++
	return r.nonce
}
