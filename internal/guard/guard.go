// Package guard is the circuit-breaker half that every adapter shares: which
// dependency a job is bound to, the question asked of the breaker store
// before a bound job runs, the report after it ran, how long a run the
// breaker holds back waits, and what observers are told of breaker changes.
// Each adapter only maps its engine onto it: how to defer a run without
// spending an attempt, and how to tell a retry from a first run.
package guard

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/internal/notify"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// Timeout bounds each question and report to the store, whatever store it
// is (the stores of this module bound their own calls by their Timeout
// option, 1s by default): a store that hangs, even one that does not
// honour its context, must not hold a job for longer than that.
const Timeout = 5 * time.Second

// DefaultSpread is how far apart the runs held back by one breaker wake
// when the breaker's own first cool-down cannot be read (see
// Guard.Deferral).
const DefaultSpread = 5 * time.Second

// spreadTTL is how long a dependency's spread is cached.
const spreadTTL = time.Minute

// Config is what an adapter's options collected.
type Config struct {
	// Store keeps the breakers; nil for none (then Bind must be empty).
	Store breaker.Store
	// Bind maps job kinds to the dependency each is bound to.
	Bind map[string]string
}

// Depend binds jobs of kind to the dependency dep: every adapter's
// WithDependency option. It says what is wrong with the binding, named
// after the option (e.g. "reboundriver: WithDependency"), and then changes
// nothing.
func (c *Config) Depend(option, kind, dep string) error {
	if kind == "" {
		return fmt.Errorf("%s: kind is empty, want the job kind bound to %q", option, dep)
	}
	if err := breaker.CheckName(dep); err != nil {
		return fmt.Errorf("%s(%q): %w", option, kind, err)
	}
	if c.Bind == nil {
		c.Bind = make(map[string]string)
	}
	c.Bind[kind] = dep
	return nil
}

// Validate says what is wrong with c as a whole, prefixed by the adapter's
// name: bindings without a store.
func (c Config) Validate(prefix string) error {
	if c.Store == nil && len(c.Bind) > 0 {
		for kind, dep := range c.Bind {
			return fmt.Errorf("%s: WithDependency(%q, %q) without WithBreaker, want a breaker.Store to keep the breaker", prefix, kind, dep)
		}
	}
	return nil
}

// Guard asks and tells one adapter's breaker store. The nil *Guard guards
// nothing: every job runs and nothing is reported. A Guard is safe for
// concurrent use.
type Guard struct {
	store  breaker.Store
	bind   map[string]string
	n      *notify.Notifier
	system string
	now    func() time.Time

	mu       sync.Mutex
	seq      uint64              // store calls started
	inflight map[uint64]struct{} // store calls started and not yet answered
	known    map[string]view
	stashed  map[string]sighting
	rules    map[string]cached    // what deferrals need of each dependency's breaker
	slots    map[string]time.Time // the next free slot of runs the budget holds back

	// A test's resend intervals; zero for the constants.
	resendFirst, resendEvery, resendFor time.Duration
}

// view is what this process last saw of a dependency's breaker: its state,
// and the mark of the store call that showed it: the number of the last
// call started when it was answered. Calls are numbered as they start; a
// call numbered above the mark started after the view's call was answered,
// so what it sees is newer. What an overlapping call sees cannot be
// ordered against the view, since the store may have answered them in
// either order.
type view struct {
	state breaker.State
	mark  uint64
}

// sighting is a state a store call showed (the state before its own
// change, if it made one): a change another process made, unless one of
// the calls it overlapped made it here.
type sighting struct {
	ctx       context.Context
	state     breaker.State
	seq, mark uint64 // the call's number, and the last started when it was answered
	nextProbe time.Time
}

// cached is a dependency's spread, read from the store's status.
type cached struct {
	info  ruleInfo
	until time.Time
}

// New returns the guard of cfg, or nil when cfg has no store. n tells the
// adapter's observer and error handler; system names the engine in what
// they are told.
func New(cfg Config, n *notify.Notifier, system string) *Guard {
	if cfg.Store == nil {
		return nil
	}
	bind := make(map[string]string, len(cfg.Bind))
	for k, v := range cfg.Bind {
		bind[k] = v
	}
	return &Guard{store: cfg.Store, bind: bind, n: n, system: system, now: time.Now,
		inflight: map[uint64]struct{}{}, known: map[string]view{}, stashed: map[string]sighting{},
		rules: map[string]cached{}, slots: map[string]time.Time{}}
}

// SetClock replaces the guard's clock, for tests.
func (g *Guard) SetClock(now func() time.Time) {
	if g != nil {
		g.now = now
	}
}

// Bound returns the dependency jobs of kind are bound to, if any.
func (g *Guard) Bound(kind string) (string, bool) {
	if g == nil {
		return "", false
	}
	dep, ok := g.bind[kind]
	return dep, ok
}

// Pass is the answer to one run's question.
type Pass struct {
	// Dep is the dependency the job is bound to; "" for none (the job
	// runs, and only an error bound to a dependency is reported).
	Dep string
	// Asked reports whether the store answered; a store that failed lets
	// the job run.
	Asked bool
	// Verdict is the store's answer, when Asked.
	Verdict breaker.Verdict
	// At is when the answer came, on the local clock.
	At time.Time

	jobID string
	seq   uint64
}

// Deferred reports whether the run must not happen now.
func (p Pass) Deferred() bool { return p.Asked && !p.Verdict.Runs() }

// Ask asks the store whether a run of job jobID, of kind, may start now,
// and tells observers of any change the answer shows (with ctx, the
// attempt's context). retry says the engine knows the run to be a retry
// or a rerun of a deferred job. A job bound to nothing runs without a
// question; a store that fails lets the job run, the error reported.
func (g *Guard) Ask(ctx context.Context, kind, jobID string, retry bool) Pass {
	dep, ok := g.Bound(kind)
	if !ok {
		return Pass{}
	}
	p := Pass{Dep: dep, jobID: jobID}
	job := breaker.Job{Kind: breaker.Fresh, ID: jobID}
	if retry {
		job.Kind = breaker.Retry
	}
	if breaker.CheckJobID(jobID) != nil {
		job.ID = "" // not rememberable; the question still counts
	}
	seq := g.begin()
	v, err := safe.Within(ctx, Timeout, "breaker store: allow", func(ctx context.Context) (breaker.Verdict, error) {
		return g.store.Allow(ctx, dep, job)
	})
	p.At = g.now()
	if err != nil {
		g.end(seq)
		g.n.Report(fmt.Errorf("%s: breaker: asking about dependency %q for job %q, running it anyway: %w", g.prefix(), dep, jobID, err))
		return p
	}
	p.Asked, p.Verdict, p.seq = true, v, seq
	next := time.Time{}
	if v.Transition.To == breaker.Open {
		next = v.Until
	}
	g.saw(ctx, dep, v.Transition, seq, next)
	return p
}

// Deferral returns how long after p.At a run p holds back waits, and the
// result observers are told (the adapter sets FireAt to what its engine
// applied, when it knows better).
//
//   - Held back by an open breaker (or by probes all taken): until the
//     verdict's Until, plus a jitter of up to one first cool-down of the
//     breaker, keyed by the job and the deferral, so that the runs one
//     breaker held back do not all ask again at the same moment.
//   - Held back by the retry budget: the verdict's Until is when the next
//     token is due, the same for every run asking; if they all asked again
//     then, all but one would be held back again, over and over, a herd of
//     questions as large as the backlog. So each run of this process gets
//     a slot of its own instead, one token's worth of time (at the
//     budget's rate: its floor and the share of the successes it
//     releases) after the slot before: this process then asks no faster
//     than the budget pays out, whatever its backlog, and the runs it
//     held back come back in the order it held them back. A run that finds
//     its token taken by another process takes the next free slot.
func (g *Guard) Deferral(ctx context.Context, p Pass) (time.Duration, observe.Result) {
	wait := p.Verdict.Wait(p.At)
	r := g.ruleOf(ctx, p.Dep)
	key := backoff.Key(p.jobID + "@" + strconv.FormatInt(p.Verdict.Until.UnixMilli(), 10))
	var d time.Duration
	if p.Verdict.Decision == breaker.DeferBudget && r.slot > 0 {
		g.mu.Lock()
		fire := p.At.Add(wait)
		if next := g.slots[p.Dep]; next.After(fire) {
			fire = next
		}
		g.slots[p.Dep] = fire.Add(r.slot)
		g.mu.Unlock()
		d = fire.Sub(p.At) + jitter(r.slot, key)
	} else {
		spread := r.spread
		if spread <= 0 {
			spread = DefaultSpread
			if p.Verdict.Decision == breaker.DeferOpen && wait > 0 {
				spread = wait
			}
		}
		d = wait + jitter(spread, key)
	}
	return d, observe.Result{
		Err:      &observe.DeferredError{Dependency: p.Dep, Decision: p.Verdict.Decision, Until: p.Verdict.Until},
		Decision: backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: d},
		FireAt:   p.At.Add(d),
		Counting: observe.Deferred,
	}
}

// jitter is a keyed draw from [0, spread).
func jitter(spread time.Duration, key backoff.Source) time.Duration {
	j, _ := safe.Value("policy", time.Duration(0), func() time.Duration {
		return backoff.Delay(backoff.Must(backoff.Jitter(backoff.Must(backoff.Fixed(spread)))), 1, key)
	})
	return j
}

// ruleInfo is what a deferral needs of a dependency's breaker: its first
// cool-down (the spread of runs held back while it is open) and one
// token's worth of time at its budget's rate (the slot of a run held back
// by the budget). Zero values are unknown.
type ruleInfo struct {
	spread, slot time.Duration
}

// ruleOf reads dep's breaker from the store's status (its text form), once
// a minute.
func (g *Guard) ruleOf(ctx context.Context, dep string) ruleInfo {
	now := g.now()
	g.mu.Lock()
	c, ok := g.rules[dep]
	g.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.info
	}
	var info ruleInfo
	st, err := safe.Within(ctx, Timeout, "breaker store: status", func(ctx context.Context) (breaker.Status, error) {
		return g.store.Status(ctx, dep)
	})
	if err == nil && st.Rule != "" {
		if b, perr := breaker.Parse(st.Rule); perr == nil {
			info.spread, _ = safe.Value("policy", time.Duration(0), func() time.Duration { return b.Cooldown(dep, 1) })
			info.slot = tokenTime(b.Budget())
		}
	}
	if info.spread > 0 {
		g.mu.Lock()
		g.rules[dep] = cached{info: info, until: now.Add(spreadTTL)}
		g.mu.Unlock()
	}
	return info
}

// tokenTime is how long budget b takes to earn one token while every
// token it earns goes to a retry that succeeds: floor + ratio x rate
// tokens a second, so a rate of floor / (1 - ratio) (taken at no more
// than ten times the floor). Zero for the zero Budget.
func tokenTime(b breaker.Budget) time.Duration {
	if b.IsZero() {
		return 0
	}
	rate := b.Floor() / max(1-b.Ratio(), 0.1)
	return max(time.Duration(float64(time.Second)/rate), time.Microsecond)
}

// Outcome is what a run that ended with err says about the dependency dep
// it is bound to ("" for none), and the other dependency, if any, its
// error binds the failure to. neutral says the adapter knows the run says
// nothing about anything (cut short by a shutdown, cancelled by an
// operator, snoozed by the job itself, or given up by a rule of the
// engine's own).
//
//   - nil: a success;
//   - neutral, or an error marked backoff.Permanent: neutral (a
//     permanent error is the job's own trouble; a probe's slot is freed);
//   - an error bound to dep with breaker.Dependency, or any other error of
//     a job bound to dep: a failure;
//   - an error bound to another dependency: neutral for dep, and a failure
//     of the other one.
func Outcome(dep string, err error, neutral bool) (own breaker.Outcome, other string) {
	if err == nil && !neutral {
		return breaker.Success, ""
	}
	if neutral {
		return breaker.Neutral, ""
	}
	if permanent, perr := safe.Value("policy", false, func() bool { return backoff.IsPermanent(err) }); perr == nil && permanent {
		return breaker.Neutral, ""
	}
	if marked, ok := breaker.DependencyOf(err); ok && marked != dep {
		return breaker.Neutral, marked
	}
	return breaker.Failure, ""
}

// Done reports what the run p let through did: err is its error and
// neutral as for [Outcome]. ctx is the attempt's context; the reports are
// sent without its cancellation (a shutdown must still free a probe's
// slot), bounded by Timeout.
func (g *Guard) Done(ctx context.Context, p Pass, err error, neutral bool) {
	if g == nil || p.Deferred() {
		return
	}
	own, other := Outcome(p.Dep, err, neutral)
	if p.Dep == "" && own == breaker.Failure {
		// Not bound, not marked: nothing to say.
		return
	}
	if p.Dep != "" {
		g.record(ctx, p.Dep, p.Verdict.Ticket, own)
	}
	if other != "" {
		g.record(ctx, other, breaker.Ticket{}, breaker.Failure)
	}
}

// record sends one report and tells observers of the change it made. A
// probe's report the store did not take (it was down, or hung past its
// timeout) is sent again in the background until it does: the breaker is
// half-open until its probes report, and without it a probe lost that way
// would hold its slot until its lease ran out (a minute by default) after
// the store came back.
func (g *Guard) record(ctx context.Context, dep string, t breaker.Ticket, o breaker.Outcome) {
	if breaker.CheckName(dep) != nil {
		return // a marker with a name no store can keep
	}
	err := g.send(ctx, dep, t, o)
	if err == nil {
		return
	}
	if t.Probe && t.Admitted {
		g.n.Report(fmt.Errorf("%s: breaker: reporting a %s of dependency %q, a probe's report, sent again until the store takes it: %w", g.prefix(), o, dep, err))
		go g.resend(context.WithoutCancel(ctx), dep, t, o)
		return
	}
	g.n.Report(fmt.Errorf("%s: breaker: reporting a %s of dependency %q: %w", g.prefix(), o, dep, err))
}

// Resending a probe's lost report: first after ResendFirst, then at
// doubling intervals up to ResendEvery, for at most ResendFor. So once the
// store answers again, a half-open breaker whose probe's worker lives
// hears the probe's outcome within ResendEvery (plus one call); a probe
// whose worker died frees its slot when its lease runs out.
const (
	ResendFirst = 100 * time.Millisecond
	ResendEvery = time.Second
	ResendFor   = 5 * time.Minute
)

// resend sends a probe's report again until the store takes it, or for
// ResendFor.
func (g *Guard) resend(ctx context.Context, dep string, t breaker.Ticket, o breaker.Outcome) {
	first, every, total := g.resendTimes()
	deadline := time.Now().Add(total)
	wait := first
	for {
		timer := time.NewTimer(wait)
		<-timer.C
		err := g.send(ctx, dep, t, o)
		if err == nil {
			return
		}
		if !time.Now().Before(deadline) {
			g.n.Report(fmt.Errorf("%s: breaker: a probe's %s report of dependency %q was not taken in %s, giving up (its slot frees when its lease ends): %w", g.prefix(), o, dep, total, err))
			return
		}
		wait = min(2*wait, every)
	}
}

// resendTimes are the resend intervals: the constants, or a test's.
func (g *Guard) resendTimes() (first, every, total time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resendEvery > 0 {
		return g.resendFirst, g.resendEvery, g.resendFor
	}
	return ResendFirst, ResendEvery, ResendFor
}

// send sends one report, bounded by Timeout, and tells observers of the
// change it made.
func (g *Guard) send(ctx context.Context, dep string, t breaker.Ticket, o breaker.Outcome) error {
	seq := g.begin()
	rctx := context.WithoutCancel(ctx)
	tr, err := safe.Within(rctx, Timeout, "breaker store: record", func(ctx context.Context) (breaker.Transition, error) {
		return g.store.Record(ctx, dep, t, o)
	})
	if err != nil {
		g.end(seq)
		return err
	}
	next := time.Time{}
	if tr.To == breaker.Open && (tr.Changed() || g.viewOf(dep) != breaker.Open) {
		// When the next probe may run is in the store's status: one more
		// round trip, once per trip this process makes, or learns of from
		// a report (the breaker was open already: another process tripped
		// it while this run ran), for every change to open is told with
		// its next probe.
		st, serr := safe.Within(rctx, Timeout, "breaker store: status", func(ctx context.Context) (breaker.Status, error) {
			return g.store.Status(ctx, dep)
		})
		if serr == nil && st.State == breaker.Open {
			next = st.NextProbe
		}
	}
	g.saw(ctx, dep, tr, seq, next)
	return nil
}

// viewOf is the state this process last saw of dep's breaker.
func (g *Guard) viewOf(dep string) breaker.State {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.known[dep].state
}

// begin numbers a store call as it starts.
func (g *Guard) begin() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	g.inflight[g.seq] = struct{}{}
	return g.seq
}

// end forgets a store call that failed.
func (g *Guard) end(seq uint64) {
	g.mu.Lock()
	delete(g.inflight, seq)
	g.mu.Unlock()
}

// saw takes what store call seq showed of dep's breaker (tr: its state
// before and after the call) and tells observers: a change the call made,
// and a change another process made since this one last looked (learned).
//
// The calls of one process overlap, the store answers them in an order
// their numbers do not tell, and it says nothing of which call made a
// change it shows. So a change a call made is told at once, and a state a
// call saw is kept aside until every call it overlapped has been answered:
// then it is learned if it is newer than the view (its call started after
// the view's was answered) and differs from it, and dropped otherwise, for
// one of those calls may have made it here. Without that, a process that
// trips the breaker while another of its calls finds it open would tell
// the trip twice, and an answer from before the trip would undo it.
func (g *Guard) saw(ctx context.Context, dep string, tr breaker.Transition, seq uint64, nextProbe time.Time) {
	var out []told
	now := g.now()
	g.mu.Lock()
	delete(g.inflight, seq)
	if _, ok := g.known[dep]; !ok {
		g.known[dep] = view{state: breaker.Closed}
	}
	mark := g.seq
	if tr.Changed() {
		// This process's own change: told at once, exactly.
		c := observe.BreakerChange{System: g.system, Dependency: dep, From: tr.From, To: tr.To, At: now}
		if tr.To == breaker.Open {
			c.NextProbe = nextProbe
		}
		out = append(out, told{ctx, c})
		g.known[dep] = view{state: tr.To, mark: max(mark, g.known[dep].mark)}
	} else if tr.From != g.known[dep].state {
		// Kept until every call it overlapped has been answered: one of
		// them may have made the change here.
		if s, ok := g.stashed[dep]; !ok || seq > s.seq {
			g.stashed[dep] = sighting{ctx: ctx, state: tr.From, seq: seq, mark: mark, nextProbe: nextProbe}
		}
	}
	for d, s := range g.stashed {
		if !g.earlierInflight(s.mark + 1) {
			delete(g.stashed, d)
			out = g.learn(out, d, s, now)
		}
	}
	g.mu.Unlock()
	for _, t := range out {
		g.n.BreakerChanged(t.ctx, t.c)
	}
}

// told is a change to tell, with the context to tell it with.
type told struct {
	ctx context.Context
	c   observe.BreakerChange
}

// learn takes sighting s of dep's breaker into the view, when it is newer
// than the view, appending to out the change it shows. The caller holds
// g.mu.
func (g *Guard) learn(out []told, dep string, s sighting, now time.Time) []told {
	v := g.known[dep]
	if s.seq <= v.mark || s.state == v.state {
		return out // not known to be newer, or no news
	}
	g.known[dep] = view{state: s.state, mark: s.mark}
	c := observe.BreakerChange{System: g.system, Dependency: dep, From: v.state, To: s.state, At: now, Learned: true}
	if s.state == breaker.Open {
		c.NextProbe = s.nextProbe
	}
	return append(out, told{s.ctx, c})
}

// earlierInflight reports whether a store call started before seq is still
// waiting for its answer. The caller holds g.mu.
func (g *Guard) earlierInflight(seq uint64) bool {
	for s := range g.inflight {
		if s < seq {
			return true
		}
	}
	return false
}

// prefix is the adapter's name for error messages.
func (g *Guard) prefix() string {
	if g.n != nil && g.n.Prefix != "" {
		return g.n.Prefix
	}
	return "rebound"
}
