package conformance

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

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
	// alike marks a look-alike job: its payload is empty, like every other
	// look-alike job's of its kind, and its script goes by its ID.
	alike bool
	// engine marks a job whose failures the engine follows up without
	// asking the adapter (EngineDecider): its failed attempts are told as
	// the engine's decision, and its retries are spaced by the engine.
	engine bool
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
	w.launch(edit...)
	return w
}

// launch starts the engine of a worker built by newWorker; edit changes
// the Config before Start.
func (w *worker) launch(edit ...func(*Config)) {
	for _, f := range edit {
		f(&w.cfg)
	}
	w.eng = w.e.h.Start(w.e.t, w.cfg)
	if w.eng == nil {
		w.e.t.Fatalf("conformance: harness %s: Start returned a nil Engine", w.e.h.Name())
	}
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
	// A Dep job's runs are spaced by the breaker as well as by the rule:
	// they are never early, but may be late.
	w.jobs[id] = &job{id: id, s: s, payload: p, kind: kind, rule: rule, lateOK: s.Dep}
	w.order = append(w.order, id)
	return id
}

// enqueueAlike enqueues a look-alike job of the given kind ("" for the
// default): its payload is empty, byte for byte the same as every other
// look-alike job's, and the handler finds s by the job's ID.
func (w *worker) enqueueAlike(kind string, s script) string {
	rule := w.rule
	var id string
	var err error
	if kind == "" {
		id, err = w.eng.Enqueue(w.e.t.Context(), nil)
	} else {
		ke, ok := w.eng.(KindEngine)
		if !ok {
			w.errorf("the engine does not implement KindEngine")
			return ""
		}
		if r, ok := w.cfg.KindRules[kind]; ok {
			rule = r
		}
		id, err = ke.EnqueueKind(w.e.t.Context(), kind, nil)
	}
	if err != nil {
		w.errorf("Enqueue of a job with an empty payload: %v", err)
		return ""
	}
	return w.add(&job{id: id, s: s, kind: kind, rule: rule, alike: true})
}

// add records an enqueued job and, for a look-alike job, hands the
// handler its script; it returns the ID, or "" for an ID Enqueue returned
// before.
func (w *worker) add(j *job) string {
	w.mu.Lock()
	if _, dup := w.jobs[j.id]; dup {
		w.mu.Unlock()
		w.e.errorf("%s: Enqueue returned ID %q twice, want a new ID per job", w.label, j.id)
		return ""
	}
	w.jobs[j.id] = j
	w.order = append(w.order, j.id)
	w.mu.Unlock()
	if j.alike {
		w.rec.assign(j.id, j.s)
	}
	return j.id
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
	name := "job "
	if j.alike {
		name = "look-alike job "
	}
	if j.kind != "" {
		return name + j.id + " (kind " + j.kind + ", " + j.s.describe() + ")"
	}
	return name + j.id + " (" + j.s.describe() + ")"
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
	total := 10*time.Second + j.s.overrun()
	if j.s.Block || j.s.Stale {
		total += blockBound
	}
	per := 2*w.e.slack + 100*time.Millisecond + j.s.overrun()
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

// group returns the workers sharing w's witness.
func (w *worker) group() []*worker {
	if w.peers != nil {
		return w.peers
	}
	return []*worker{w}
}

// ctx is the check's context.
func (w *worker) ctx() context.Context { return w.e.t.Context() }

// firesAt returns the FireAt the observer was told for the job's first
// run, or, when it was told none, when the script's retry is due.
func (w *worker) firesAt(id string) time.Time {
	runs := w.rec.runs(id)
	if len(runs) == 0 || !runs[0].ended {
		return time.Time{}
	}
	if ev := runs[0].ev; ev != nil {
		w.wit.mu.Lock()
		fire := ev.result.FireAt
		w.wit.mu.Unlock()
		if !fire.IsZero() {
			return fire
		}
	}
	j := w.job(id)
	d, _ := w.decide(j, 1, runs[0].err)
	return runs[0].end.Add(w.e.effDelay(d.Delay))
}
