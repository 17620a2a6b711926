package guard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/memstore"
	"github.com/rebound-go/rebound/internal/notify"
	"github.com/rebound-go/rebound/internal/storetest"
	"github.com/rebound-go/rebound/observe"
)

// watcher records breaker changes and internal errors.
type watcher struct {
	mu      sync.Mutex
	changes []observe.BreakerChange
	errs    []error
}

func (w *watcher) AttemptStarted(ctx context.Context, _ observe.Attempt) context.Context { return ctx }
func (w *watcher) AttemptEnded(context.Context, observe.Attempt, observe.Result)         {}
func (w *watcher) BreakerChanged(_ context.Context, c observe.BreakerChange) {
	w.mu.Lock()
	w.changes = append(w.changes, c)
	w.mu.Unlock()
}

func (w *watcher) told() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, c := range w.changes {
		s := fmt.Sprintf("%s %s->%s", c.Dependency, c.From, c.To)
		if c.Learned {
			s += " (learned)"
		}
		out = append(out, s)
	}
	return out
}

const rule = "breaker(failures=2, cooldown=fixed(10s), budget=budget(10%, 1/s, 1))"

func setup(t *testing.T, bind map[string]string) (*Guard, *memstore.Store, *storetest.Clock, *watcher) {
	t.Helper()
	c := storetest.NewClock(storetest.T0)
	store := memstore.New(breaker.Rules{Default: breaker.Must(breaker.Parse(rule))}, memstore.Options{Now: c.Now})
	w := &watcher{}
	g := newGuard(store, bind, w, c)
	return g, store, c, w
}

func newGuard(store breaker.Store, bind map[string]string, w *watcher, c *storetest.Clock) *Guard {
	n := &notify.Notifier{Observer: w, OnError: func(err error) {
		w.mu.Lock()
		w.errs = append(w.errs, err)
		w.mu.Unlock()
	}, Prefix: "test"}
	g := New(Config{Store: store, Bind: bind}, n, "test")
	g.SetClock(c.Now)
	return g
}

var errDown = errors.New("503 service unavailable")

func TestNilGuardGuardsNothing(t *testing.T) {
	if g := New(Config{}, &notify.Notifier{}, "x"); g != nil {
		t.Fatalf("New without a store = %v, want nil", g)
	}
	var g *Guard
	p := g.Ask(context.Background(), "charge", "1", false)
	if p.Deferred() || p.Asked || p.Dep != "" {
		t.Fatalf("nil guard answered %+v, want a plain run", p)
	}
	g.Done(context.Background(), p, breaker.Dependency(errDown, "payments"), false)
}

func TestBoundJobsTripDeferAndProbe(t *testing.T) {
	g, _, clk, w := setup(t, map[string]string{"charge": "payments"})
	ctx := context.Background()
	for i := range 2 {
		p := g.Ask(ctx, "charge", fmt.Sprint(i), false)
		if !p.Asked || p.Deferred() || p.Dep != "payments" {
			t.Fatalf("closed breaker: %+v, want a run", p)
		}
		g.Done(ctx, p, errDown, false) // bound by configuration: a failure
	}
	p := g.Ask(ctx, "charge", "7", false)
	if !p.Deferred() || p.Verdict.Decision != breaker.DeferOpen {
		t.Fatalf("after 2 failures: %+v, want defer-open", p)
	}
	d, res := g.Deferral(ctx, p)
	// Until is the end of the 10s cool-down; the spread is one first
	// cool-down, read from the store's rule.
	if d < 10*time.Second || d >= 20*time.Second {
		t.Errorf("deferral %v, want in [10s, 20s)", d)
	}
	if res.Counting != observe.Deferred || res.Counts() || !res.FireAt.Equal(clk.Now().Add(d)) || res.Decision.Delay != d {
		t.Errorf("deferred result %+v, want Deferred, firing at now+%v", res, d)
	}
	var de *observe.DeferredError
	if !errors.As(res.Err, &de) || de.Dependency != "payments" || de.Decision != breaker.DeferOpen {
		t.Errorf("deferred result's error %v, want a *observe.DeferredError for payments, defer-open", res.Err)
	}
	// Keyed: the same deferral gives the same wait; other jobs spread.
	if d2, _ := g.Deferral(ctx, p); d2 != d {
		t.Errorf("the same deferral waited %v then %v, want keyed, equal", d, d2)
	}
	seen := map[time.Duration]bool{}
	for i := range 20 {
		q := g.Ask(ctx, "charge", fmt.Sprint("job-", i), false)
		dd, _ := g.Deferral(ctx, q)
		seen[dd] = true
	}
	if len(seen) < 15 {
		t.Errorf("20 jobs held back by one breaker wake at %d distinct times, want them spread", len(seen))
	}

	// After the cool-down one probe goes; a neutral end (a shutdown) frees
	// its slot for the next.
	clk.Add(10 * time.Second)
	p = g.Ask(ctx, "charge", "8", true)
	if p.Verdict.Decision != breaker.Probe {
		t.Fatalf("after the cool-down: %+v, want a probe", p)
	}
	if q := g.Ask(ctx, "charge", "9", true); !q.Deferred() {
		t.Fatalf("second run while the probe runs: %+v, want deferred", q)
	}
	g.Done(ctx, p, context.Canceled, true)
	p = g.Ask(ctx, "charge", "9", true)
	if p.Verdict.Decision != breaker.Probe {
		t.Fatalf("after the probe ended neutral: %+v, want another probe", p)
	}
	// Its report is sent even though the attempt's context is cancelled.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	g.Done(cctx, p, nil, false)
	want := []string{"payments closed->open", "payments open->half-open", "payments half-open->closed"}
	if got := w.told(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("observer told %v, want %v", got, want)
	}
	if w.changes[0].NextProbe.IsZero() || !w.changes[0].NextProbe.Equal(p.At) {
		t.Errorf("trip told NextProbe %v, want the end of the cool-down %v", w.changes[0].NextProbe, p.At)
	}
	if len(w.errs) != 0 {
		t.Errorf("error handler told %v, want nothing", w.errs)
	}
}

func TestOtherGuardsLearnOfChanges(t *testing.T) {
	g1, store, clk, w1 := setup(t, map[string]string{"charge": "payments"})
	w2 := &watcher{}
	g2 := newGuard(store, map[string]string{"refund": "payments"}, w2, clk)
	ctx := context.Background()
	for i := range 2 {
		g1.Done(ctx, g1.Ask(ctx, "charge", fmt.Sprint(i), false), errDown, false)
	}
	p := g2.Ask(ctx, "refund", "r1", false)
	if !p.Deferred() {
		t.Fatalf("another process's job while open: %+v, want deferred", p)
	}
	if got := w2.told(); fmt.Sprint(got) != "[payments closed->open (learned)]" {
		t.Errorf("second process told %v, want the trip, learned", got)
	}
	if w2.changes[0].NextProbe.IsZero() {
		t.Error("learned trip told no NextProbe, want the verdict's Until")
	}
	clk.Add(10 * time.Second)
	g2.Done(ctx, g2.Ask(ctx, "refund", "r1", true), nil, false)
	if got := w1.told(); fmt.Sprint(got) != "[payments closed->open]" {
		t.Errorf("first process told %v before it asked again, want only its trip", got)
	}
	g1.Ask(ctx, "charge", "c9", true)
	if got := w1.told(); fmt.Sprint(got) != "[payments closed->open payments open->closed (learned)]" {
		t.Errorf("first process told %v, want the close, learned", got)
	}
}

// TestLearnedTripByReportTellsNextProbe: a process that learns of a trip
// from its report (its run started before another process tripped the
// breaker) tells the change to open with when the next probe may run, as
// it does when it learns it from a question.
func TestLearnedTripByReportTellsNextProbe(t *testing.T) {
	g1, store, clk, _ := setup(t, map[string]string{"charge": "payments"})
	w2 := &watcher{}
	g2 := newGuard(store, map[string]string{"refund": "payments"}, w2, clk)
	ctx := context.Background()
	running := g2.Ask(ctx, "refund", "r1", false)
	if running.Deferred() {
		t.Fatal("a closed breaker held the run back")
	}
	for i := range 2 {
		g1.Done(ctx, g1.Ask(ctx, "charge", fmt.Sprint(i), false), errDown, false)
	}
	g2.Done(ctx, running, errDown, false)
	if got := w2.told(); fmt.Sprint(got) != "[payments closed->open (learned)]" {
		t.Fatalf("second process told %v, want the trip, learned", got)
	}
	if want := storetest.T0.Add(10 * time.Second); !w2.changes[0].NextProbe.Equal(want) {
		t.Errorf("trip learned from a report told NextProbe %v, want the end of the cool-down, %v", w2.changes[0].NextProbe, want)
	}
}

func TestOutcome(t *testing.T) {
	marked := breaker.Dependency(errDown, "payments")
	cases := []struct {
		dep     string
		err     error
		neutral bool
		own     breaker.Outcome
		other   string
	}{
		{"payments", nil, false, breaker.Success, ""},
		{"payments", errDown, false, breaker.Failure, ""},
		{"payments", marked, false, breaker.Failure, ""},
		{"payments", fmt.Errorf("charge: %w", marked), false, breaker.Failure, ""},
		{"payments", backoff.Permanent(errDown), false, breaker.Neutral, ""},
		{"payments", context.Canceled, true, breaker.Neutral, ""},
		{"payments", marked, true, breaker.Neutral, ""},
		{"payments", breaker.Dependency(errDown, "ledger"), false, breaker.Neutral, "ledger"},
		{"", breaker.Dependency(errDown, "ledger"), false, breaker.Neutral, "ledger"},
		{"", errDown, false, breaker.Failure, ""},
		{"payments", &observe.PanicError{Op: "handler", Value: "boom"}, false, breaker.Failure, ""},
	}
	for _, c := range cases {
		own, other := Outcome(c.dep, c.err, c.neutral)
		if own != c.own || other != c.other {
			t.Errorf("Outcome(%q, %v, %v) = %v, %q; want %v, %q", c.dep, c.err, c.neutral, own, other, c.own, c.other)
		}
	}
}

func TestMarkedErrorsOfUnboundJobsCount(t *testing.T) {
	g, store, _, w := setup(t, map[string]string{"charge": "payments"})
	ctx := context.Background()
	for i := range 2 {
		p := g.Ask(ctx, "report", fmt.Sprint(i), false) // bound to nothing
		if p.Asked || p.Deferred() {
			t.Fatalf("unbound job asked the store: %+v", p)
		}
		g.Done(ctx, p, fmt.Errorf("build report: %w", breaker.Dependency(errDown, "ledger")), false)
	}
	st, _ := store.Status(ctx, "ledger")
	if st.State != breaker.Open {
		t.Fatalf("ledger after two marked failures of unbound jobs: %v, want open", st.State)
	}
	// A bound job whose error names another dependency: neutral for its
	// own, a failure of the other.
	for i := range 2 {
		g.Done(ctx, g.Ask(ctx, "charge", fmt.Sprint("c", i), false), breaker.Dependency(errDown, "fx"), false)
	}
	if st, _ := store.Status(ctx, "payments"); st.State != breaker.Closed || st.Failures != 0 {
		t.Errorf("payments after failures marked for fx: %v with %d failures, want closed with none", st.State, st.Failures)
	}
	if st, _ := store.Status(ctx, "fx"); st.State != breaker.Open {
		t.Errorf("fx after two marked failures: %v, want open", st.State)
	}
	if got := w.told(); fmt.Sprint(got) != "[ledger closed->open fx closed->open]" {
		t.Errorf("observer told %v", got)
	}
}

// downStore fails every call.
type downStore struct{}

var errStoreDown = errors.New("store down")

func (downStore) Allow(context.Context, string, breaker.Job) (breaker.Verdict, error) {
	return breaker.Verdict{}, errStoreDown
}
func (downStore) Record(context.Context, string, breaker.Ticket, breaker.Outcome) (breaker.Transition, error) {
	return breaker.Transition{}, errStoreDown
}
func (downStore) Status(context.Context, string) (breaker.Status, error) {
	return breaker.Status{}, errStoreDown
}
func (downStore) List(context.Context) ([]breaker.Status, error) { return nil, errStoreDown }

func TestAStoreThatIsDownLetsJobsRun(t *testing.T) {
	w := &watcher{}
	g := newGuard(downStore{}, map[string]string{"charge": "payments"}, w, storetest.NewClock(time.Now()))
	ctx := context.Background()
	p := g.Ask(ctx, "charge", "1", false)
	if p.Deferred() || p.Asked {
		t.Fatalf("store down: %+v, want the job to run", p)
	}
	g.Done(ctx, p, errDown, false)
	if len(w.errs) != 2 || !errors.Is(w.errs[0], errStoreDown) || !errors.Is(w.errs[1], errStoreDown) {
		t.Fatalf("error handler told %v, want the question's and the report's failure", w.errs)
	}
}

func TestDeferralWithoutARuleSpreadsOverTheWait(t *testing.T) {
	g := New(Config{Store: downStore{}}, &notify.Notifier{OnError: func(error) {}}, "test")
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := Pass{Dep: "payments", Asked: true, At: at, jobID: "1",
		Verdict: breaker.Verdict{Decision: breaker.DeferOpen, Until: at.Add(3 * time.Second)}}
	if d, _ := g.Deferral(context.Background(), p); d < 3*time.Second || d >= 6*time.Second {
		t.Errorf("open, rule unknown: waited %v, want in [3s, 6s)", d)
	}
	p.Verdict = breaker.Verdict{Decision: breaker.DeferBudget, Until: at.Add(time.Millisecond)}
	if d, _ := g.Deferral(context.Background(), p); d < time.Millisecond || d >= time.Millisecond+DefaultSpread {
		t.Errorf("budget, rule unknown: waited %v, want in [1ms, 1ms+%v)", d, DefaultSpread)
	}
}

func TestDepend(t *testing.T) {
	for _, c := range []struct{ kind, dep, want string }{
		{"charge", "payments", ""},
		{"", "payments", `x: WithDependency: kind is empty, want the job kind bound to "payments"`},
		{"charge", "", `x: WithDependency("charge"): breaker: dependency name is empty, want a name such as "payments"`},
		{"charge", "a{b}", `x: WithDependency("charge"): breaker: dependency name "a{b}" has '{' at offset 1, want printable ASCII without spaces or braces`},
	} {
		var cfg Config
		err := cfg.Depend("x: WithDependency", c.kind, c.dep)
		if (err == nil && c.want != "") || (err != nil && err.Error() != c.want) {
			t.Errorf("Depend(%q, %q) = %v, want %q", c.kind, c.dep, err, c.want)
		}
		if got, bound := cfg.Bind[c.kind]; (err == nil) != bound || (bound && got != c.dep) {
			t.Errorf("Depend(%q, %q) left Bind %v, want the binding only when it is valid", c.kind, c.dep, cfg.Bind)
		}
	}
	if err := (Config{Bind: map[string]string{"charge": "payments"}}).Validate("x"); err == nil ||
		err.Error() != `x: WithDependency("charge", "payments") without WithBreaker, want a breaker.Store to keep the breaker` {
		t.Errorf("Validate = %v", err)
	}
}

// holdStore holds the answer of a Record until released, after the
// change is applied: the next question of another goroutine sees the new
// state before the report that made it comes back.
type holdStore struct {
	breaker.Store
	applied, release chan struct{}
}

func (s *holdStore) Record(ctx context.Context, dep string, t breaker.Ticket, o breaker.Outcome) (breaker.Transition, error) {
	tr, err := s.Store.Record(ctx, dep, t, o)
	if tr.Changed() {
		close(s.applied)
		<-s.release
	}
	return tr, err
}

// A process whose question finds the breaker open while its own report
// that opened it is still on its way tells the trip once, as its own.
func TestOverlappingCallsTellAChangeOnce(t *testing.T) {
	c := storetest.NewClock(storetest.T0)
	mem := memstore.New(breaker.Rules{Default: breaker.Must(breaker.Parse(rule))}, memstore.Options{Now: c.Now})
	store := &holdStore{Store: mem, applied: make(chan struct{}), release: make(chan struct{})}
	w := &watcher{}
	g := newGuard(store, map[string]string{"charge": "payments"}, w, c)
	ctx := context.Background()
	g.Done(ctx, g.Ask(ctx, "charge", "1", false), errDown, false)
	p := g.Ask(ctx, "charge", "2", false)
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Done(ctx, p, errDown, false) // trips, and waits
	}()
	<-store.applied
	if q := g.Ask(ctx, "charge", "3", false); !q.Deferred() {
		t.Fatalf("question after the trip: %+v, want deferred", q)
	}
	if got := w.told(); len(got) != 0 {
		t.Fatalf("told %v while the tripping report was on its way, want nothing yet", got)
	}
	close(store.release)
	<-done
	if got := w.told(); fmt.Sprint(got) != "[payments closed->open]" {
		t.Errorf("told %v, want the trip once, as this process's own", got)
	}
}

// gateStore answers each call with the next scripted transition, once the
// test opens that call's gate.
type gateStore struct {
	downStore
	mu      sync.Mutex
	answers []breaker.Transition
	gates   []chan struct{}
	started chan int
}

func (s *gateStore) call() breaker.Transition {
	s.mu.Lock()
	i := len(s.gates)
	gate := make(chan struct{})
	s.gates = append(s.gates, gate)
	tr := s.answers[i]
	s.mu.Unlock()
	s.started <- i
	<-gate
	return tr
}

func (s *gateStore) open(i int) {
	s.mu.Lock()
	gate := s.gates[i]
	s.mu.Unlock()
	close(gate)
}

func (s *gateStore) Allow(context.Context, string, breaker.Job) (breaker.Verdict, error) {
	tr := s.call()
	d := breaker.Run
	if tr.To == breaker.Open {
		d = breaker.DeferOpen
	}
	return breaker.Verdict{Decision: d, Transition: tr, Until: time.Now().Add(time.Second)}, nil
}

func (s *gateStore) Record(context.Context, string, breaker.Ticket, breaker.Outcome) (breaker.Transition, error) {
	return s.call(), nil
}

// Answers of overlapping calls come back out of the store's order: a late
// report finds the breaker open while the report that opened it is on its
// way, and a question answered before the trip comes back after. The
// process tells the trip once, as its own, and nothing undoes it.
func TestOverlappingAnswersOutOfOrder(t *testing.T) {
	s := &gateStore{started: make(chan int, 3), answers: []breaker.Transition{
		{From: breaker.Closed, To: breaker.Closed}, // 0: a question answered before the trip
		{From: breaker.Closed, To: breaker.Open},   // 1: the report that trips
		{From: breaker.Open, To: breaker.Open},     // 2: a late report, after the trip
	}}
	w := &watcher{}
	g := newGuard(s, map[string]string{"charge": "payments"}, w, storetest.NewClock(time.Now()))
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); g.Ask(ctx, "charge", "a", false) }()
	<-s.started
	go func() { defer wg.Done(); g.Done(ctx, Pass{Dep: "payments"}, errDown, false) }()
	<-s.started
	go func() { defer wg.Done(); g.Done(ctx, Pass{Dep: "payments"}, errDown, false) }()
	<-s.started
	s.open(2)
	s.open(0)
	s.open(1)
	wg.Wait()
	if got := w.told(); fmt.Sprint(got) != "[payments closed->open]" {
		t.Errorf("told %v, want the trip once, as this process's own", got)
	}
}

// Runs the retry budget holds back get slots of their own, one token's
// worth of time apart (at the budget's rate), in the order they were held
// back: this process asks no faster than the budget pays out.
func TestBudgetDeferralsTakeSlots(t *testing.T) {
	c := storetest.NewClock(storetest.T0)
	// 10 tokens a second, and 50% of the successes: 20 a second, 50ms.
	store := memstore.New(breaker.Rules{Default: breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1s), budget=budget(50%, 10/s, 1))"))}, memstore.Options{Now: c.Now})
	g := newGuard(store, map[string]string{"charge": "payments"}, &watcher{}, c)
	ctx := context.Background()
	g.Done(ctx, g.Ask(ctx, "charge", "trip", false), errDown, false)
	c.Add(time.Second)
	g.Done(ctx, g.Ask(ctx, "charge", "probe", true), nil, false) // closes, the budget empty
	var last time.Duration
	for i := range 20 {
		p := g.Ask(ctx, "charge", fmt.Sprint("job-", i), true)
		if p.Verdict.Decision != breaker.DeferBudget {
			t.Fatalf("rerun %d after the close: %v, want defer-budget", i, p.Verdict.Decision)
		}
		d, _ := g.Deferral(ctx, p)
		// The first slot is when the first token is due: 100ms at the floor.
		lo := 100*time.Millisecond + time.Duration(i)*50*time.Millisecond
		if d < lo || d >= lo+100*time.Millisecond || (i > 0 && d <= last) {
			t.Errorf("rerun %d waits %v, want in its slot [%v, %v) after the one before (%v)", i, d, lo, lo+100*time.Millisecond, last)
		}
		last = d
	}
}

// flakyStore is a store whose Record fails while down is set.
type flakyStore struct {
	breaker.Store
	down atomic.Bool
}

func (s *flakyStore) Record(ctx context.Context, dep string, t breaker.Ticket, o breaker.Outcome) (breaker.Transition, error) {
	if s.down.Load() {
		return breaker.Transition{}, errStoreDown
	}
	return s.Store.Record(ctx, dep, t, o)
}

// TestLostProbeReportIsSentAgain: a probe whose report the store did not
// take (it was down) has it sent again, so once the store answers, the
// breaker leaves half-open within the resend interval, not when the
// probe's lease (a minute here; the clock does not move) runs out.
func TestLostProbeReportIsSentAgain(t *testing.T) {
	c := storetest.NewClock(storetest.T0)
	mem := memstore.New(breaker.Rules{Default: breaker.Must(breaker.Parse(rule))}, memstore.Options{Now: c.Now})
	store := &flakyStore{Store: mem}
	w := &watcher{}
	g := newGuard(store, map[string]string{"charge": "payments"}, w, c)
	const every = 50 * time.Millisecond
	g.resendFirst, g.resendEvery, g.resendFor = 10*time.Millisecond, every, time.Minute
	ctx := context.Background()
	for i := range 2 {
		g.Done(ctx, g.Ask(ctx, "charge", fmt.Sprint(i), false), errDown, false)
	}
	c.Add(10 * time.Second)
	probe := g.Ask(ctx, "charge", "p", true)
	if probe.Verdict.Decision != breaker.Probe {
		t.Fatalf("after the cool-down: %v, want probe", probe.Verdict.Decision)
	}
	store.down.Store(true)
	g.Done(ctx, probe, nil, false) // the probe succeeded; its report is lost
	time.Sleep(5 * every)          // the store is down for a while
	if st, _ := mem.Status(ctx, "payments"); st.State != breaker.HalfOpen {
		t.Fatalf("while the store is down: %v, want half-open", st.State)
	}
	store.down.Store(false)
	up := time.Now()
	for {
		st, _ := mem.Status(ctx, "payments")
		if st.State == breaker.Closed {
			break
		}
		if time.Since(up) > 10*time.Second {
			t.Fatalf("10s after the store answered again the breaker is %v, want closed by the probe's report sent again", st.State)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(up)
	t.Logf("closed %v after the store answered again (resend interval %v)", took, every)
	// The observer hears the close once the resent report's answer is
	// back, just after the store changed.
	want := "[payments closed->open payments open->half-open payments half-open->closed]"
	for fmt.Sprint(w.told()) != want && time.Since(up) < 10*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	if got := w.told(); fmt.Sprint(got) != want {
		t.Errorf("observer told %v, want %v", got, want)
	}
}
