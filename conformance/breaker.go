package conformance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/observe"
)

// A BreakerHarness builds circuit breaker stores on the engine's own
// backend, for the Breaker check: breaker/redisstore on the Redis the
// engine uses (asynq, native), breaker/pgstore on River's PostgreSQL,
// breaker/memstore where the engine lives in one process (River on
// SQLite). The suite passes the store to Start in [Config.Breaker] with
// the bindings in [Config.Dependencies], and reads the breaker's state
// from it.
type BreakerHarness interface {
	Harness
	// BreakerStore returns a store whose dependencies rules guards,
	// isolated from every other store (its own key prefix or schema), torn
	// down with t.Cleanup.
	BreakerStore(t testing.TB, rules breaker.Rules) breaker.Store
}

// FeatureBreaker is [BreakerHarness], used by the Breaker check.
const FeatureBreaker Feature = "BreakerHarness"

// breakerDep and breakerKind are the dependency the Breaker check's jobs
// need and the job kind bound to it.
const (
	breakerDep  = "conformance_dep"
	breakerKind = "breaker_bound"
)

// breakerParams are the Breaker check's numbers, sized to the engine.
type breakerParams struct {
	cooldown time.Duration // the breaker's cool-down (fixed), and its probe lease
	outage   time.Duration // how long the dependency stays down after the trip
	trip     int           // failures in a row that trip the breaker
	backlog  int           // bound jobs enqueued while the breaker is open
	floor    float64       // the budget's floor rate, tokens a second
	rule     breaker.Breaker
}

// newBreakerParams sizes the check to the engine: the cool-down is long
// against the engine's timing noise, so that probes are told apart from a
// flood; the budget releases the backlog in about five cool-downs, slow
// enough that a backlog released all at once stands out.
func newBreakerParams(lim Limits) breakerParams {
	p := breakerParams{trip: 3, backlog: 20}
	p.cooldown = max(250*time.Millisecond, 3*(lim.Resolution+lim.Lateness)+100*time.Millisecond).Round(time.Millisecond)
	p.outage = 3 * p.cooldown
	// Tokens a second, kept to the budget's thousandths.
	p.floor = float64(int(float64(p.backlog+p.trip)/(5*p.cooldown.Seconds())*1000)) / 1000
	p.floor = max(p.floor, breaker.MinFloor)
	budget := breaker.MustBudget(breaker.NewBudget(0, p.floor, 1))
	p.rule = breaker.Must(breaker.New(breaker.Config{
		Failures: p.trip,
		Cooldown: backoff.Must(backoff.Fixed(p.cooldown)),
		Lease:    p.cooldown,
		Budget:   budget,
	}))
	return p
}

// dependency is the Breaker check's stand-in for a service jobs call: it
// answers errors while down, and records every call.
type dependency struct {
	mu    sync.Mutex
	down  bool
	calls []depCall
}

type depCall struct {
	at time.Time
	ok bool
}

// errDependencyDown is what a call gets while the dependency is down.
var errDependencyDown = errors.New("conformance: the dependency is down (503)")

// call is one call into the dependency.
func (d *dependency) call() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := depCall{at: time.Now(), ok: !d.down}
	d.calls = append(d.calls, c)
	if !c.ok {
		return errDependencyDown
	}
	return nil
}

func (d *dependency) setDown(down bool) {
	d.mu.Lock()
	d.down = down
	d.mu.Unlock()
}

// callsIn returns the calls that started in [from, to).
func (d *dependency) callsIn(from, to time.Time) []depCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []depCall
	for _, c := range d.calls {
		if !c.at.Before(from) && c.at.Before(to) {
			out = append(out, c)
		}
	}
	return out
}

// BreakerChanged records a change of a breaker the adapter tells of.
func (w *witness) BreakerChanged(_ context.Context, c observe.BreakerChange) {
	w.mu.Lock()
	w.changes = append(w.changes, c)
	w.mu.Unlock()
}

var _ observe.BreakerObserver = (*witness)(nil)

// checkBreaker runs jobs bound to a dependency through an outage: the
// dependency fails until the breaker trips, stays down for three
// cool-downs, then recovers.
//
//   - Before the outage, jobs of the bound kind that fail permanently end
//     permanent after one run and say nothing about the dependency: the
//     breaker does not move, and later trips only after Failures failures
//     of the dependency itself.
//   - While the breaker is open, the bound jobs are deferred without
//     spending an attempt: the handler does not run, the observer is told
//     observe.Deferred with the dependency, and the next run has the same
//     attempt number; the dependency gets at most one probe per
//     cool-down; no job is exhausted, although the outage is many times
//     the rule's whole schedule. Jobs of the default kind, bound to
//     nothing, run as usual meanwhile, never deferred.
//   - Once the dependency is back, a probe closes the breaker and the
//     backlog is released at the budget's rate, not at once: no window of
//     one cool-down after the close holds more calls than the budget
//     earns in it plus its burst and the probe.
//   - Every bound job completes, and the observer is told every change of
//     the breaker, in order, ending closed.
func checkBreaker(e *env) {
	bh, ok := e.h.(BreakerHarness)
	if !e.need(FeatureBreaker, ok, "the Breaker check builds a breaker store on the engine's backend") {
		return
	}
	p := newBreakerParams(e.lim)
	store := bh.BreakerStore(e.t, breaker.Rules{Named: map[string]breaker.Breaker{breakerDep: p.rule}})
	if store == nil {
		e.errorf("BreakerStore returned nil, want a breaker.Store on the engine's backend")
		return
	}
	rule := e.rule(backoff.Must(backoff.Fixed(unit)), 8)
	dep := &dependency{}
	w := e.newWorker("breaker", rule, newWitness())
	w.rec.dep = dep // before the engine starts: the handler reads it
	w.launch(func(c *Config) {
		c.KindRules = map[string]backoff.Rule{breakerKind: rule}
		c.Breaker = store
		c.Dependencies = map[string]string{breakerKind: breakerDep}
	})
	if _, ok := w.eng.(KindEngine); !e.need(FeatureKinds, ok, "the Breaker check binds a job kind to the dependency") {
		return
	}
	ctx := w.ctx()
	status := func() breaker.State {
		st, err := store.Status(ctx, breakerDep)
		if err != nil {
			w.errorf("the store's Status(%q): %v", breakerDep, err)
			return breaker.Closed
		}
		return st.State
	}

	// Closed: permanent failures of bound jobs, and unbound jobs, leave
	// the breaker alone.
	w.enqueueKind(breakerKind, script{Permanent: true})
	w.enqueueKind(breakerKind, script{Permanent: true})
	w.enqueue(script{Fail: 1})
	states := w.settle()
	if st := status(); st != breaker.Closed {
		w.errorf("the breaker is %v after bound jobs failed permanently, want closed: a permanent error is the job's own trouble, not the dependency's", st)
	}

	// The outage: the breaker trips after its failures.
	dep.setDown(true)
	began := time.Now()
	var trippers []string
	for range p.trip {
		trippers = append(trippers, w.enqueueKind(breakerKind, script{Dep: true}))
	}
	if !w.waitFor(10*time.Second+p.cooldown, func() bool { return status() == breaker.Open }) {
		w.errorf("the breaker did not open within %v of %d bound jobs failing against the dependency (calls so far: %d); the adapter must report each run of a bound job to the store (WithBreaker, WithDependency)",
			10*time.Second+p.cooldown, p.trip, len(dep.callsIn(began, time.Now())))
		dep.setDown(false)
		w.settleOpen(states, 10*time.Second)
		return
	}
	tripped := time.Now()
	if n := len(dep.callsIn(began, tripped)); n < p.trip {
		w.errorf("the breaker opened after %d calls into the dependency, want %d failures: something else counted against it (a permanent error?)", n, p.trip)
	}
	var backlog []string
	for range p.backlog {
		backlog = append(backlog, w.enqueueKind(breakerKind, script{Dep: true}))
	}
	unbound := w.enqueueN(2, script{Fail: 1})
	recovery := tripped.Add(p.outage)
	time.Sleep(time.Until(recovery))
	dep.setDown(false)
	probes := dep.callsIn(tripped, recovery)
	if most := int(p.outage/p.cooldown) + 1; len(probes) > most {
		w.errorf("the dependency got %d calls in the %v it was down after the breaker opened, want at most %d (one probe per cool-down of %v): the breaker does not hold bound jobs back",
			len(probes), p.outage, most, p.cooldown)
	}

	// Recovery: every job completes, the backlog at the budget's rate.
	deadline := 12*p.cooldown + 10*time.Second
	for id, st := range w.settleOpen(nil, deadline) {
		states[id] = st
	}
	if st := status(); st != breaker.Closed {
		w.errorf("the breaker is %v once the dependency had been back for a while, want closed: a probe's success must close it", st)
	}
	after := dep.callsIn(recovery, time.Now().Add(time.Hour))
	var closed time.Time
	for _, c := range after {
		if c.ok {
			closed = c.at
			break
		}
	}
	worst := 0
	if !closed.IsZero() {
		worst = w.checkRelease(p, after, closed)
	}
	e.t.Logf("conformance: Breaker: cool-down %v, outage %v: %d calls into the dependency while it was down after the trip; %d after it recovered, at most %d in one cool-down (budget %g/s); backlog done %v after recovery",
		p.cooldown, p.outage, len(probes), len(after), worst, p.floor, time.Since(recovery).Round(time.Millisecond))
	for _, id := range append(append(trippers, backlog...), unbound...) {
		if id != "" && states[id] == StateFailed {
			w.errorf("job %s failed for good during an outage the breaker covered (%v, with the rule's whole schedule %v): deferred runs must not spend attempts",
				id, p.outage, 7*unit)
		}
	}
	w.checkSpent()
	w.checkChanges()
	w.verify(states)
}

// checkSpent checks that no run the breaker deferred spent an attempt: the
// run after one told deferred has the same attempt number.
func (w *worker) checkSpent() {
	events, order, _, _, _ := w.wit.snapshot()
	last := map[string]observe.Attempt{}
	deferred := map[string]bool{}
	spent, example := 0, ""
	for _, ev := range order {
		a := events[ev].attempt
		if deferred[a.JobID] && a.Number != last[a.JobID].Number {
			spent++
			if example == "" {
				example = fmt.Sprintf("job %s was deferred at attempt %d and ran next as attempt %d", a.JobID, last[a.JobID].Number, a.Number)
			}
		}
		last[a.JobID] = a
		deferred[a.JobID] = events[ev].ends > 0 && events[ev].result.Counting == observe.Deferred
	}
	if spent > 0 {
		w.errorf("%d runs the breaker deferred spent an attempt (%s): a deferred run must leave the attempt number as it was", spent, example)
	}
}

// checkRelease checks that the calls after the close came at the budget's
// rate: no window of one cool-down holds more calls than the budget earns
// in it, plus its burst of one, the probe and one for rounding.
func (w *worker) checkRelease(p breakerParams, calls []depCall, closed time.Time) int {
	most := int(p.floor*p.cooldown.Seconds()) + 3
	sort.Slice(calls, func(i, j int) bool { return calls[i].at.Before(calls[j].at) })
	worst, at := 0, time.Time{}
	for i, c := range calls {
		if c.at.Before(closed) {
			continue
		}
		n := 0
		for _, d := range calls[i:] {
			if d.at.Sub(c.at) >= p.cooldown {
				break
			}
			n++
		}
		if n > worst {
			worst, at = n, c.at
		}
	}
	if worst > most {
		w.errorf("%d calls into the dependency in the %v after %v past the breaker's close, want at most %d (the budget earns %g a second, holds 1): the backlog was released at once, not at the budget's rate",
			worst, p.cooldown, at.Sub(closed).Round(time.Millisecond), most, p.floor)
	}
	return worst
}

// checkChanges checks what the observer was told of the breaker: changes
// that follow one another from closed, through open, back to closed, each
// trip with the time of its next probe.
func (w *worker) checkChanges() {
	w.wit.mu.Lock()
	changes := append([]observe.BreakerChange(nil), w.wit.changes...)
	w.wit.mu.Unlock()
	if len(changes) == 0 {
		w.errorf("the observer was told of no change of the breaker, which opened and closed: an adapter tells an observer that implements observe.BreakerObserver of every change it makes or learns of")
		return
	}
	state, opened := breaker.Closed, false
	for i, c := range changes {
		if c.Dependency != breakerDep {
			w.errorf("the observer was told of a change of dependency %q, want %q", c.Dependency, breakerDep)
			continue
		}
		if c.From != state || c.From == c.To {
			w.errorf("breaker change %d told %v -> %v, after the breaker was told %v: want changes that follow one another", i+1, c.From, c.To, state)
		}
		if c.To == breaker.Open {
			opened = true
			if c.NextProbe.IsZero() {
				w.errorf("breaker change %d to open was told without NextProbe, want when the next probe may run", i+1)
			}
		}
		state = c.To
	}
	if !opened || state != breaker.Closed {
		w.errorf("the observer was told the breaker went %s; want it through open and back to closed", describeChanges(changes))
	}
}

func describeChanges(cs []observe.BreakerChange) string {
	s := "closed"
	for _, c := range cs {
		s += fmt.Sprintf(" -> %v", c.To)
	}
	return s
}

// settleOpen waits, within timeout, until every job of the worker not in
// done is terminal, and returns their states.
func (w *worker) settleOpen(done map[string]State, timeout time.Duration) map[string]State {
	var pending []*job
	for _, j := range w.jobList() {
		if _, ok := done[j.id]; !ok {
			pending = append(pending, j)
		}
	}
	return w.settleJobs(pending, timeout, "want every bound job completed once the dependency is back and the breaker closed")
}
