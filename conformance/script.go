package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	// Dep makes every run call the Breaker check's dependency: it fails
	// (not permanently) while the dependency is down and succeeds once it
	// is back. How many runs that takes is the breaker's business, so the
	// suite does not count them.
	Dep bool `json:"dep,omitempty"`
	// Hold makes every run wait this long before it ends as scripted, so
	// that runs of jobs enqueued together overlap and end in another order
	// than they started (the LookAlike check's jobs).
	Hold time.Duration `json:"hold,omitempty"`
	// Steps, when not empty, scripts each run on its own: run n ends as
	// Steps[n-1] says, and every run past the last step succeeds. The
	// fields above that say how failures fail (Permanent, Panic, After,
	// Hostile) are then unused. The Mix check's jobs.
	Steps []step `json:"steps,omitempty"`
}

// step is how one run of a Steps script ends.
type step struct {
	// Do is "ok" (a success), "fail", "permanent" (marked
	// backoff.Permanent), "panic" (the handler panics with the scripted
	// error) or "hostile" (fails with the hostile error Hostile names).
	Do string `json:"do"`
	// After attaches a backoff.RetryAfter hint to a "fail".
	After   time.Duration `json:"after,omitempty"`
	Hostile string        `json:"hostile,omitempty"`
	// Overrun, on an "overrun" or "overrun-fail", is how long the run
	// ignores its context before it returns nil or the scripted error:
	// past Config.Timeout, so the engine counts a failure either way.
	Overrun time.Duration `json:"overrun,omitempty"`
}

// The kinds of step.
const (
	stepOK        = "ok"
	stepFail      = "fail"
	stepPermanent = "permanent"
	stepPanic     = "panic"
	stepHostile   = "hostile"
	// stepOverrun and stepOverrunFail outlive the attempt's timeout and
	// then return nil or the scripted error.
	stepOverrun     = "overrun"
	stepOverrunFail = "overrun-fail"
)

// overrun returns the longest time a run of the script outlives its
// timeout by design.
func (s script) overrun() time.Duration {
	d := s.Overrun
	for _, st := range s.Steps {
		d = max(d, st.Overrun)
	}
	return d
}

// step returns the step of run n, and whether the script has one.
func (s script) step(n int) (step, bool) {
	if len(s.Steps) == 0 {
		return step{}, false
	}
	if n < 1 || n > len(s.Steps) {
		return step{Do: stepOK}, true
	}
	return s.Steps[n-1], true
}

// fails reports whether run n fails.
func (s script) fails(n int) bool {
	if st, ok := s.step(n); ok {
		return st.Do != stepOK
	}
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
	if st, ok := s.step(n); ok {
		var err error = &scriptedError{n: n}
		switch st.Do {
		case stepHostile:
			return hostileError(st.Hostile)
		case stepPermanent:
			return backoff.Permanent(err)
		case stepFail:
			if st.After > 0 {
				return backoff.RetryAfter(err, st.After)
			}
		}
		return err
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
	if s.Hold > 0 {
		time.Sleep(s.Hold)
	}
	err := s.err(n)
	if err == nil {
		return nil
	}
	st, _ := s.step(n)
	switch {
	case st.Do == stepPanic:
		panic(err)
	case st.Do == stepOverrun || st.Do == stepOverrunFail:
		time.Sleep(st.Overrun)
		if st.Do == stepOverrun {
			return nil
		}
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
	if len(s.Steps) > 0 {
		for n := 1; n <= maxAttempts; n++ {
			st, _ := s.step(n)
			switch st.Do {
			case stepOK:
				return n, StateCompleted
			case stepPermanent:
				return n, StateFailed
			}
		}
		return maxAttempts, StateFailed
	}
	switch {
	case s.Dep:
		return 1, StateCompleted // at least; see worker.open
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
	if len(s.Steps) > 0 {
		parts := make([]string, 0, len(s.Steps)+1)
		for _, st := range s.Steps {
			switch {
			case st.Do == stepHostile:
				parts = append(parts, "fails with "+hostileKinds[st.Hostile])
			case st.Do == stepFail && st.After > 0:
				parts = append(parts, fmt.Sprintf("fails with a retry-after hint of %v", st.After))
			case st.Do == stepFail:
				parts = append(parts, "fails")
			case st.Do == stepPermanent:
				parts = append(parts, "fails permanently")
			case st.Do == stepPanic:
				parts = append(parts, "panics")
			case st.Do == stepOverrun:
				parts = append(parts, fmt.Sprintf("outlives its timeout (runs %v) and returns nil", st.Overrun))
			case st.Do == stepOverrunFail:
				parts = append(parts, fmt.Sprintf("outlives its timeout (runs %v) and fails", st.Overrun))
			default:
				parts = append(parts, "succeeds")
			}
		}
		if last := s.Steps[len(s.Steps)-1].Do; last != stepOK && last != stepPermanent {
			parts = append(parts, "then succeeds")
		}
		return "runs " + strings.Join(parts, ", ")
	}
	var what string
	switch {
	case s.Dep:
		return "calls the dependency: fails while it is down, then succeeds"
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
