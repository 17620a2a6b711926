package conformance

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// A SynctestHarness is a [Harness] whose engine runs entirely on the
// standard library's clock and goroutines inside the test process (for
// example an in-memory scheduler, or an engine on miniredis dialled through
// an in-process pipe), so that it can run inside a testing/synctest bubble.
//
// When Synctest returns true, [Run] runs every check in its own bubble
// (synctest.Test), calling Start inside it: the engine's timers then run on
// fake time, long schedules take no real time, and measured lateness is
// exactly what the engine adds. Run itself must not be called inside a
// bubble, because it runs each check with t.Run, which a bubble forbids.
type SynctestHarness interface {
	Harness
	// Synctest reports whether every check should run in a bubble.
	Synctest() bool
}

// check is one named subtest of the suite.
type check struct {
	name string
	run  func(e *env)
}

// checks is the suite, in the order Run runs it.
var checks = []check{
	{"Schedule", checkSchedule},
	{"AttemptNumbering", checkAttemptNumbering},
	{"AttemptsCap", checkAttemptsCap},
	{"NeverEarlyBoundedLate", checkTiming},
	{"Permanent", checkPermanent},
	{"RetryAfter", checkRetryAfter},
	{"Panic", checkPanic},
	{"Herd", checkHerd},
}

// Run runs the conformance suite against h, each check as a subtest of t
// named after it, and logs the lateness table of the adapter (see
// [Report]). It is what an adapter's own test calls:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, myHarness{...})
//	}
//
// Run must not be called inside a testing/synctest bubble; a harness that
// can run in one implements [SynctestHarness] instead.
func Run(t *testing.T, h Harness) {
	t.Helper()
	RunReport(t, h)
}

// RunReport is [Run] that also returns what the suite measured, for
// adapters that publish their lateness figures.
func RunReport(t *testing.T, h Harness) Report {
	t.Helper()
	lim := h.Limits()
	if lim.Resolution < 0 || lim.Lateness < 0 {
		t.Fatalf("conformance: harness %s declares negative limits (resolution %v, lateness %v), want both >= 0", h.Name(), lim.Resolution, lim.Lateness)
	}
	st := &stats{}
	began := time.Now()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range runCheck(t, h, c, st) {
				t.Error(v)
			}
		})
	}
	r := st.report(h.Name(), lim)
	r.Elapsed = time.Since(began)
	t.Log(r.String())
	return r
}

// runCheck runs one check against h, in a bubble if h asks for one, and
// returns what it found wrong.
func runCheck(t *testing.T, h Harness, c check, st *stats) []string {
	t.Helper()
	var found []string
	body := func(t *testing.T) {
		e := newEnv(t, h, st)
		c.run(e)
		found = e.found()
	}
	if sh, ok := h.(SynctestHarness); ok && sh.Synctest() {
		synctest.Test(t, body)
	} else {
		body(t)
	}
	return found
}

// env is the state of one check.
type env struct {
	t     testing.TB
	h     Harness
	lim   Limits
	slack time.Duration // Resolution + Lateness: how late a retry may start
	st    *stats

	mu         sync.Mutex
	violations []string
	workers    []*worker
}

func newEnv(t testing.TB, h Harness, st *stats) *env {
	lim := h.Limits()
	return &env{t: t, h: h, lim: lim, slack: lim.Resolution + lim.Lateness, st: st}
}

// errorf records a violation.
func (e *env) errorf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.violations = append(e.violations, fmt.Sprintf(format, args...))
}

// found returns the check's violations, including what the handler saw.
func (e *env) found() []string {
	e.mu.Lock()
	out := append([]string(nil), e.violations...)
	ws := append([]*worker(nil), e.workers...)
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

// rule builds a rule from constant arguments; a failure is a bug in the
// suite, not in the harness.
func (e *env) rule(p backoff.Policy, maxAttempts int) backoff.Rule {
	r, err := backoff.NewRule(p, maxAttempts)
	if err != nil {
		e.t.Fatalf("conformance: bad rule in the suite: %v", err)
	}
	return r
}

// config returns a Config for rule whose handler is a fresh recorder.
func (e *env) config(rule backoff.Rule) (Config, *recorder) {
	rec := newRecorder()
	return Config{Rule: rule, Handler: rec.handle}, rec
}

// worker is one Start of the harness with its recorder.
type worker struct {
	e       *env
	label   string
	rule    backoff.Rule
	cfg     Config
	eng     Engine
	rec     *recorder
	herd    bool // retries run under load: lateness is not bounded
	mu      sync.Mutex
	scripts map[string]script
	payload map[string][]byte
	order   []string
}

// start starts a worker for rule. label names it in violations.
func (e *env) start(label string, rule backoff.Rule) *worker {
	cfg, rec := e.config(rule)
	eng := e.h.Start(e.t, cfg)
	if eng == nil {
		e.t.Fatalf("conformance: harness %s: Start returned a nil Engine", e.h.Name())
	}
	w := &worker{e: e, label: fmt.Sprintf("%s [%s]", label, rule), rule: rule, cfg: cfg, eng: eng, rec: rec,
		scripts: make(map[string]script), payload: make(map[string][]byte)}
	e.mu.Lock()
	e.workers = append(e.workers, w)
	e.mu.Unlock()
	return w
}

// enqueue enqueues a job running s and returns its ID, or "" after
// recording why it could not.
func (w *worker) enqueue(s script) string {
	s.Nonce = w.rec.next()
	p := s.encode()
	id, err := w.eng.Enqueue(w.e.t.Context(), bytes.Clone(p))
	if err != nil {
		w.e.errorf("%s: Enqueue: %v", w.label, err)
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.scripts[id]; dup {
		w.e.errorf("%s: Enqueue returned ID %q twice, want a new ID per job", w.label, id)
		return ""
	}
	w.scripts[id], w.payload[id] = s, p
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

// budget is how long a job with script s may take to reach a terminal
// state before the suite gives up on it: every delay it can be owed, each
// allowed its full lateness twice over, plus ten seconds for the engine to
// start. A passing run never waits for it; it only bounds a failing one.
func (w *worker) budget(s script) time.Duration {
	runs, _ := s.expect(w.rule.MaxAttempts())
	per := max(w.rule.Policy().Max(), s.After) + 2*w.e.slack + 100*time.Millisecond
	return time.Duration(runs)*per + 10*time.Second
}

// pollInterval is how often settle asks the engine for states.
func (w *worker) pollInterval() time.Duration {
	return min(max(w.e.slack/4, 2*time.Millisecond), 50*time.Millisecond)
}

// settle waits until every job of the worker is terminal, or until its
// budget runs out, and returns the states. A job still pending at the end,
// or a State error, is a violation.
func (w *worker) settle() map[string]State {
	w.mu.Lock()
	ids := append([]string(nil), w.order...)
	var timeout time.Duration
	for _, id := range ids {
		timeout = max(timeout, w.budget(w.scripts[id]))
	}
	w.mu.Unlock()
	ctx := w.e.t.Context()
	deadline := time.Now().Add(timeout)
	states := make(map[string]State, len(ids))
	pending := ids
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
		var still []string
		for _, id := range pending {
			if !full && !w.looksDone(id) {
				still = append(still, id)
				continue
			}
			st, err := w.eng.State(ctx, id)
			if err != nil {
				// Reported once; the job's runs are still verified.
				w.e.errorf("%s: State(%s): %v; want the state of every job the suite enqueued, until the worker stops (keep finished jobs, e.g. with a retention period)",
					w.label, id, err)
				states[id] = StatePending
				continue
			}
			states[id] = st
			if st == StatePending {
				still = append(still, id)
			}
		}
		pending = still
		if len(pending) == 0 {
			return states
		}
		if !time.Now().Before(deadline) {
			for _, id := range pending {
				w.e.errorf("%s: job %s (%s) is still pending after %d runs and %v of waiting; want it completed or failed by now",
					w.label, id, w.describe(id), w.rec.count(id), timeout)
			}
			return states
		}
		time.Sleep(w.pollInterval())
	}
}

// looksDone reports whether the job has run as often as its script says
// and its last run has returned.
func (w *worker) looksDone(id string) bool {
	w.mu.Lock()
	want, _ := w.scripts[id].expect(w.rule.MaxAttempts())
	w.mu.Unlock()
	runs := w.rec.runs(id)
	return len(runs) >= want && runs[len(runs)-1].ended
}

// describe summarises a job's script for violations.
func (w *worker) describe(id string) string {
	w.mu.Lock()
	s := w.scripts[id]
	w.mu.Unlock()
	switch {
	case s.Permanent:
		return "fails permanently"
	case s.Always && s.Panic:
		return "always panics"
	case s.Always:
		return "always fails"
	case s.Fail == 0:
		return "succeeds"
	case s.Panic:
		return fmt.Sprintf("panics %s, then succeeds", times(s.Fail))
	case s.After > 0:
		return fmt.Sprintf("fails %s with a retry-after hint of %v, then succeeds", times(s.Fail), s.After)
	}
	return fmt.Sprintf("fails %s, then succeeds", times(s.Fail))
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// quiet waits long enough for a retry the engine should not have scheduled
// to show up: the policy's longest delay plus the allowed lateness.
func (w *worker) quiet() {
	time.Sleep(w.rule.Policy().Max() + w.e.slack + 20*time.Millisecond)
}

// verify checks everything the suite knows about each job of the worker
// against its script: final state, number of runs, attempt numbering,
// payload, and the gap before every retry. states is settle's result;
// after a quiet period the runs must not have changed.
func (w *worker) verify(states map[string]State) {
	w.mu.Lock()
	ids := append([]string(nil), w.order...)
	w.mu.Unlock()
	for _, id := range ids {
		w.verifyJob(id, states[id])
	}
}

func (w *worker) verifyJob(id string, got State) {
	e := w.e
	w.mu.Lock()
	s, p := w.scripts[id], w.payload[id]
	w.mu.Unlock()
	wantRuns, wantState := s.expect(w.rule.MaxAttempts())
	runs := w.rec.runs(id)
	what := fmt.Sprintf("%s: job %s (%s)", w.label, id, w.describe(id))
	if got != StatePending && got != wantState {
		e.errorf("%s ended %v, want %v", what, got, wantState)
	}
	if len(runs) != wantRuns {
		e.errorf("%s ran %d times, want %d (MaxAttempts %d counts every run, the first included)",
			what, len(runs), wantRuns, w.rule.MaxAttempts())
	}
	for i, r := range runs {
		n := i + 1
		if r.reported != n {
			e.errorf("%s: run %d was reported as Job.Attempt %d, want %d (attempts are 1-based and count every run)",
				what, n, r.reported, n)
		}
		if !bytes.Equal(r.payload, p) {
			e.errorf("%s: run %d got payload %q, want the enqueued %q unchanged", what, n, r.payload, p)
		}
		if !r.ended {
			e.errorf("%s: run %d never returned, although the job is %v", what, n, got)
			continue
		}
		if i+1 >= len(runs) {
			continue
		}
		dec := w.rule.Decide(n, r.err, backoff.Key(id))
		if !dec.Retry() {
			continue // a run that should not exist; reported above as too many runs
		}
		want := dec.Delay
		gap := runs[i+1].start.Sub(r.end)
		e.st.add(w.herd, gap-want)
		hint, hinted := backoff.RetryAfterHint(r.err)
		switch {
		case gap < want && hinted && gap < hint:
			e.errorf("%s: run %d started %v after run %d ended, before its retry-after hint %v (computed delay %v): retry-after hint ignored",
				what, n+1, gap, n, hint, want)
		case gap < want:
			e.errorf("%s: run %d started %v after run %d ended, %v before its computed delay %v: retry fired early",
				what, n+1, gap, n, want-gap, want)
		case !w.herd && gap > want+e.slack:
			e.errorf("%s: run %d started %v after run %d ended, %v after its computed delay %v; the harness declares at most %v (resolution %v + lateness %v): retry fired late",
				what, n+1, gap, n, gap-want, want, e.slack, e.lim.Resolution, e.lim.Lateness)
		}
	}
}

// recheck verifies, after a quiet period, that no job ran again and no
// terminal state changed.
func (w *worker) recheck(states map[string]State) {
	w.mu.Lock()
	ids := append([]string(nil), w.order...)
	w.mu.Unlock()
	for _, id := range ids {
		before := states[id]
		w.mu.Lock()
		runs, _ := w.scripts[id].expect(w.rule.MaxAttempts())
		w.mu.Unlock()
		if n := w.rec.count(id); n > runs {
			// verify already said "ran n times"; say when.
			w.e.errorf("%s: job %s ran again after it was reported %v: %d runs, want %d", w.label, id, before, n, runs)
		}
		st, err := w.eng.State(w.e.t.Context(), id)
		if err == nil && before != StatePending && st != before {
			w.e.errorf("%s: job %s was %v, then %v; a terminal state must not change", w.label, id, before, st)
		}
	}
}

// stats collects lateness samples across the checks of one run.
type stats struct {
	mu         sync.Mutex
	idle, herd []time.Duration
}

func (s *stats) add(herd bool, late time.Duration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if herd {
		s.herd = append(s.herd, late)
	} else {
		s.idle = append(s.idle, late)
	}
}

func (s *stats) report(name string, lim Limits) Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Report{Harness: name, Limits: lim, Idle: summarize(s.idle), Herd: summarize(s.herd)}
}

// Report is what one run of the suite measured about an adapter.
type Report struct {
	// Harness is the harness's Name.
	Harness string
	// Limits is what the harness declared.
	Limits Limits
	// Idle is the lateness of retries on a lightly loaded engine: every
	// retry of every check except Herd. The suite holds these to
	// [Limits.Resolution] + [Limits.Lateness].
	Idle Lateness
	// Herd is the lateness of the retries of the Herd check's cohorts,
	// hundreds of jobs retrying together. Only "never early" applies.
	Herd Lateness
	// Elapsed is how long the whole run took.
	Elapsed time.Duration
}

// Lateness summarises how late retries started: each sample is the gap
// between a failed attempt's end and the next attempt's start, minus the
// delay the core computed for it. Negative samples are early retries.
type Lateness struct {
	// Retries is the number of retries measured.
	Retries int
	// P50, P99 and Max are the median, 99th percentile (nearest rank) and
	// largest lateness.
	P50, P99, Max time.Duration
	// Early counts retries that started before their computed delay.
	Early int
}

func summarize(late []time.Duration) Lateness {
	if len(late) == 0 {
		return Lateness{}
	}
	s := append([]time.Duration(nil), late...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	l := Lateness{Retries: len(s), P50: rank(0.50), P99: rank(0.99), Max: s[len(s)-1]}
	for _, d := range s {
		if d < 0 {
			l.Early++
		}
	}
	return l
}

// String returns the lateness table the suite logs.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "conformance: lateness of %s (declared resolution %v, lateness %v; suite took %v)\n",
		r.Harness, r.Limits.Resolution, r.Limits.Lateness, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "  %-5s %7s %12s %12s %12s %6s\n", "load", "retries", "p50", "p99", "max", "early")
	row := func(name string, l Lateness) {
		fmt.Fprintf(&b, "  %-5s %7d %12v %12v %12v %6d\n", name, l.Retries, round(l.P50), round(l.P99), round(l.Max), l.Early)
	}
	row("idle", r.Idle)
	row("herd", r.Herd)
	return strings.TrimRight(b.String(), "\n")
}

func round(d time.Duration) time.Duration {
	if d > 10*time.Millisecond || d < -10*time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
