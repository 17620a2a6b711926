package conformance

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// scheduleIDs are the job IDs the Schedule check asks the hook about.
// They are decimal integers so that every engine can carry them (River's
// IDs are int64).
var scheduleIDs = []string{"1", "2", "7", "42", "1000", "123456789", "9007199254740993"}

// checkSchedule compares the adapter's hook with the core, without running
// anything: for several policies, job IDs and attempts 1..MaxAttempts, the
// hook must retry exactly when the rule does, after the core's delay for
// that job's key, rounded up by less than the declared resolution.
func checkSchedule(e *env) {
	errFail := errors.New("conformance: scripted failure")
	exp := func(b, c time.Duration) backoff.ExponentialPolicy { return backoff.Must(backoff.Exponential(b, c)) }
	cases := []struct {
		p        backoff.Policy
		max      int
		jittered bool
	}{
		{exp(100*time.Millisecond, 10*time.Second), 8, false},
		{backoff.Must(backoff.Linear(50*time.Millisecond, 75*time.Millisecond, time.Second)), 6, false},
		{backoff.Must(backoff.Fixed(250 * time.Millisecond)), 1, false},
		{backoff.Must(backoff.Jitter(exp(100*time.Millisecond, 10*time.Second))), 8, true},
		{backoff.Must(backoff.EqualJitter(exp(time.Second, time.Minute))), 6, true},
		{backoff.Must(backoff.Proportional(0.3, exp(200*time.Millisecond, 30*time.Second))), 6, true},
		{backoff.Must(backoff.Decorrelated(100*time.Millisecond, 5*time.Second)), 10, true},
	}
	for _, c := range cases {
		rule := e.rule(c.p, c.max)
		cfg, _ := e.config(rule, newWitness())
		cfg = e.hookConfig(cfg)
		for a := 1; a <= c.max; a++ {
			seen := map[time.Duration]bool{}
			var lo, hi time.Duration
			for i, id := range scheduleIDs {
				want := rule.Decide(a, errFail, backoff.Key(id))
				if i == 0 || want.Delay < lo {
					lo = want.Delay
				}
				hi = max(hi, want.Delay)
				got, retry := e.hookDelay(cfg, id, a, errFail)
				seen[got] = true
				e.compareHook(rule, id, a, "a failure", want, got, retry)
			}
			// The core's delays for these keys differ; an engine that stores
			// coarse fire times may still round them to one value, so the
			// hook only has to tell them apart when they lie at least one
			// resolution step apart.
			if c.jittered && a < c.max && len(seen) == 1 && hi-lo >= max(e.lim.Resolution, 1) {
				e.errorf("rule %s, attempt %d: the hook gave all %d job IDs the same delay; jitter ignores the job key (want backoff.Key(jobID))",
					rule, a, len(scheduleIDs))
			}
		}
		// A permanent error never retries; a retry-after hint raises the delay.
		for _, id := range scheduleIDs[:3] {
			perm := backoff.Permanent(errFail)
			got, retry := e.hookDelay(cfg, id, 1, perm)
			e.compareHook(rule, id, 1, "a permanent error", rule.Decide(1, perm, backoff.Key(id)), got, retry)
			hinted := backoff.RetryAfter(errFail, rule.Policy().Max()+1500*time.Millisecond)
			got, retry = e.hookDelay(cfg, id, 1, hinted)
			e.compareHook(rule, id, 1, "a retry-after hint of "+(rule.Policy().Max()+1500*time.Millisecond).String(),
				rule.Decide(1, hinted, backoff.Key(id)), got, retry)
		}
	}
}

// compareHook records how the hook's answer differs from the core's.
func (e *env) compareHook(rule backoff.Rule, id string, attempt int, after string, want backoff.Decision, got time.Duration, retry bool) {
	where := fmt.Sprintf("rule %s, job %s, attempt %d failing with %s", rule, id, attempt, after)
	switch {
	case retry != want.Retry():
		verb := map[bool]string{true: "retries", false: "gives up"}
		e.errorf("%s: the hook %s, want it to %s (%v)", where, verb[retry], map[bool]string{true: "retry", false: "give up"}[want.Retry()], want.Outcome)
	case !retry:
	case got < want.Delay:
		e.errorf("%s: the hook delays %v, want the core's %v for backoff.Key(%q): %v short; a hook may round up, never down",
			where, got, want.Delay, id, want.Delay-got)
	case e.lim.Resolution == 0 && got != want.Delay:
		e.errorf("%s: the hook delays %v, want exactly the core's %v for backoff.Key(%q) (the harness declares exact resolution)",
			where, got, want.Delay, id)
	case e.lim.Resolution > 0 && got-want.Delay >= e.lim.Resolution:
		e.errorf("%s: the hook delays %v, want the core's %v for backoff.Key(%q) rounded up by less than the declared resolution %v",
			where, got, want.Delay, id, e.lim.Resolution)
	}
}

// checkAttemptNumbering runs jobs through several attempts and checks that
// the harness reports Job.Attempt 1, 2, 3... (verify checks this for every
// job of every check; this check exists so the property has a name).
func checkAttemptNumbering(e *env) {
	w := e.start("numbering", e.rule(backoff.Must(backoff.Fixed(unit)), 4))
	w.enqueue(script{Always: true})
	w.enqueue(script{Fail: 2})
	w.verify(w.settle())
}

// checkAttemptsCap runs always-failing jobs under MaxAttempts 1, 2 and 5,
// which must run exactly that often and end failed, and jobs failing k <
// MaxAttempts times, which must run k+1 times and complete. After a quiet
// period nothing may have run again.
func checkAttemptsCap(e *env) {
	var ws []*worker
	for _, max := range []int{1, 2, 5} {
		w := e.start(fmt.Sprintf("cap %d", max), e.rule(backoff.Must(backoff.Fixed(unit)), max))
		w.enqueue(script{Always: true})
		for k := range max {
			w.enqueue(script{Fail: k})
		}
		ws = append(ws, w)
	}
	states := make([]map[string]State, len(ws))
	for i, w := range ws {
		states[i] = w.settle()
	}
	ws[len(ws)-1].quiet()
	for i, w := range ws {
		w.verify(states[i])
		w.recheck(states[i])
	}
}

// timingBase is the first delay of the NeverEarlyBoundedLate check: 30 ms,
// or one and a half times the engine's resolution, so that an engine that
// truncates fire times to its resolution starts retries visibly early.
func timingBase(lim Limits) time.Duration {
	return max(30*time.Millisecond, lim.Resolution*3/2)
}

// checkTiming runs always-failing jobs under a keyed, jittered exponential
// policy and checks every gap: never before the computed delay, never more
// than Resolution + Lateness after it (verify does the comparing).
func checkTiming(e *env) {
	b := timingBase(e.lim)
	p := backoff.Must(backoff.EqualJitter(backoff.Must(backoff.Exponential(b, 2*b))))
	w := e.start("timing", e.rule(p, 3))
	w.enqueueN(8, script{Always: true})
	w.verify(w.settle())
}

// checkPermanent runs jobs whose first attempt fails with backoff.Permanent:
// each must run once and end failed, the hook must not schedule a retry,
// and after a quiet period nothing may have run again.
func checkPermanent(e *env) {
	w := e.start("permanent", e.rule(backoff.Must(backoff.Fixed(unit)), 5))
	ids := w.enqueueN(3, script{Permanent: true})
	for _, id := range ids {
		perm := backoff.Permanent(errors.New("conformance: scripted failure"))
		if d, retry := e.hookDelay(e.hookConfig(w.cfg), id, 1, perm); retry {
			e.errorf("%s: job %s: the hook schedules a retry after %v for a permanent error, want no retry", w.label, id, d)
		}
	}
	states := w.settle()
	w.quiet()
	w.verify(states)
	w.recheck(states)
}

// checkRetryAfter runs jobs whose first attempt fails with a
// backoff.RetryAfter hint: one hint longer than the policy's delay, which
// the gap must honour, and one shorter, where the policy's delay applies.
func checkRetryAfter(e *env) {
	long := max(6*unit, 2*e.lim.Resolution)
	w := e.start("retry-after", e.rule(backoff.Must(backoff.Fixed(2*unit)), 3))
	w.enqueue(script{Fail: 1, After: long})
	w.enqueue(script{Fail: 2, After: long})
	w.enqueue(script{Fail: 1, After: unit / 2})
	w.verify(w.settle())
}

// checkPanic runs jobs whose handler panics: a panic is one failed attempt
// (retried under the rule, counted against the cap), and the worker keeps
// serving other jobs during and after the panics.
//
// The observer must be told each panic as the attempt's error, an
// *observe.PanicError{Op: "handler"}; the error handler may be told it too,
// once per panic.
func checkPanic(e *env) {
	w := e.start("panic", e.rule(backoff.Must(backoff.Fixed(unit)), 3))
	w.allow = w.allowUpTo(4, func(err error) bool {
		pe := panicError(err)
		return pe != nil && pe.Op == "handler"
	})
	first := w.enqueue(script{Fail: 1, Panic: true})
	w.enqueue(script{Always: true, Panic: true})
	// Wait for the first panic to have happened before enqueueing the
	// jobs that prove the worker still serves.
	w.waitFor(10*time.Second, func() bool { return first == "" || w.finished(first, 0) })
	w.enqueueN(3, script{})
	w.enqueue(script{Fail: 1})
	w.verify(w.settle())
}

// allowUpTo returns a Config.OnError judge that accepts at most n reports
// that ok accepts.
func (w *worker) allowUpTo(n int, ok func(error) bool) func(error) bool {
	var mu sync.Mutex
	return func(err error) bool {
		mu.Lock()
		defer mu.Unlock()
		if n == 0 || !ok(err) {
			return false
		}
		n--
		return true
	}
}
