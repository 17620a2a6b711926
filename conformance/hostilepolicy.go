package conformance

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// hostilePolicy is a foreign backoff.Policy that breaks the Policy
// contract the way user code can: its Delay waits base, except that it
// panics at attempt 2 and returns math.MaxInt64 at attempt 3.
type hostilePolicy struct {
	base time.Duration
	// panics counts the panics; nil in the twin the suite computes its
	// own expectations from.
	panics *atomic.Int64
}

// The attempts at which hostilePolicy misbehaves.
const (
	hostilePanicAt = 2
	hostileHugeAt  = 3
)

// hostilePolicyPanic is what hostilePolicy panics with.
const hostilePolicyPanic = "conformance: hostile policy panics at attempt 2"

func (p hostilePolicy) Delay(attempt int, _ backoff.Source) time.Duration {
	switch attempt {
	case hostilePanicAt:
		if p.panics != nil {
			p.panics.Add(1)
		}
		panic(hostilePolicyPanic)
	case hostileHugeAt:
		return math.MaxInt64
	}
	return p.base
}

func (p hostilePolicy) Max() time.Duration { return math.MaxInt64 }

func (p hostilePolicy) String() string {
	return fmt.Sprintf("hostile(%v, panics at attempt %d, math.MaxInt64 at %d)", p.base, hostilePanicAt, hostileHugeAt)
}

// twin returns rule, or, when its policy is a counting hostilePolicy, the
// same rule on a copy that does not count: the suite's own calls must not
// be counted as the adapter's.
func twin(rule backoff.Rule) backoff.Rule {
	p, ok := rule.Policy().(hostilePolicy)
	if !ok || p.panics == nil {
		return rule
	}
	p.panics = nil
	r, err := backoff.NewRule(p, rule.MaxAttempts())
	if err != nil {
		panic(err) // the rule was valid a moment ago
	}
	return r
}

// hugeDelays are the retry-after hints near the Duration limit the
// HostilePolicy check fails jobs with.
var hugeDelays = []time.Duration{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64/2 + 1, 1 << 62}

// checkHostilePolicy runs jobs under a foreign policy that panics at
// attempt 2 and returns math.MaxInt64 at attempt 3, with an attempts cap of
// math.MaxInt, and jobs whose retry-after hints lie near the Duration
// limit. The worker must live through all of it: a panic retries after
// Config.FallbackDelay, never earlier, and is reported once as
// *observe.PanicError{Op: "policy"}; a huge delay leaves the job pending
// (not run at once by overflow) while jobs enqueued after it retry on
// time; the cap above the engine's still lets a job retry and complete.
// The hook is asked the same without running anything, and about a key
// function that panics.
func checkHostilePolicy(e *env) {
	panics := new(atomic.Int64)
	rule := e.rule(hostilePolicy{base: unit, panics: panics}, math.MaxInt)
	w := e.start("hostile policy", rule)
	w.policyPanics = panics
	twice := w.enqueue(script{Fail: 2}) // a panic at attempt 2, then a success
	// Parked jobs would succeed on their next run: an engine that runs
	// them at once shows it, and does not loop.
	if id := w.enqueue(script{Fail: hostileHugeAt}); id != "" {
		w.job(id).parked = hostileHugeAt // math.MaxInt64 after attempt 3
	}
	for _, d := range hugeDelays {
		if id := w.enqueue(script{Fail: 1, After: d}); id != "" {
			w.job(id).parked = 1
		}
	}
	// Jobs enqueued once the policy has panicked and huge delays are
	// stored must still run, and retry on time.
	if twice != "" && !w.waitFor(10*time.Second+w.budget(w.job(twice)), func() bool { return w.finished(twice, 1) }) {
		w.errorf("job %s did not run twice; the worker may have died of the policy's panic", twice)
	}
	w.enqueueN(2, script{})
	w.enqueueN(3, script{Fail: 1})
	states := w.settle()
	w.parkedStay()
	w.verify(states)
	e.hostileHook(w)
}

// parkedStay waits for every parked job to run as often as it should, then
// for a quiet period after its last run, and checks that it is still
// pending and has not run again: a delay near the Duration limit must not
// fire at once by overflow.
func (w *worker) parkedStay() {
	e := w.e
	var parked []*job
	for _, j := range w.jobList() {
		if j.parked > 0 {
			parked = append(parked, j)
		}
	}
	for _, j := range parked {
		if !w.waitFor(w.budget(j), func() bool { return w.finished(j.id, j.parked-1) }) {
			w.errorf("%s did not run %d times", j.what(), j.parked)
		}
	}
	q := 2*e.slack + 5*unit
	var last time.Time
	for _, j := range parked {
		if runs := w.rec.runs(j.id); len(runs) > 0 && runs[len(runs)-1].end.After(last) {
			last = runs[len(runs)-1].end
		}
	}
	time.Sleep(time.Until(last.Add(q)))
	for _, j := range parked {
		runs := w.rec.runs(j.id)
		n := min(j.parked, len(runs))
		if n == 0 {
			continue
		}
		r := runs[n-1]
		d, _ := w.decide(j, n, r.err)
		if len(runs) > j.parked {
			w.errorf("%s ran again %v after run %d failed, though its next delay is %v (%v as the engine stores it): a delay near the Duration limit fired at once",
				j.what(), runs[j.parked].start.Sub(r.end), n, d.Delay, e.effDelay(d.Delay))
		}
		st, err := w.eng.State(w.ctx(), j.id)
		switch {
		case err != nil:
			w.errorf("State(%s): %v", j.id, err)
		case st != StatePending:
			w.errorf("%s is %v after run %d, want it pending: its next delay is %v", j.what(), st, n, e.effDelay(d.Delay))
		}
		// The observer must be told the far fire time, not an overflowed one.
		if r.ev == nil {
			continue
		}
		w.wit.mu.Lock()
		ev := *r.ev
		w.wit.mu.Unlock()
		if ev.ends > 0 && ev.result.Decision.Retry() && ev.result.FireAt.Before(r.end.Add(e.effDelay(d.Delay)).Add(-e.lim.Resolution)) {
			w.errorf("%s: the observer was told it runs again %v after run %d, want %v (the delay, clamped to Limits.MaxDelay)",
				j.what(), ev.result.FireAt.Sub(r.end), n, e.effDelay(d.Delay))
		}
	}
}

// hostileHook asks the harness's hook about the hostile policy and about
// key functions, without running anything.
func (e *env) hostileHook(w *worker) {
	cfg := e.hookConfig(w.cfg)
	cfg.Rule = e.rule(hostilePolicy{base: unit}, math.MaxInt)
	fail := &scriptedError{n: 1}
	for _, d := range hugeDelays {
		got, retry := e.hookDelay(cfg, "1", 1, backoff.RetryAfter(fail, d))
		e.compareHuge(fmt.Sprintf("a retry-after hint of %v", d), d, got, retry)
	}
	got, retry := e.hookDelay(cfg, "1", hostileHugeAt, fail)
	e.compareHuge(fmt.Sprintf("attempt %d, where the policy returns math.MaxInt64", hostileHugeAt), math.MaxInt64, got, retry)

	got, retry = e.hookDelay(cfg, "1", hostilePanicAt, fail)
	fb := cfg.FallbackDelay
	switch {
	case !retry:
		e.errorf("hook, rule %s: after the policy panicked at attempt %d the hook gives up, want a retry after Config.FallbackDelay %v", cfg.Rule, hostilePanicAt, fb)
	case got < fb:
		e.errorf("hook, rule %s: after the policy panicked at attempt %d the hook delays %v, want Config.FallbackDelay %v: never earlier", cfg.Rule, hostilePanicAt, got, fb)
	case got-fb >= max(e.lim.Resolution, 1):
		e.errorf("hook, rule %s: after the policy panicked at attempt %d the hook delays %v, want Config.FallbackDelay %v (rounded up by less than the resolution %v)",
			cfg.Rule, hostilePanicAt, got, fb, e.lim.Resolution)
	}

	// A cap above what the engine can store: the engine's cap holds.
	capAt, label := math.MaxInt, "math.MaxInt"
	if e.lim.MaxAttempts > 0 {
		capAt, label = e.lim.MaxAttempts, fmt.Sprintf("Limits.MaxAttempts (%d)", e.lim.MaxAttempts)
	}
	if _, retry := e.hookDelay(cfg, "1", capAt, fail); retry {
		e.errorf("hook, rule %s: the hook retries after attempt %d = %s, want it to give up there", cfg.Rule, capAt, label)
	}
	if capAt-1 > hostileHugeAt {
		got, retry := e.hookDelay(cfg, "1", capAt-1, fail)
		e.compareHook(cfg.Rule, "1", capAt-1, "a failure below the cap", backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: unit}, got, retry)
	}

	// Key functions: the adapter keys jitter by Config.Key, and by
	// backoff.Key(ID) when Config.Key panics.
	jit := e.rule(backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second)))), 5)
	custom := func(id string) backoff.Source { return backoff.Key("conformance-key-" + id) }
	for _, tc := range []struct {
		key  func(string) backoff.Source
		src  func(string) backoff.Source
		what string
	}{
		{custom, custom, `a failure, with Config.Key(id) = backoff.Key("conformance-key-" + id)`},
		{func(string) backoff.Source { panic("conformance: hostile key function") }, backoff.Key, "a failure, with a Config.Key that panics (want backoff.Key(id))"},
	} {
		kcfg := cfg
		kcfg.Rule, kcfg.Key = jit, tc.key
		for _, id := range scheduleIDs[:4] {
			for a := 1; a <= 4; a++ {
				got, retry := e.hookDelay(kcfg, id, a, fail)
				e.compareHook(jit, id, a, tc.what, jit.Decide(a, fail, tc.src(id)), got, retry)
			}
		}
	}
}

// compareHuge records how the hook's answer to a delay d near the Duration
// limit differs from min(d, Limits.MaxDelay).
func (e *env) compareHuge(after string, d, got time.Duration, retry bool) {
	want := e.effDelay(d)
	where := "hook, after " + after
	switch {
	case !retry:
		e.errorf("%s: the hook gives up, want a retry after %v", where, want)
	case got < 0:
		e.errorf("%s: the hook delays %v, negative (overflow); want %v (the delay, clamped to Limits.MaxDelay %v)", where, got, want, e.lim.MaxDelay)
	case got < want:
		e.errorf("%s: the hook delays %v, want %v (the delay, clamped to Limits.MaxDelay %v): never less", where, got, want, e.lim.MaxDelay)
	case got-want >= max(e.lim.Resolution, 1):
		e.errorf("%s: the hook delays %v, want %v (the delay, clamped to Limits.MaxDelay %v), rounded up by less than the resolution %v",
			where, got, want, e.lim.MaxDelay, e.lim.Resolution)
	}
}
