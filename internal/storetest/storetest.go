// Package storetest holds the tests every breaker.Store must pass: the
// verdicts of a trip, a probe and a recovery, the same decisions as the
// pure core on random event sequences, and atomic transitions under many
// goroutines and several clients sharing one breaker.
package storetest

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
)

// Backend makes clients of one fresh, isolated store backend (a key
// prefix, a schema): every client it returns sees the same circuits. now
// is the clock the client must use; nil means the store's own clock.
type Backend func(rules breaker.Rules, now func() time.Time) breaker.Store

// Setup prepares a fresh backend for t.
type Setup func(t *testing.T) Backend

// Rules the tests run, the extreme ones included.
var Rules = []string{
	"breaker(failures=1, cooldown=fixed(1s))",
	"breaker(failures=3, cooldown=exponential(100ms, 10s), probes=3, close=2, lease=500ms)",
	"breaker(failures=2, rate=50%, min=4, window=2s, cooldown=jitter(exponential(200ms, 5s)), probes=2, close=3, lease=1s, budget=budget(10%, 5/s, 3))",
	"breaker(rate=33.3333%, min=3, window=10ms, cooldown=decorrelated(1ms, 1s), probes=1, close=1, lease=1ms, budget=budget(1000%, 0.001/s, 1))",
	"breaker(failures=9223372036854775807, rate=100%, min=9223372036854775807, window=2562047h47m16.854775807s, cooldown=fixed(2562047h47m16.854775807s), probes=9223372036854775807, close=9223372036854775807, lease=2562047h47m16.854775807s, budget=budget(0%, 1000000/s, 1000000000))",
	"breaker(failures=1, cooldown=exponential(1ns, 2562047h47m16.854775807s), probes=2, lease=2562047h47m16.854775807s, budget=budget(0.0001%, 0.001/s, 1000000000))",
}

// Run runs every test on the store setup builds.
func Run(t *testing.T, setup Setup) {
	t.Run("Unguarded", func(t *testing.T) { unguarded(t, setup(t)) })
	t.Run("Lifecycle", func(t *testing.T) { lifecycle(t, setup(t)) })
	t.Run("SameAsCore", func(t *testing.T) { sameAsCore(t, setup) })
	t.Run("ConcurrentProbes", func(t *testing.T) { concurrentProbes(t, setup(t)) })
	t.Run("ConcurrentBudget", func(t *testing.T) { concurrentBudget(t, setup(t)) })
	t.Run("ConcurrentCounts", func(t *testing.T) { concurrentCounts(t, setup(t)) })
	t.Run("BadNames", func(t *testing.T) { badNames(t, setup(t)) })
	t.Run("UserPanics", func(t *testing.T) { userPanics(t, setup) })
	t.Run("RememberDeferred", func(t *testing.T) { rememberDeferred(t, setup(t)) })
	t.Run("FreshBudget", func(t *testing.T) { freshBudget(t, setup) })
	t.Run("LeasePerProbe", func(t *testing.T) { leasePerProbe(t, setup(t)) })
}

// leasePerProbe: every probe holds a lease of its own. With two probes and
// a one-minute lease, a probe let through at 1s whose worker died frees
// its slot at 61s, though a later probe holds its own until 116s: a run at
// 70s is a probe, not deferred to 116s. The dead probe's late report
// changes nothing; the live one's still counts.
func leasePerProbe(t *testing.T, backend Backend) {
	ctx := context.Background()
	clock := NewClock(T0)
	b := breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1s), probes=2, close=2, lease=1m)"))
	s := backend(breaker.Rules{Default: b}, clock.Now)
	allow := func(want breaker.Decision) breaker.Verdict {
		t.Helper()
		v, err := s.Allow(ctx, "db", breaker.Job{Kind: breaker.Retry})
		if err != nil || v.Decision != want {
			t.Fatalf("at +%v: %v until %v, %v; want %v", clock.Now().Sub(T0), v.Decision, v.Until.Sub(T0), err, want)
		}
		return v
	}
	if _, err := s.Record(ctx, "db", breaker.Ticket{}, breaker.Failure); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Second)
	dead := allow(breaker.Probe) // its worker dies; its lease ends at +61s
	clock.Add(55 * time.Second)
	live := allow(breaker.Probe) // its lease ends at +116s
	if v := allow(breaker.DeferOpen); !v.Until.Equal(T0.Add(61 * time.Second)) {
		t.Fatalf("both slots taken at +56s: deferred until +%v, want +61s, when the first lease ends", v.Until.Sub(T0))
	}
	if st, err := s.Status(ctx, "db"); err != nil || st.Probes != 2 || !st.NextProbe.Equal(T0.Add(61*time.Second)) {
		t.Fatalf("status at +56s: %d probes, next at +%v, %v; want 2 and +61s", st.Probes, st.NextProbe.Sub(T0), err)
	}
	clock.Add(14 * time.Second) // +70s
	if st, err := s.Status(ctx, "db"); err != nil || st.Probes != 1 || !st.NextProbe.IsZero() {
		t.Fatalf("status at +70s: %d probes, next at %v, %v; want 1, none (a slot is free)", st.Probes, st.NextProbe, err)
	}
	third := allow(breaker.Probe)
	if tr, err := s.Record(ctx, "db", dead.Ticket, breaker.Success); err != nil || tr.Changed() {
		t.Fatalf("the dead probe's late report: %v, %v; want no change", tr, err)
	}
	if st, err := s.Status(ctx, "db"); err != nil || st.Probes != 2 || st.State != breaker.HalfOpen {
		t.Fatalf("after the late report: %v with %d probes, %v; want half-open with 2", st.State, st.Probes, err)
	}
	if tr, err := s.Record(ctx, "db", live.Ticket, breaker.Success); err != nil || tr.Changed() {
		t.Fatalf("the live probe's success: %v, %v; want half-open still (close=2)", tr, err)
	}
	if tr, err := s.Record(ctx, "db", third.Ticket, breaker.Success); err != nil || tr != (breaker.Transition{From: breaker.HalfOpen, To: breaker.Closed}) {
		t.Fatalf("the third probe's success: %v, %v; want half-open -> closed", tr, err)
	}
}

// freshBudget: a dependency never seen holds a full burst, whatever its
// clock reads (it does not earn its tokens at the floor rate from 1970),
// and a trip empties it, at Unix millisecond 0 too.
func freshBudget(t *testing.T, setup Setup) {
	ctx := context.Background()
	b := breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1h), budget=budget(0%, 0.001/s, 1000000000))"))
	for _, start := range []time.Time{T0, time.UnixMilli(0)} {
		clock := NewClock(start)
		s := setup(t)(breaker.Rules{Default: b}, clock.Now)
		dep := "fresh-" + strconv.FormatInt(start.UnixMilli(), 10)
		st, err := s.Status(ctx, dep)
		if err != nil || st.Tokens != 1e9 {
			t.Fatalf("a fresh budget at %v holds %v tokens (%v), want the burst, 1e9", start, st.Tokens, err)
		}
		if v, err := s.Allow(ctx, dep, breaker.Job{Kind: breaker.Retry}); err != nil || v.Decision != breaker.Run {
			t.Fatalf("a retry on a fresh budget at %v: %v, %v; want run", start, v.Decision, err)
		}
		if st, err := s.Status(ctx, dep); err != nil || st.Tokens != 1e9-1 {
			t.Fatalf("after one retry at %v the budget holds %v (%v), want 1e9-1", start, st.Tokens, err)
		}
		if _, err := s.Record(ctx, dep, breaker.Ticket{}, breaker.Failure); err != nil {
			t.Fatal(err)
		}
		clock.Add(time.Hour)
		v, err := s.Allow(ctx, dep, breaker.Job{Kind: breaker.Retry})
		if err != nil || v.Decision != breaker.Probe {
			t.Fatalf("after the cool-down at %v: %v, %v; want probe", start, v.Decision, err)
		}
		if _, err := s.Record(ctx, dep, v.Ticket, breaker.Success); err != nil {
			t.Fatal(err)
		}
		if v, err := s.Allow(ctx, dep, breaker.Job{Kind: breaker.Retry}); err != nil || v.Decision != breaker.DeferBudget {
			t.Fatalf("a retry after recovery at %v: %v, %v; want defer-budget (the trip emptied the budget)", start, v.Decision, err)
		}
	}
}

// panicky is a cool-down policy whose every method panics.
type panicky struct{}

func (panicky) Delay(int, backoff.Source) time.Duration { panic("policy Delay") }
func (panicky) Max() time.Duration                      { panic("policy Max") }
func (panicky) String() string                          { panic("policy String") }

// userPanics: a clock or a cool-down policy of the user's that panics
// gives errors, never a dead process, and a failed trip leaves the
// circuit as it was.
func userPanics(t *testing.T, setup Setup) {
	ctx := context.Background()
	backend := setup(t)
	b := breaker.Must(breaker.New(breaker.Config{Failures: 2, Cooldown: panicky{}}))
	s := backend(breaker.Rules{Default: b}, nil)
	if _, err := s.Record(ctx, "dep", breaker.Ticket{}, breaker.Failure); err != nil {
		t.Fatalf("first failure: %v", err)
	}
	if _, err := s.Record(ctx, "dep", breaker.Ticket{}, breaker.Failure); err == nil {
		t.Fatal("a trip whose cool-down panics returned no error")
	}
	if st, err := s.Status(ctx, "dep"); err != nil || st.State != breaker.Closed || st.Failures != 1 {
		t.Fatalf("after the failed trip: %v with %d failures, %v; want closed with 1", st.State, st.Failures, err)
	}
	if v, err := s.Allow(ctx, "dep", breaker.Job{Kind: breaker.Fresh}); err != nil || v.Decision != breaker.Run {
		t.Fatalf("Allow after the failed trip: %v, %v; want run", v.Decision, err)
	}
	clock := setup(t)(breaker.Rules{Default: breaker.Must(breaker.Parse(Rules[0]))}, func() time.Time { panic("clock") })
	if _, err := clock.Allow(ctx, "dep2", breaker.Job{Kind: breaker.Fresh}); err == nil {
		t.Fatal("a clock that panics gave no error")
	}
	if _, err := clock.Record(ctx, "dep2", breaker.Ticket{}, breaker.Failure); err == nil {
		t.Fatal("a clock that panics gave no error")
	}
}

// Clock is a fake clock safe for concurrent use.
type Clock struct{ ms atomic.Int64 }

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock {
	c := new(Clock)
	c.ms.Store(t.UnixMilli())
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return time.UnixMilli(c.ms.Load()) }

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// T0 is where the tests' fake clocks start.
var T0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func unguarded(t *testing.T, backend Backend) {
	ctx := context.Background()
	s := backend(breaker.Rules{Named: map[string]breaker.Breaker{"guarded": breaker.Must(breaker.Parse(Rules[0]))}}, nil)
	for range 3 {
		if _, err := s.Record(ctx, "other", breaker.Ticket{}, breaker.Failure); err != nil {
			t.Fatal(err)
		}
	}
	v, err := s.Allow(ctx, "other", breaker.Job{Kind: breaker.Retry})
	if err != nil || v.Decision != breaker.Run {
		t.Fatalf("unguarded dependency: %v, %v; want run", v.Decision, err)
	}
}

func lifecycle(t *testing.T, backend Backend) {
	ctx := context.Background()
	clock := NewClock(T0)
	b := breaker.Must(breaker.Parse("breaker(failures=2, cooldown=exponential(1s, 1m), probes=1, close=1, budget=budget(0%, 1/s, 2))"))
	s := backend(breaker.Rules{Default: b}, clock.Now)
	must := func(v breaker.Verdict, err error) breaker.Verdict {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	record := func(tk breaker.Ticket, o breaker.Outcome) breaker.Transition {
		t.Helper()
		tr, err := s.Record(ctx, "payments", tk, o)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	v := must(s.Allow(ctx, "payments", breaker.Job{Kind: breaker.Fresh}))
	if v.Decision != breaker.Run {
		t.Fatalf("fresh closed breaker: %v, want run", v.Decision)
	}
	record(v.Ticket, breaker.Failure)
	if tr := record(breaker.Ticket{}, breaker.Failure); tr != (breaker.Transition{From: breaker.Closed, To: breaker.Open}) {
		t.Fatalf("second failure: %v, want closed -> open", tr)
	}
	v = must(s.Allow(ctx, "payments", breaker.Job{Kind: breaker.Fresh}))
	if v.Decision != breaker.DeferOpen || !v.Until.Equal(T0.Add(time.Second)) {
		t.Fatalf("open: %v until %v, want defer-open until t0+1s", v.Decision, v.Until)
	}
	st, err := s.Status(ctx, "payments")
	if err != nil || st.State != breaker.Open || st.Trips != 1 || !st.NextProbe.Equal(T0.Add(time.Second)) || st.Rule != b.String() {
		t.Fatalf("status %+v, %v; want open, 1 trip, next probe t0+1s, rule %s", st, err, b)
	}
	clock.Add(time.Second)
	v = must(s.Allow(ctx, "payments", breaker.Job{Kind: breaker.Retry}))
	if v.Decision != breaker.Probe || v.Transition != (breaker.Transition{From: breaker.Open, To: breaker.HalfOpen}) {
		t.Fatalf("after the cool-down: %v %v, want probe open -> half-open", v.Decision, v.Transition)
	}
	if w := must(s.Allow(ctx, "payments", breaker.Job{Kind: breaker.Retry})); w.Decision != breaker.DeferOpen {
		t.Fatalf("second run while probing: %v, want defer-open", w.Decision)
	}
	record(v.Ticket, breaker.Failure)
	clock.Add(time.Second)
	if w := must(s.Allow(ctx, "payments", breaker.Job{Kind: breaker.Retry})); w.Decision != breaker.DeferOpen || !w.Until.Equal(T0.Add(3*time.Second)) {
		t.Fatalf("second trip: %v until %v, want defer-open until t0+3s (a 2s cool-down)", w.Decision, w.Until)
	}
	clock.Add(time.Second)
	v = must(s.Allow(ctx, "payments", breaker.Job{Kind: breaker.Retry}))
	if tr := record(v.Ticket, breaker.Success); tr != (breaker.Transition{From: breaker.HalfOpen, To: breaker.Closed}) {
		t.Fatalf("probe success: %v, want half-open -> closed", tr)
	}
	// Closed with an empty budget: a retry waits for the floor's token, a
	// fresh run does not.
	if w := must(s.Allow(ctx, "payments", breaker.Job{Kind: breaker.Retry})); w.Decision != breaker.DeferBudget || !w.Until.Equal(clock.Now().Add(time.Second)) {
		t.Fatalf("retry after recovery: %v until %v, want defer-budget until now+1s", w.Decision, w.Until)
	}
	if w := must(s.Allow(ctx, "payments", breaker.Job{Kind: breaker.Fresh})); w.Decision != breaker.Run {
		t.Fatalf("fresh run after recovery: %v, want run", w.Decision)
	}
	clock.Add(time.Second)
	if w := must(s.Allow(ctx, "payments", breaker.Job{Kind: breaker.Retry})); w.Decision != breaker.Run {
		t.Fatalf("retry a second later: %v, want run", w.Decision)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].Dependency != "payments" || list[0].State != breaker.Closed {
		t.Fatalf("List = %+v, %v; want payments, closed", list, err)
	}
}

// step is one event of a random sequence.
type step struct {
	allow   bool
	kind    breaker.Kind
	outcome breaker.Outcome
	pick    int
	advance time.Duration
}

func randomSteps(r *rand.Rand, n int) []step {
	adv := []time.Duration{0, 0, time.Millisecond, 3 * time.Millisecond, 50 * time.Millisecond, 300 * time.Millisecond, time.Second, 7 * time.Second}
	steps := make([]step, n)
	for i := range steps {
		steps[i] = step{
			allow:   r.IntN(2) == 0,
			kind:    breaker.Kind(r.IntN(2)),
			outcome: breaker.Outcome(1 + r.IntN(3)),
			pick:    r.IntN(6) - 1,
			advance: adv[r.IntN(len(adv))],
		}
		if r.IntN(3) == 0 {
			steps[i].outcome = breaker.Failure
		}
	}
	return steps
}

// sameAsCore runs random event sequences through the pure core and
// through the store, at the same fake times, and requires the same
// verdict, the same transition and the same status after every event.
func sameAsCore(t *testing.T, setup Setup) {
	ctx := context.Background()
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	for _, text := range Rules {
		b := breaker.Must(breaker.Parse(text))
		for seed := range uint64(seeds) {
			backend := setup(t)
			clock := NewClock(T0)
			s := backend(breaker.Rules{Default: b}, clock.Now)
			r := rand.New(rand.NewPCG(seed, 16))
			var c breaker.Circuit
			var out []breaker.Ticket
			dep := "dep-" + string(rune('a'+seed))
			for i, e := range randomSteps(r, 120) {
				clock.Add(e.advance)
				now := clock.Now()
				if e.allow {
					want := b.Allow(&c, now, e.kind)
					got, err := s.Allow(ctx, dep, breaker.Job{Kind: e.kind})
					if err != nil {
						t.Fatalf("%s seed %d step %d: Allow: %v", text, seed, i, err)
					}
					if !sameVerdict(got, want) {
						t.Fatalf("%s seed %d step %d: store said %+v, core %+v", text, seed, i, got, want)
					}
					if want.Runs() {
						out = append(out, want.Ticket)
					}
				} else {
					var tk breaker.Ticket
					if e.pick >= 0 && len(out) > 0 {
						j := e.pick % len(out)
						tk = out[j]
						out = append(out[:j], out[j+1:]...)
					}
					want := b.Record(&c, dep, now, tk, e.outcome)
					got, err := s.Record(ctx, dep, tk, e.outcome)
					if err != nil {
						t.Fatalf("%s seed %d step %d: Record: %v", text, seed, i, err)
					}
					if got != want {
						t.Fatalf("%s seed %d step %d: Record(%+v, %s): store %v, core %v", text, seed, i, tk, e.outcome, got, want)
					}
				}
				got, err := s.Status(ctx, dep)
				if err != nil {
					t.Fatal(err)
				}
				if want := b.Status(dep, c, now); !sameStatus(got, want) {
					t.Fatalf("%s seed %d step %d: store status\n%+v\ncore status\n%+v", text, seed, i, got, want)
				}
			}
		}
	}
}

func sameVerdict(a, b breaker.Verdict) bool {
	return a.Decision == b.Decision && a.Until.Equal(b.Until) && a.Ticket == b.Ticket && a.Transition == b.Transition
}

func sameStatus(a, b breaker.Status) bool {
	a.At, b.At = time.Time{}, time.Time{}
	an, bn := a.NextProbe, b.NextProbe
	a.NextProbe, b.NextProbe = time.Time{}, time.Time{}
	return a == b && an.Equal(bn)
}

// concurrentProbes: goroutines on several clients ask a half-open breaker
// at once; exactly its probes get through.
func concurrentProbes(t *testing.T, backend Backend) {
	ctx := context.Background()
	b := breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1ms), probes=3, close=1000, lease=1h)"))
	clients := []breaker.Store{backend(breaker.Rules{Default: b}, nil), backend(breaker.Rules{Default: b}, nil), backend(breaker.Rules{Default: b}, nil)}
	if _, err := clients[0].Record(ctx, "db", breaker.Ticket{}, breaker.Failure); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	var probes, deferred atomic.Int64
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			for range 5 {
				v, err := clients[i%len(clients)].Allow(ctx, "db", breaker.Job{Kind: breaker.Fresh})
				if err != nil {
					t.Error(err)
					return
				}
				switch v.Decision {
				case breaker.Probe:
					probes.Add(1)
				case breaker.DeferOpen:
					deferred.Add(1)
				default:
					t.Errorf("half-open breaker said %v", v.Decision)
				}
			}
		})
	}
	wg.Wait()
	if probes.Load() != 3 || deferred.Load() != 24*5-3 {
		t.Fatalf("%d probes and %d deferred from 120 questions, want 3 and 117", probes.Load(), deferred.Load())
	}
}

// concurrentBudget: goroutines on several clients spend a budget at once;
// exactly its tokens are spent.
func concurrentBudget(t *testing.T, backend Backend) {
	ctx := context.Background()
	b := breaker.Must(breaker.Parse("breaker(failures=1000000, cooldown=fixed(1s), budget=budget(0%, 0.001/s, 7))"))
	clients := []breaker.Store{backend(breaker.Rules{Default: b}, nil), backend(breaker.Rules{Default: b}, nil)}
	var ran atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			for range 4 {
				v, err := clients[i%2].Allow(ctx, "mail", breaker.Job{Kind: breaker.Retry})
				if err != nil {
					t.Error(err)
					return
				}
				if v.Runs() {
					ran.Add(1)
				} else if v.Decision != breaker.DeferBudget {
					t.Errorf("closed breaker with an empty budget said %v", v.Decision)
				}
			}
		})
	}
	wg.Wait()
	if ran.Load() != 7 {
		t.Fatalf("%d retries ran from a budget of 7 tokens, want 7", ran.Load())
	}
}

// concurrentCounts: failures reported at once from many goroutines on
// several clients are each counted, and the trip happens exactly once.
func concurrentCounts(t *testing.T, backend Backend) {
	ctx := context.Background()
	b := breaker.Must(breaker.Parse("breaker(failures=150, cooldown=fixed(1h))"))
	clients := []breaker.Store{backend(breaker.Rules{Default: b}, nil), backend(breaker.Rules{Default: b}, nil)}
	var trips atomic.Int64
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			for range 10 {
				tr, err := clients[i%2].Record(ctx, "geo", breaker.Ticket{}, breaker.Failure)
				if err != nil {
					t.Error(err)
					return
				}
				if tr.Changed() {
					trips.Add(1)
				}
			}
		})
	}
	wg.Wait()
	st, err := clients[0].Status(ctx, "geo")
	if err != nil {
		t.Fatal(err)
	}
	if trips.Load() != 1 || st.State != breaker.Open || st.Trips != 1 {
		t.Fatalf("200 failures against failures=150: %d transitions, status %v with %d trips; want 1, open, 1", trips.Load(), st.State, st.Trips)
	}
}

func badNames(t *testing.T, backend Backend) {
	ctx := context.Background()
	s := backend(breaker.Rules{Default: breaker.Must(breaker.Parse(Rules[0]))}, nil)
	for _, name := range []string{"", "a{b}", "with space", string(make([]byte, breaker.MaxNameLen+1)), "tab\t", "é"} {
		if _, err := s.Allow(ctx, name, breaker.Job{Kind: breaker.Fresh}); err == nil {
			t.Errorf("Allow(%q) accepted a bad name", name)
		}
		if _, err := s.Record(ctx, name, breaker.Ticket{}, breaker.Failure); err == nil {
			t.Errorf("Record(%q) accepted a bad name", name)
		}
		if _, err := s.Status(ctx, name); err == nil {
			t.Errorf("Status(%q) accepted a bad name", name)
		}
	}
}

// rememberDeferred: a job the store deferred counts as a retry when it
// comes back, even as a fresh run, until it runs or Remember passes.
func rememberDeferred(t *testing.T, backend Backend) {
	ctx := context.Background()
	clock := NewClock(T0)
	s := backend(breaker.Rules{Default: breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1s), budget=budget(0%, 1/s, 1))"))}, clock.Now)
	ask := func(id string, want breaker.Decision) breaker.Verdict {
		t.Helper()
		v, err := s.Allow(ctx, "dep", breaker.Job{Kind: breaker.Fresh, ID: id})
		if err != nil || v.Decision != want {
			t.Fatalf("at t0+%v, fresh run of %q: %v, %v; want %v", clock.Now().Sub(T0), id, v.Decision, err, want)
		}
		return v
	}
	outage := func() {
		t.Helper()
		if _, err := s.Record(ctx, "dep", breaker.Ticket{}, breaker.Failure); err != nil {
			t.Fatal(err)
		}
	}
	heal := func() {
		t.Helper()
		v := ask("probe", breaker.Probe)
		if tr, err := s.Record(ctx, "dep", v.Ticket, breaker.Success); err != nil || tr.To != breaker.Closed {
			t.Fatalf("probe success: %v, %v; want closed", tr, err)
		}
	}
	outage()
	ask("j1", breaker.DeferOpen)
	clock.Add(time.Second)
	heal()                         // the budget starts empty
	ask("j1", breaker.DeferBudget) // remembered: a retry
	ask("j2", breaker.Run)         // never deferred: fresh
	clock.Add(time.Second)
	ask("j1", breaker.Run) // the floor's token
	ask("j1", breaker.Run) // forgotten once it ran: fresh again

	outage()
	ask("j3", breaker.DeferOpen)
	clock.Add(time.Second + breaker.Remember + time.Millisecond)
	heal()
	ask("j3", breaker.Run) // forgotten after Remember
	if _, err := s.Allow(ctx, "dep", breaker.Job{ID: "nul\x00"}); err == nil {
		t.Error("a job ID with a NUL byte was accepted")
	}
}
