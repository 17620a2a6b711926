package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// ReferenceHarness is the reference [Harness]: an in-memory engine on the
// core, one goroutine per attempt and one time.Timer per scheduled retry.
// It passes the suite, and it is the example of how to write a harness:
// Start builds a worker around cfg and tears it down with t.Cleanup,
// HookDelay calls the very function the worker calls when an attempt
// fails, and Limits states what the engine promises.
//
// Build one with [Reference] or [ReferenceSynctest].
type ReferenceHarness struct {
	synctest bool
	fault    fault // a deliberate defect, for the suite's own tests
}

// fault is a defect the suite's own tests plant in the reference engine to
// prove that the check meant to catch it does.
type fault int

const (
	faultNone           fault = iota
	faultAttemptOffBy1        // reports Job.Attempt 0-based
	faultCapPlusOne           // allows one run more than MaxAttempts
	faultEarly                // fires retries at half their delay
	faultLate                 // fires retries well after their delay
	faultUnkeyed              // keys every job's jitter by the same key
	faultRetryPermanent       // retries errors marked backoff.Permanent
	faultIgnoreHint           // ignores backoff.RetryAfter hints
	faultDropPanicked         // loses a job whose handler panicked
	faultMangle               // hands the handler a changed payload
	faultSmear                // spreads retries by itself, as a slow engine would
)

// Reference returns the reference harness on the real clock. It declares
// exact resolution and a lateness of 100 ms: Go timers fire within a
// millisecond on an idle machine, and the rest is room for a busy
// two-core CI runner under the race detector.
func Reference() *ReferenceHarness { return &ReferenceHarness{} }

// ReferenceSynctest returns the reference harness for testing/synctest:
// [Run] runs each check in its own bubble, where the engine's timers fire
// on fake time exactly when due, so it declares zero lateness and the
// whole suite takes next to no real time.
func ReferenceSynctest() *ReferenceHarness { return &ReferenceHarness{synctest: true} }

// Name returns "reference" or "reference/synctest".
func (h *ReferenceHarness) Name() string {
	if h.synctest {
		return "reference/synctest"
	}
	return "reference"
}

// Synctest reports whether the harness runs in a testing/synctest bubble;
// see [SynctestHarness].
func (h *ReferenceHarness) Synctest() bool { return h.synctest }

// Limits returns exact resolution, and a lateness of 100 ms on the real
// clock or 0 in a bubble.
func (h *ReferenceHarness) Limits() Limits {
	if h.synctest {
		return Limits{}
	}
	return Limits{Lateness: 100 * time.Millisecond}
}

// HookDelay returns what the engine's retry hook decides for the job after
// failed attempt number attempt.
func (h *ReferenceHarness) HookDelay(cfg Config, id string, attempt int, err error) (time.Duration, bool) {
	return h.hook(cfg.Rule, id, attempt, err)
}

// hook is the engine's retry hook: the rule's decision, with the job's
// jitter keyed by its ID. The worker and HookDelay both call it.
func (h *ReferenceHarness) hook(rule backoff.Rule, id string, attempt int, err error) (time.Duration, bool) {
	src := backoff.Key(id)
	switch h.fault {
	case faultUnkeyed:
		src = backoff.Key("reference")
	case faultCapPlusOne:
		rule, _ = backoff.NewRule(rule.Policy(), rule.MaxAttempts()+1)
	case faultRetryPermanent:
		if backoff.IsPermanent(err) {
			err = errors.New(err.Error())
		}
	case faultIgnoreHint:
		if _, ok := backoff.RetryAfterHint(err); ok {
			err = errors.New(err.Error())
		}
	}
	d := rule.Decide(attempt, err, src)
	return d.Delay, d.Retry()
}

// Start starts an in-memory worker for cfg. Every job runs at once in its
// own goroutine; a failed attempt that the hook retries is run again by a
// timer. t.Cleanup stops the timers and waits for running attempts.
func (h *ReferenceHarness) Start(t testing.TB, cfg Config) Engine {
	if cfg.Handler == nil {
		t.Fatalf("conformance: reference: Config.Handler is nil, want the job body")
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &refEngine{h: h, cfg: cfg, ctx: ctx, jobs: make(map[string]*refJob), timers: make(map[*time.Timer]struct{})}
	t.Cleanup(func() {
		cancel()
		e.close()
	})
	return e
}

// refEngine is the reference engine: the state of every job in a map.
type refEngine struct {
	h   *ReferenceHarness
	cfg Config
	ctx context.Context

	mu     sync.Mutex
	seq    int64
	jobs   map[string]*refJob
	timers map[*time.Timer]struct{}
	closed bool
	wg     sync.WaitGroup // running attempts and pending timers
}

type refJob struct {
	id       string
	payload  []byte
	attempts int // runs started
	state    State
}

// Enqueue stores the job and runs its first attempt at once.
func (e *refEngine) Enqueue(ctx context.Context, payload []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return "", errors.New("conformance: reference: Enqueue on a stopped engine")
	}
	e.seq++
	j := &refJob{id: strconv.FormatInt(e.seq, 10), payload: bytes.Clone(payload)}
	e.jobs[j.id] = j
	e.wg.Add(1)
	go e.run(j)
	return j.id, nil
}

// State returns the job's state.
func (e *refEngine) State(_ context.Context, id string) (State, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, ok := e.jobs[id]
	if !ok {
		return StatePending, fmt.Errorf("conformance: reference: no job with ID %q", id)
	}
	return j.state, nil
}

// run runs one attempt of j and decides what follows. The caller has done
// e.wg.Add(1) for it.
func (e *refEngine) run(j *refJob) {
	defer e.wg.Done()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	j.attempts++
	n := j.attempts
	e.mu.Unlock()

	reported := n
	if e.h.fault == faultAttemptOffBy1 {
		reported = n - 1
	}
	payload := bytes.Clone(j.payload)
	if e.h.fault == faultMangle {
		payload = append(payload, ' ')
		payload[0] = '['
	}
	panicked, err := e.call(Job{ID: j.id, Attempt: reported, Payload: payload})
	delay, retry := e.h.hook(e.cfg.Rule, j.id, n, err)

	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case err == nil:
		j.state = StateCompleted
		return
	case panicked && e.h.fault == faultDropPanicked:
		return // the job stays pending for ever: the defect under test
	case !retry:
		j.state = StateFailed
		return
	case e.closed:
		return
	}
	switch e.h.fault {
	case faultEarly:
		delay /= 2
	case faultLate:
		delay += 2*e.h.Limits().Lateness + 5*time.Millisecond
	case faultSmear:
		window, _, _ := herdWindow(e.h.Limits())
		id, _ := strconv.Atoi(j.id)
		delay += window * time.Duration(id%10) / 10
	}
	e.wg.Add(1)
	var tm *time.Timer
	tm = time.AfterFunc(delay, func() {
		e.mu.Lock()
		delete(e.timers, tm)
		e.mu.Unlock()
		e.run(j)
	})
	e.timers[tm] = struct{}{}
}

// call runs the handler, turning a panic into the attempt's error.
func (e *refEngine) call(job Job) (panicked bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked, err = true, fmt.Errorf("conformance: reference: handler panicked: %v", r)
		}
	}()
	return false, e.cfg.Handler(e.ctx, job)
}

// close stops every pending timer and waits for running attempts.
func (e *refEngine) close() {
	e.mu.Lock()
	e.closed = true
	for tm := range e.timers {
		if tm.Stop() {
			e.wg.Done()
		}
		delete(e.timers, tm)
	}
	e.mu.Unlock()
	e.wg.Wait()
}
