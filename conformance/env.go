package conformance

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/internal/stall"
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
	slack time.Duration // Resolution + Lateness: how late a retry may start on an idle machine
	// lag is the witness of this process's own timer lateness during the
	// check (nil on fake time): every lateness bound is slack plus what it
	// saw over the same interval (see allow).
	lag *stall.Witness
	// fallback is the Config.FallbackDelay of every worker.
	fallback time.Duration
	lacks    map[Feature]string
	st       *stats
	// hookReports receives what the harness reports while the suite calls
	// HookDelay; the suite does not judge it.
	hookReports *witness

	// skipped, when set, is why the check found it does not apply once it
	// started (the engine lacks what it needs); runCheck skips it then.
	skipped string

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
	e.lag = newLagWitness(t, h)
	return e
}

// allow returns how late a retry due in the interval from..to may start:
// the declared Resolution + Lateness, plus how far this process's own
// timers fell behind over the same interval (a stalled machine widens the
// bound; an engine late by itself still fails). held says the bound is
// applied (not to a Herd retry, say): the widest applied allowance is kept
// for the report.
func (e *env) allow(from, to time.Time, held bool) (bound, lag time.Duration) {
	lag = e.lag.Lag(from, to)
	if held {
		e.st.witnessed(lag)
	}
	return e.slack + lag, lag
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
