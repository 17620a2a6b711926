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
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// Errors the reference engine ends attempts with.
var (
	errShutdown     = errors.New("conformance: reference: the worker shut down while the attempt ran")
	errCancelled    = errors.New("conformance: reference: cancelled by an operator")
	errLeaseLost    = errors.New("conformance: reference: the job was reclaimed from this worker; its late outcome is discarded")
	errLeaseExpired = errors.New("conformance: reference: the attempt's lease expired and the job was reclaimed")
)

// refEngine is the reference engine: the state of every job in a map.
type refEngine struct {
	a       *refAdapter
	handler func(context.Context, Job) error
	queue   string
	ctx     context.Context

	mu     sync.Mutex
	seq    int64
	jobs   map[string]*refJob
	timers map[*time.Timer]struct{}
	closed bool
	// dead is set when the worker "died" of a planted fault: nothing runs
	// any more.
	dead bool
	wg   sync.WaitGroup // running attempts and pending timers
}

type refJob struct {
	id       string
	kind     string
	payload  []byte
	meta     observe.MapCarrier // the job's persisted metadata
	attempts int                // counted attempts used
	state    State
	lastErr  string
	cur      *refRun     // the running attempt, nil if none
	timer    *time.Timer // the pending retry, nil if none
	last     observe.Attempt
	// cancelled is set by an operator's cancel of the waiting job.
	cancelled bool
	// deferrals counts the runs a breaker held back.
	deferrals int
	// own marks a job whose failures the engine retries by itself, after
	// refOwnDelay, without asking the adapter (EnqueueEngineRetried).
	own bool
}

// refOwnDelay is how long the reference engine waits before a retry it
// decides by itself.
const refOwnDelay = 3 * unit

// refRun is one running attempt.
type refRun struct {
	cancel context.CancelCauseFunc
	// why is set when the engine cut the run short: errShutdown or
	// errCancelled.
	why   error
	stale bool
	done  chan struct{}
	// octx and att are what the observer was told at the start; told is
	// set when the attempt was ended for it by a reclaim.
	octx context.Context
	att  observe.Attempt
	told bool
	// open is the run's entry in the adapter's table of runs by payload
	// (faultMatchByPayload only).
	open *refOpen
}

func newRefEngine(t testing.TB, a *refAdapter, handler func(context.Context, Job) error, queue string) *refEngine {
	ctx, cancel := context.WithCancel(context.Background())
	e := &refEngine{a: a, handler: handler, queue: queue, ctx: ctx, jobs: map[string]*refJob{}, timers: map[*time.Timer]struct{}{}}
	t.Cleanup(func() {
		cancel()
		e.close()
	})
	return e
}

// Enqueue stores the job and runs its first attempt at once.
func (e *refEngine) Enqueue(ctx context.Context, payload []byte) (string, error) {
	return e.EnqueueKind(ctx, "", payload)
}

// EnqueueKind is Enqueue for a job of the given kind.
func (e *refEngine) EnqueueKind(ctx context.Context, kind string, payload []byte) (string, error) {
	return e.enqueue(ctx, kind, payload, false)
}

// enqueue stores a job and runs its first attempt at once.
func (e *refEngine) enqueue(ctx context.Context, kind string, payload []byte, own bool) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return "", errors.New("conformance: reference: Enqueue on a stopped engine")
	}
	e.seq++
	j := &refJob{id: strconv.FormatInt(e.seq, 10), kind: kind, payload: bytes.Clone(payload), meta: observe.MapCarrier{}, own: own}
	e.jobs[j.id] = j
	e.wg.Add(1)
	go e.run(j)
	return j.id, nil
}

// EnqueueEngineRetried is Enqueue for a job whose failed attempts the
// engine retries by itself, after refOwnDelay, without asking the adapter
// (as a River worker whose own NextRetry answers does), until the last
// attempt the rule allows, which the adapter decides as usual.
func (e *refEngine) EnqueueEngineRetried(ctx context.Context, payload []byte) (string, error) {
	return e.enqueue(ctx, "", payload, true)
}

// job returns the job with the given ID; the caller holds e.mu.
func (e *refEngine) job(id string) (*refJob, error) {
	j, ok := e.jobs[id]
	if !ok {
		return nil, fmt.Errorf("conformance: reference: no job with ID %q", id)
	}
	return j, nil
}

// State returns the job's state.
func (e *refEngine) State(_ context.Context, id string) (State, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, err := e.job(id)
	if err != nil {
		return StatePending, err
	}
	return j.state, nil
}

// LastError returns the stored message of the job's last failed attempt.
func (e *refEngine) LastError(_ context.Context, id string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, err := e.job(id)
	if err != nil {
		return "", err
	}
	return j.lastErr, nil
}

// Pending returns the number of jobs whose attempts the adapter is
// tracking, over every engine sharing it.
func (e *refEngine) Pending() int {
	e.a.mu.Lock()
	defer e.a.mu.Unlock()
	return len(e.a.open)
}

// Cancel cancels the job as an operator does: a running attempt's context
// is cancelled and the attempt ends the job, permanent; a waiting job ends
// failed at once, and the give-up hook is told.
func (e *refEngine) Cancel(_ context.Context, id string) error {
	e.mu.Lock()
	j, err := e.job(id)
	if err != nil || j.state != StatePending {
		e.mu.Unlock()
		return err
	}
	if r := j.cur; r != nil {
		r.why = errCancelled
		r.cancel(errCancelled)
		e.mu.Unlock()
		return nil
	}
	j.state, j.cancelled, j.lastErr = StateFailed, true, e.a.text(errCancelled)
	if j.timer != nil && e.a.h.fault != faultCancelRuns {
		if j.timer.Stop() {
			e.wg.Done()
		}
		delete(e.timers, j.timer)
		j.timer = nil
	}
	last := j.last
	e.mu.Unlock()
	if hook := e.a.n.GiveUp; hook != nil {
		g := observe.GiveUp{Attempt: last, Err: errCancelled, Outcome: backoff.OutcomePermanent}
		if err := safe.Call("give-up hook", func() { hook(context.Background(), g) }); err != nil {
			e.a.n.Report(err)
		}
	}
	return nil
}

// Restart shuts the worker down as a deploy does: every running attempt's
// context is cancelled, the engine waits for the handlers to return, and
// puts their jobs back to run again without using up an attempt. Waiting
// jobs keep their timers.
func (e *refEngine) Restart(ctx context.Context) error {
	e.mu.Lock()
	var cut []*refRun
	for _, j := range e.jobs {
		if r := j.cur; r != nil && r.why == nil {
			r.why = errShutdown
			r.cancel(errShutdown)
			cut = append(cut, r)
		}
	}
	e.mu.Unlock()
	for _, r := range cut {
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Reclaim takes the running job back as if its worker had died, and runs
// it again at once with the same attempt number; the stale run's outcome
// is discarded when it returns.
//
// The variant that counts reclaims instead ends the attempt there and
// then as a failure (errLeaseExpired), retried under the rule, and drops
// the stale run's outcome without telling the observer again.
func (e *refEngine) Reclaim(_ context.Context, id string) error {
	e.mu.Lock()
	j, err := e.job(id)
	if err != nil {
		e.mu.Unlock()
		return err
	}
	r := j.cur
	if r == nil {
		e.mu.Unlock()
		return fmt.Errorf("conformance: reference: job %s is not running", id)
	}
	r.stale = true
	j.cur = nil
	a := e.a
	a.dropRun(j.payload, r.open) // the adapter lets go of a reclaimed run
	if !e.a.h.reclaimCounts {
		e.wg.Add(1)
		go e.run(j)
		e.mu.Unlock()
		return nil
	}
	n, octx, att := j.attempts+1, r.octx, r.att
	e.mu.Unlock()

	dec, _ := e.a.decide(e, j.id, j.kind, n, errLeaseExpired)
	text := e.a.text(errLeaseExpired)
	e.mu.Lock()
	j.attempts, j.lastErr, r.told = n, text, true
	res := observe.Result{Err: errLeaseExpired, Decision: dec}
	if dec.Retry() {
		res.FireAt = time.Now().Add(dec.Delay)
		e.schedule(j, dec.Delay)
	} else {
		j.state = StateFailed
	}
	e.mu.Unlock()
	e.a.n.Ended(octx, att, res)
	return nil
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

var (
	_ KindEngine        = (*refEngine)(nil)
	_ ErrorEngine       = (*refEngine)(nil)
	_ CancelEngine      = (*refEngine)(nil)
	_ RestartEngine     = (*refEngine)(nil)
	_ ReclaimEngine     = (*refEngine)(nil)
	_ BookkeepingEngine = (*refEngine)(nil)
	_ EngineDecider     = (*refEngine)(nil)
)
