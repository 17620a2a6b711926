package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/notify"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// refAdapter is the reference adapter value: what a user configures (the
// rules, the key, the fallback delay, the timeout), the notifier that
// tells the observer, give-up hook and error handler, and what it keeps
// per job. Engines started by StartShared share one.
type refAdapter struct {
	h   *ReferenceHarness
	cfg Config
	n   notify.Notifier

	mu sync.Mutex
	// open counts the running attempts of each job: the adapter's per-job
	// bookkeeping, reported by Pending.
	open map[refKey]int
	// decided holds decisions by job ID and attempt, for faultSharedByID.
	decided map[string]backoff.Decision
}

// refKey names one job of one engine.
type refKey struct {
	e  *refEngine
	id string
}

// refDefaultFallback is the reference adapter's fallback delay when the
// Config gives none.
const refDefaultFallback = time.Minute

func newRefAdapter(h *ReferenceHarness, cfg Config) *refAdapter {
	a := &refAdapter{h: h, cfg: cfg, open: map[refKey]int{}, decided: map[string]backoff.Decision{}}
	a.n = notify.Notifier{Observer: cfg.Observer, GiveUp: cfg.GiveUp, OnError: cfg.OnError, Prefix: "conformance reference"}
	if h.fault == faultNoObserver {
		a.n.Observer = nil
	}
	return a
}

// rule returns the rule for jobs of the kind.
func (a *refAdapter) rule(kind string) backoff.Rule {
	if r, ok := a.cfg.KindRules[kind]; ok && a.h.fault != faultIgnoreKinds {
		return r
	}
	return a.cfg.Rule
}

// maxAttempts is the cap the engine applies for rule, and tells
// observers.
func (a *refAdapter) maxAttempts(rule backoff.Rule) int {
	n := rule.MaxAttempts()
	if lim := a.h.Limits().MaxAttempts; lim > 0 && n > lim {
		n = lim
	}
	return n
}

// key returns the job's jitter source: Config.Key's, or backoff.Key(id)
// when there is none or it panics.
func (a *refAdapter) key(id string) backoff.Source {
	if a.h.fault == faultUnkeyed {
		return backoff.Key("reference")
	}
	if a.cfg.Key == nil {
		return backoff.Key(id)
	}
	src, err := safe.Value("key", backoff.Key(id), func() backoff.Source { return a.cfg.Key(id) })
	if err != nil {
		a.n.Report(err)
	}
	return src
}

// decide is the engine's retry hook, called by the worker after failed
// attempt number attempt and by HookDelay: the rule's decision for the
// job's kind and key, within the engine's limits. A panicking policy is
// recovered and reported; the job then retries after the fallback delay,
// unless its error is permanent or its attempts are used up. e is the
// engine asking (nil for HookDelay).
func (a *refAdapter) decide(e *refEngine, id, kind string, attempt int, err error) (d backoff.Decision, panicked bool) {
	rule := a.rule(kind)
	switch a.h.fault {
	case faultRetryPermanent:
		if backoff.IsPermanent(err) {
			err = errors.New(safe.Message(err))
		}
	case faultIgnoreHint:
		if _, ok := backoff.RetryAfterHint(err); ok {
			err = errors.New(safe.Message(err))
		}
	case faultSharedByID:
		if e != nil {
			a.mu.Lock()
			cached, ok := a.decided[id+"#"+strconv.Itoa(attempt)]
			a.mu.Unlock()
			if ok {
				return cached, false
			}
			defer func() {
				a.mu.Lock()
				a.decided[id+"#"+strconv.Itoa(attempt)] = d
				a.mu.Unlock()
			}()
		}
	}
	capN := a.maxAttempts(rule)
	if a.h.fault == faultCapPlusOne && capN < math.MaxInt {
		capN++
	}
	if capN != rule.MaxAttempts() {
		r, rerr := backoff.NewRule(rule.Policy(), max(capN, 1))
		if rerr == nil {
			rule = r
		}
	}
	src := a.key(id)
	if e == nil && a.h.fault == faultHookUnguarded {
		return rule.Decide(attempt, err, src), false
	}
	d, perr := safe.Value("policy", backoff.Decision{}, func() backoff.Decision { return rule.Decide(attempt, err, src) })
	if perr != nil {
		a.n.Report(perr)
		permanent, _ := safe.Value("policy", false, func() bool { return backoff.IsPermanent(err) })
		switch {
		case permanent:
			d = backoff.Decision{Outcome: backoff.OutcomePermanent}
		case attempt >= capN:
			d = backoff.Decision{Outcome: backoff.OutcomeExhausted}
		default:
			d = backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: a.cfg.FallbackDelay}
			if d.Delay <= 0 {
				d.Delay = refDefaultFallback
			}
		}
	}
	if d.Retry() {
		d.Delay = a.store(d.Delay)
	}
	return d, perr != nil
}

// store returns the delay the engine stores for d: clamped to its longest
// delay and rounded up to its resolution.
func (a *refAdapter) store(d time.Duration) time.Duration {
	lim := a.h.Limits()
	if lim.MaxDelay > 0 && d > lim.MaxDelay {
		d = lim.MaxDelay
	}
	if r := lim.Resolution; r > 0 && d%r != 0 {
		d += r - d%r
	}
	return d
}

// timeout is the per-attempt timeout the engine applies: Config.Timeout,
// rounded up to the engine's timeout resolution.
func (a *refAdapter) timeout() time.Duration {
	t := a.cfg.Timeout
	if r := a.h.Limits().TimeoutResolution; r > 0 && t%r != 0 {
		t += r - t%r
	}
	return t
}

// text is the error message the engine stores: valid UTF-8, at most
// MaxErrorBytes, whatever the error does.
func (a *refAdapter) text(err error) string {
	if a.h.fault == faultErrorRaw {
		return safe.Message(err)
	}
	return safe.Truncate(strings.ToValidUTF8(safe.Message(err), "\uFFFD"), a.h.Limits().MaxErrorBytes)
}

// hold and release count a job's running attempts.
func (a *refAdapter) hold(e *refEngine, id string) {
	a.mu.Lock()
	a.open[refKey{e, id}]++
	a.mu.Unlock()
}

func (a *refAdapter) release(e *refEngine, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := refKey{e, id}
	if a.open[k]--; a.open[k] <= 0 {
		delete(a.open, k)
	}
}

// Errors the reference engine ends attempts with.
var (
	errShutdown  = errors.New("conformance: reference: the worker shut down while the attempt ran")
	errCancelled = errors.New("conformance: reference: cancelled by an operator")
	errLeaseLost = errors.New("conformance: reference: the job was reclaimed from this worker; its late outcome is discarded")
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
}

// refRun is one running attempt.
type refRun struct {
	cancel context.CancelCauseFunc
	// why is set when the engine cut the run short: errShutdown or
	// errCancelled.
	why   error
	stale bool
	done  chan struct{}
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
	if err := ctx.Err(); err != nil {
		return "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return "", errors.New("conformance: reference: Enqueue on a stopped engine")
	}
	e.seq++
	j := &refJob{id: strconv.FormatInt(e.seq, 10), kind: kind, payload: bytes.Clone(payload), meta: observe.MapCarrier{}}
	e.jobs[j.id] = j
	e.wg.Add(1)
	go e.run(j)
	return j.id, nil
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
func (e *refEngine) Reclaim(_ context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	j, err := e.job(id)
	if err != nil {
		return err
	}
	if j.cur == nil {
		return fmt.Errorf("conformance: reference: job %s is not running", id)
	}
	j.cur.stale = true
	j.cur = nil
	e.wg.Add(1)
	go e.run(j)
	return nil
}

// run runs one attempt of j and applies what follows. The caller has done
// e.wg.Add(1) for it.
func (e *refEngine) run(j *refJob) {
	defer e.wg.Done()
	a, fault := e.a, e.a.h.fault
	e.mu.Lock()
	runnable := j.state == StatePending || (fault == faultCancelRuns && j.cancelled)
	if e.closed || e.dead || !runnable || j.cur != nil {
		e.mu.Unlock()
		return
	}
	j.timer = nil
	n := j.attempts + 1
	ctx, cancel := context.WithCancelCause(e.ctx)
	defer cancel(nil)
	attemptCtx := ctx
	if t := a.timeout(); t > 0 {
		var stop context.CancelFunc
		attemptCtx, stop = context.WithTimeout(ctx, t)
		defer stop()
	}
	r := &refRun{cancel: cancel, done: make(chan struct{})}
	defer close(r.done)
	j.cur = r
	rule := a.rule(j.kind)
	carrier := maps.Clone(j.meta) // the attempt's own copy, written back when it ends
	att := observe.Attempt{System: "reference", Queue: e.queue, JobID: j.id, Kind: j.kind, Number: n,
		MaxAttempts: a.maxAttempts(rule), Carrier: carrier}
	j.last = att
	e.mu.Unlock()
	a.hold(e, j.id)

	reported := n
	if fault == faultAttemptOffBy1 {
		reported = n - 1
	}
	payload := bytes.Clone(j.payload)
	if fault == faultMangle {
		payload = append(payload, ' ')
		payload[0] = '['
	}
	octx := a.n.Started(attemptCtx, att)
	var herr error
	perr := safe.Call("handler", func() { herr = e.handler(octx, Job{ID: j.id, Attempt: reported, Payload: payload}) })
	err := herr
	if perr != nil {
		err = perr
	}
	timedOut := attemptCtx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	if timedOut {
		err = fmt.Errorf("conformance: reference: the attempt outlived its timeout %v: %w", a.timeout(), context.DeadlineExceeded)
	}
	e.conclude(j, r, octx, att, n, err, herr, perr != nil, timedOut)
}

// conclude applies the outcome of attempt n of j and tells the observer.
// herr is what the handler returned; err is the attempt's error as the
// engine records it.
func (e *refEngine) conclude(j *refJob, r *refRun, octx context.Context, att observe.Attempt, n int, err, herr error, panicked, timedOut bool) {
	a, fault := e.a, e.a.h.fault
	e.mu.Lock()
	// A copy: the observer may still write the attempt's carrier when it
	// is told how the attempt ended, while the next attempt copies j.meta.
	j.meta = maps.Clone(att.Carrier.(observe.MapCarrier))
	why, stale := r.why, r.stale
	if fault == faultInterruptCounted && why == errShutdown {
		why = nil
	}
	e.mu.Unlock()

	switch {
	case stale:
		res := observe.Result{Err: errLeaseLost, Counting: observe.Interrupted}
		e.mu.Lock()
		if fault == faultStaleApplied && err == nil {
			j.state, res = StateCompleted, observe.Result{}
		}
		e.mu.Unlock()
		a.release(e, j.id)
		if res.Counting == observe.Interrupted {
			a.n.Report(fmt.Errorf("job %s attempt %d: %w", j.id, n, errLeaseLost))
		}
		a.n.Ended(octx, att, res)
		return
	case why == errShutdown || e.ctx.Err() != nil:
		// Cut short by a restart (or the engine stopping): put back as it
		// was, to run again at once without using up an attempt.
		e.mu.Lock()
		j.cur = nil
		if why == errShutdown && !e.closed {
			e.wg.Add(1)
			go e.run(j)
		}
		e.mu.Unlock()
		a.release(e, j.id)
		a.n.Ended(octx, att, observe.Result{Err: err, Counting: observe.Interrupted, FireAt: time.Now()})
		return
	}

	var dec backoff.Decision
	var policyPanicked bool
	switch {
	case why == errCancelled:
		err = fmt.Errorf("%w (the attempt returned %s)", errCancelled, safe.Message(err))
		dec = backoff.Decision{Outcome: backoff.OutcomePermanent}
	case err != nil:
		dec, policyPanicked = a.decide(e, j.id, j.kind, n, err)
	}
	readable := errorText(err)

	e.mu.Lock()
	j.cur = nil
	j.attempts = n
	if err != nil {
		j.lastErr = a.text(err)
	}
	res := observe.Result{Err: err, Decision: dec}
	now := time.Now()
	switch {
	case (policyPanicked && fault == faultPolicyPanicKills) || (!readable && fault == faultErrorTextKills):
		e.die() // the worker process is gone; the job is never finished
		e.mu.Unlock()
		return
	case err == nil:
		j.state = StateCompleted
	case panicked && fault == faultDropPanicked:
		e.mu.Unlock()
		a.release(e, j.id)
		return // the job stays pending for ever: the defect under test
	case !dec.Retry():
		j.state = StateFailed
	case e.closed:
		e.mu.Unlock()
		a.release(e, j.id)
		a.n.Ended(octx, att, observe.Result{Err: err, Counting: observe.Interrupted})
		return
	default:
		res.FireAt = now.Add(dec.Delay)
		if fault == faultToldAtOnce {
			res.FireAt = now
		}
		e.schedule(j, e.faultyDelay(j, now, dec.Delay))
	}
	e.mu.Unlock()

	if !(fault == faultLeak && res.GaveUp()) {
		a.release(e, j.id)
	}
	if fault == faultTimeoutSuccess && timedOut && herr == nil {
		res = observe.Result{}
	}
	a.n.Ended(octx, att, res)
	switch {
	case fault == faultGiveUpTwice && res.GaveUp():
		a.n.Ended(octx, att, res)
	case fault == faultGiveUpOnSuccess && err == nil && n > 1 && a.n.GiveUp != nil:
		a.n.GiveUp(octx, observe.GiveUp{Attempt: att, Err: errors.New("conformance: reference: earlier failure"), Outcome: backoff.OutcomeExhausted})
	case fault == faultFalseAlarm && err == nil:
		a.n.Report(fmt.Errorf("conformance: reference: job %s: lease lost", j.id))
	}
}

// errorText reads err's message without a guard, as an engine that trusts
// errors does, and reports whether it could: false when the Error method
// panicked (the process would have died).
func errorText(err error) (readable bool) {
	if err == nil {
		return true
	}
	defer func() {
		if recover() != nil {
			readable = false
		}
	}()
	_ = err.Error()
	return true
}

// faultyDelay is the delay the engine's timer really waits: the decision's,
// unless a timing fault is planted. The caller holds e.mu.
func (e *refEngine) faultyDelay(j *refJob, now time.Time, delay time.Duration) time.Duration {
	switch e.a.h.fault {
	case faultEarly:
		delay /= 2
	case faultLate:
		delay += 2*e.a.h.Limits().Lateness + 5*time.Millisecond
	case faultSmear:
		window, _, _ := herdWindow(e.a.h.Limits())
		id, _ := strconv.Atoi(j.id)
		delay += window * time.Duration(id%10) / 10
	case faultHugeAtOnce:
		// The fire time as Unix nanoseconds: a delay near the Duration
		// limit overflows it into the past, and the job runs at once.
		if fire := now.UnixNano() + int64(delay); fire < now.UnixNano() {
			delay = 0
		}
	}
	return delay
}

// schedule runs j again after delay. The caller holds e.mu.
func (e *refEngine) schedule(j *refJob, delay time.Duration) {
	e.wg.Add(1)
	var tm *time.Timer
	tm = time.AfterFunc(delay, func() {
		e.mu.Lock()
		delete(e.timers, tm)
		e.mu.Unlock()
		e.run(j)
	})
	e.timers[tm] = struct{}{}
	j.timer = tm
}

// die stops the engine for good, as a worker process dying would. The
// caller holds e.mu.
func (e *refEngine) die() {
	e.dead = true
	for tm := range e.timers {
		if tm.Stop() {
			e.wg.Done()
		}
		delete(e.timers, tm)
	}
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
)
