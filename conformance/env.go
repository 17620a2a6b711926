package conformance

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
)

// unit is the delay of the checks whose point is counting, not timing:
// small, so that an exact engine finishes them in tens of milliseconds. A
// coarse engine rounds it up to its resolution.
const unit = 20 * time.Millisecond

// maxPerWorker bounds the violations reported for one worker, so that a
// harness that is wrong about everything gets a readable list.
const maxPerWorker = 25

// env is the state of one check.
type env struct {
	t     testing.TB
	h     Harness
	lim   Limits
	slack time.Duration // Resolution + Lateness: how late a retry may start
	// fallback is the Config.FallbackDelay of every worker.
	fallback time.Duration
	lacks    map[Feature]string
	st       *stats
	// hookReports receives what the harness reports while the suite calls
	// HookDelay; the suite does not judge it.
	hookReports *witness

	mu         sync.Mutex
	violations []string
	workers    []*worker
	suppressed map[string]int
}

func newEnv(t testing.TB, h Harness, st *stats) *env {
	lim := h.Limits()
	e := &env{t: t, h: h, lim: lim, slack: lim.Resolution + lim.Lateness, st: st,
		fallback: fallbackDelay(lim), hookReports: newWitness(), suppressed: map[string]int{}}
	if lh, ok := h.(LackingHarness); ok {
		e.lacks = lh.Lacks()
	}
	return e
}

// fallbackDelay is the Config.FallbackDelay the suite passes: above the
// engine's resolution, so that a retry after it is told from one at once,
// and from the unit delay of the hostile policy.
func fallbackDelay(lim Limits) time.Duration {
	return max(5*unit, 2*lim.Resolution)
}

// errorf records a violation.
func (e *env) errorf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.violations = append(e.violations, fmt.Sprintf(format, args...))
}

// found returns the check's violations, including what the handlers saw.
func (e *env) found() []string {
	e.mu.Lock()
	out := append([]string(nil), e.violations...)
	ws := append([]*worker(nil), e.workers...)
	for label, n := range e.suppressed {
		out = append(out, fmt.Sprintf("%s: %d more violations not shown", label, n))
	}
	e.mu.Unlock()
	for _, w := range ws {
		w.rec.mu.Lock()
		for _, p := range w.rec.problems {
			out = append(out, w.label+": "+p)
		}
		w.rec.mu.Unlock()
	}
	return out
}

// need reports whether a check can use feature f, which ok says the
// harness offers. A missing feature is a violation, unless the harness
// declares it lacks it (then the check is skipped with a log line).
func (e *env) need(f Feature, ok bool, what string) bool {
	if ok {
		return true
	}
	if reason, declared := e.lacks[f]; declared {
		e.t.Logf("conformance: skipped: harness %s declares its engine lacks %s: %s", e.h.Name(), f, reason)
		return false
	}
	e.errorf("the harness does not offer %s, which every adapter is expected to (%s); implement it, or, if the engine genuinely cannot, declare it with the reason in Lacks (see LackingHarness)",
		f, what)
	return false
}

// rule builds a rule from constant arguments; a failure is a bug in the
// suite, not in the harness.
func (e *env) rule(p backoff.Policy, maxAttempts int) backoff.Rule {
	r, err := backoff.NewRule(p, maxAttempts)
	if err != nil {
		e.t.Fatalf("conformance: bad rule in the suite: %v", err)
	}
	return r
}

// config returns a Config for rule whose handler is a fresh recorder and
// whose observer, give-up hook and error handler are wit.
func (e *env) config(rule backoff.Rule, wit *witness) (Config, *recorder) {
	rec := newRecorder()
	return Config{Rule: rule, Handler: rec.handle, Observer: wit, GiveUp: wit.GiveUp, OnError: wit.OnError,
		FallbackDelay: e.fallback}, rec
}

// hookConfig is cfg as the suite passes it to HookDelay: reports go to a
// sink the suite does not judge, so they are not counted as the worker's.
func (e *env) hookConfig(cfg Config) Config {
	cfg.OnError = e.hookReports.OnError
	return cfg
}

// hookDelay calls the harness's HookDelay. A panic there (a hook that
// does not recover a panicking policy, key or error) is a violation, and
// the answer a retry after 0, which no check accepts.
func (e *env) hookDelay(cfg Config, id string, attempt int, err error) (d time.Duration, retry bool) {
	defer func() {
		if p := recover(); p != nil {
			e.errorf("HookDelay(rule %s, job %s, attempt %d, %s) panicked: %v; the adapter's hook must recover what user code panics with",
				cfg.Rule, id, attempt, safe.Message(err), p)
			d, retry = 0, true
		}
	}()
	return e.h.HookDelay(cfg, id, attempt, err)
}

// effDelay is d as the engine can store it: clamped to Limits.MaxDelay.
func (e *env) effDelay(d time.Duration) time.Duration {
	if e.lim.MaxDelay > 0 && d > e.lim.MaxDelay {
		return e.lim.MaxDelay
	}
	return d
}

// effCap is the attempts cap the engine applies for rule: the rule's, or
// Limits.MaxAttempts when that is lower.
func (e *env) effCap(rule backoff.Rule) int {
	if e.lim.MaxAttempts > 0 && rule.MaxAttempts() > e.lim.MaxAttempts {
		return e.lim.MaxAttempts
	}
	return rule.MaxAttempts()
}

// cancelWhen says whether and how a check cancelled a job.
type cancelWhen int

const (
	notCancelled cancelWhen = iota
	cancelledRunning
	cancelledWaiting
)

// job is what the suite knows about one enqueued job.
type job struct {
	id      string
	s       script
	payload []byte
	kind    string       // "" for the harness's default kind
	rule    backoff.Rule // the rule the job runs under
	// parked is, when positive, the number of runs after which the job
	// must stay pending (its next delay is near the Duration limit).
	parked int
	cancel cancelWhen
	// lateOK exempts the job's retries from the lateness bound (a restart
	// happened while it waited); they are still never early.
	lateOK bool
	// terminalAt is when the suite first saw the job completed or failed.
	terminalAt time.Time
}

// worker is one Start of the harness with its recorder and witness.
type worker struct {
	e     *env
	label string
	rule  backoff.Rule
	cfg   Config
	eng   Engine
	rec   *recorder
	wit   *witness
	// peers are the workers sharing wit (all of them, this one included)
	// when several engines share one adapter value; nil otherwise.
	peers []*worker
	herd  bool // retries run under load: lateness is not bounded
	// policyPanics counts the panics of the worker's hostile policy; the
	// error handler must be told each. nil when the policy never panics.
	policyPanics *atomic.Int64
	// allow accepts the error handler reports a check expects; nil
	// accepts none: any report is a false alarm.
	allow func(error) bool

	mu         sync.Mutex
	jobs       map[string]*job
	order      []string
	violations int
}

// start starts a worker for rule. label names it in violations; edit
// changes the Config before Start.
func (e *env) start(label string, rule backoff.Rule, edit ...func(*Config)) *worker {
	w := e.newWorker(label, rule, newWitness())
	for _, f := range edit {
		f(&w.cfg)
	}
	w.eng = e.h.Start(e.t, w.cfg)
	if w.eng == nil {
		e.t.Fatalf("conformance: harness %s: Start returned a nil Engine", e.h.Name())
	}
	return w
}

// newWorker returns a worker not started yet.
func (e *env) newWorker(label string, rule backoff.Rule, wit *witness) *worker {
	cfg, rec := e.config(rule, wit)
	w := &worker{e: e, label: fmt.Sprintf("%s [%s]", label, rule), rule: rule, cfg: cfg, rec: rec, wit: wit,
		jobs: make(map[string]*job)}
	e.mu.Lock()
	e.workers = append(e.workers, w)
	e.mu.Unlock()
	return w
}

// errorf records a violation about the worker, at most maxPerWorker of
// them.
func (w *worker) errorf(format string, args ...any) {
	w.mu.Lock()
	w.violations++
	n := w.violations
	w.mu.Unlock()
	if n > maxPerWorker {
		w.e.mu.Lock()
		w.e.suppressed[w.label]++
		w.e.mu.Unlock()
		return
	}
	w.e.errorf("%s: "+format, append([]any{w.label}, args...)...)
}

// enqueue enqueues a job running s and returns its ID, or "" after
// recording why it could not.
func (w *worker) enqueue(s script) string { return w.enqueueKind("", s) }

// enqueueKind enqueues a job of the given kind ("" for the default)
// running s.
func (w *worker) enqueueKind(kind string, s script) string {
	s.Nonce = w.rec.next()
	p := s.encode()
	rule := w.rule
	var id string
	var err error
	if kind == "" {
		id, err = w.eng.Enqueue(w.e.t.Context(), bytes.Clone(p))
	} else {
		ke, ok := w.eng.(KindEngine)
		if !ok {
			w.errorf("the engine does not implement KindEngine")
			return ""
		}
		if r, ok := w.cfg.KindRules[kind]; ok {
			rule = r
		}
		id, err = ke.EnqueueKind(w.e.t.Context(), kind, bytes.Clone(p))
	}
	if err != nil {
		w.errorf("Enqueue: %v", err)
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.jobs[id]; dup {
		w.e.errorf("%s: Enqueue returned ID %q twice, want a new ID per job", w.label, id)
		return ""
	}
	w.jobs[id] = &job{id: id, s: s, payload: p, kind: kind, rule: rule}
	w.order = append(w.order, id)
	return id
}

// enqueueN enqueues n jobs running s.
func (w *worker) enqueueN(n int, s script) []string {
	ids := make([]string, 0, n)
	for range n {
		if id := w.enqueue(s); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// job returns the suite's record of the job, or nil.
func (w *worker) job(id string) *job {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.jobs[id]
}

// jobList returns the worker's jobs in the order they were enqueued.
func (w *worker) jobList() []*job {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*job, 0, len(w.order))
	for _, id := range w.order {
		out = append(out, w.jobs[id])
	}
	return out
}

// len returns the number of jobs enqueued on w.
func (w *worker) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.order)
}

// decide is the decision the suite expects after the job's counted attempt
// n failed with err: the rule's, with the job keyed by backoff.Key(ID); a
// policy that panics gets Config.FallbackDelay (panicked reports it); the
// engine's MaxAttempts applies.
func (w *worker) decide(j *job, n int, err error) (d backoff.Decision, panicked bool) {
	defer func() {
		if recover() != nil {
			d, panicked = backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: w.cfg.FallbackDelay}, true
			if n >= w.e.effCap(j.rule) {
				d = backoff.Decision{Outcome: backoff.OutcomeExhausted}
			}
		}
	}()
	d = twin(j.rule).Decide(n, err, backoff.Key(j.id))
	if d.Retry() && n >= w.e.effCap(j.rule) {
		d = backoff.Decision{Outcome: backoff.OutcomeExhausted}
	}
	return d, false
}

// what names the job in violations: its ID, kind and script.
func (j *job) what() string {
	if j.kind != "" {
		return "job " + j.id + " (kind " + j.kind + ", " + j.s.describe() + ")"
	}
	return "job " + j.id + " (" + j.s.describe() + ")"
}

// runsWanted is how many runs the job's script gets under its rule.
func (w *worker) runsWanted(j *job) (int, State) {
	if j.parked > 0 {
		return j.parked, StatePending
	}
	return j.s.expect(w.e.effCap(j.rule))
}

// budget is how long a job may take to reach a terminal state before the
// suite gives up on it: every delay it can be owed, each allowed its full
// lateness twice over, plus ten seconds for the engine to start. A passing
// run never waits for it; it only bounds a failing one.
func (w *worker) budget(j *job) time.Duration {
	runs, _ := w.runsWanted(j)
	total := 10*time.Second + j.s.Overrun
	if j.s.Block || j.s.Stale {
		total += blockBound
	}
	per := 2*w.e.slack + 100*time.Millisecond + j.s.Overrun
	for n := 1; n < runs && n < 1000; n++ {
		d, _ := w.decide(j, n, j.s.err(n))
		total = satAdd(satAdd(total, w.e.effDelay(d.Delay)), per)
	}
	return min(total, 30*time.Minute)
}

// satAdd adds two non-negative durations, saturating at the largest.
func satAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// pollInterval is how often the suite asks the engine for states.
func (w *worker) pollInterval() time.Duration {
	return min(max(w.e.slack/4, 2*time.Millisecond), 50*time.Millisecond)
}

// waitFor polls cond until it holds or d passes, and reports whether it
// held.
func (w *worker) waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(w.pollInterval())
	}
}

// started reports whether run i (0-based) of the job has started.
func (w *worker) started(id string, i int) bool { return w.rec.count(id) > i }

// finished reports whether run i (0-based) of the job has returned.
func (w *worker) finished(id string, i int) bool {
	runs := w.rec.runs(id)
	return len(runs) > i && runs[i].ended
}

// settle waits until every job of the worker that is not parked is
// terminal, or until its budget runs out, and returns the states. A job
// still pending at the end, or a State error, is a violation.
func (w *worker) settle() map[string]State {
	jobs := w.jobList()
	var timeout time.Duration
	var pending []*job
	for _, j := range jobs {
		if j.parked == 0 {
			timeout = max(timeout, w.budget(j))
			pending = append(pending, j)
		}
	}
	ctx := w.e.t.Context()
	deadline := time.Now().Add(timeout)
	states := make(map[string]State, len(jobs))
	var lastFull time.Time
	for {
		// A job whose recorded runs are not all done yet is asked about
		// only in a full sweep, once a second (still soon enough to catch
		// an engine that ends a job too early), so that a waiting cohort
		// does not load the engine it is measuring.
		full := time.Since(lastFull) >= time.Second
		if full {
			lastFull = time.Now()
		}
		var still []*job
		for _, j := range pending {
			if !full && !w.looksDone(j) {
				still = append(still, j)
				continue
			}
			st, err := w.eng.State(ctx, j.id)
			if err != nil {
				// Reported once; the job's runs are still verified.
				w.errorf("State(%s): %v; want the state of every job the suite enqueued, until the worker stops (keep finished jobs, e.g. with a retention period)",
					j.id, err)
				states[j.id] = StatePending
				continue
			}
			states[j.id] = st
			if st == StatePending {
				still = append(still, j)
				continue
			}
			w.mu.Lock()
			j.terminalAt = time.Now()
			w.mu.Unlock()
		}
		pending = still
		if len(pending) == 0 {
			return states
		}
		if !time.Now().Before(deadline) {
			for _, j := range pending {
				w.errorf("%s is still pending after %d runs and %v of waiting; want it completed or failed by now",
					j.what(), w.rec.count(j.id), timeout)
			}
			return states
		}
		time.Sleep(w.pollInterval())
	}
}

// looksDone reports whether the job has run as often as its script says
// and its last run has returned.
func (w *worker) looksDone(j *job) bool {
	want, _ := w.runsWanted(j)
	runs := w.rec.runs(j.id)
	return len(runs) >= want && runs[len(runs)-1].ended
}

// drain waits, within a bound, until the witness has been told the end of
// every attempt it was told the start of, and of a give-up for every job
// that failed, so that the story is complete before it is compared:
// adapters tell observers after the engine applied the outcome, which the
// suite may already have seen.
func (w *worker) drain(states map[string]State) {
	failed := 0
	for _, j := range w.jobList() {
		if states[j.id] == StateFailed && j.cancel != cancelledWaiting {
			failed++
		}
	}
	w.waitFor(max(2*time.Second, 2*w.e.slack), func() bool {
		w.wit.mu.Lock()
		gave := len(w.wit.giveUps)
		w.wit.mu.Unlock()
		return w.wit.unended() == 0 && gave >= failed
	})
}

// group returns the workers sharing w's witness.
func (w *worker) group() []*worker {
	if w.peers != nil {
		return w.peers
	}
	return []*worker{w}
}

// quiet waits long enough for a retry the engine should not have scheduled
// to show up: the policy's longest delay plus the allowed lateness.
func (w *worker) quiet() {
	time.Sleep(min(w.rule.Policy().Max(), time.Minute) + w.e.slack + 20*time.Millisecond)
}

// ctx is the check's context.
func (w *worker) ctx() context.Context { return w.e.t.Context() }
