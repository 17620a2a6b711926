package conformance

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/guard"
	"github.com/rebound-go/rebound/internal/notify"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// refAdapter is the reference adapter value: what a user configures (the
// rules, the key, the fallback delay, the timeout), the notifier that
// tells the observer, give-up hook and error handler, and what it keeps
// per job. Engines started by StartShared share one.
type refAdapter struct {
	h   *ReferenceHarness
	cfg Config
	n   notify.Notifier
	// g guards the jobs bound to a dependency (Config.Breaker and
	// Dependencies); nil guards nothing.
	g *guard.Guard

	mu sync.Mutex
	// open counts the running attempts of each job: the adapter's per-job
	// bookkeeping, reported by Pending.
	open map[refKey]int
	// decided holds decisions by job ID and attempt, for faultSharedByID.
	decided map[string]backoff.Decision
	// byPayload holds the running attempts by payload, oldest first, for
	// faultMatchByPayload.
	byPayload map[string][]*refOpen
}

// refOpen is a running attempt as the adapter with faultMatchByPayload
// keeps it.
type refOpen struct {
	id   string
	n    int
	octx context.Context
	att  observe.Attempt
}

// openRun records a running attempt under its payload.
func (a *refAdapter) openRun(payload []byte, o refOpen) *refOpen {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := &o
	a.byPayload[string(payload)] = append(a.byPayload[string(payload)], p)
	return p
}

// claimRun takes the oldest running attempt with the payload out of the
// table, as an adapter that tells runs apart by payload finds "the" run
// of an ending attempt; nil when there is none.
func (a *refAdapter) claimRun(payload []byte) *refOpen {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := a.byPayload[string(payload)]
	if len(list) == 0 {
		return nil
	}
	first := list[0]
	if len(list) == 1 {
		delete(a.byPayload, string(payload))
	} else {
		a.byPayload[string(payload)] = list[1:]
	}
	return first
}

// dropRun takes the attempt out of the table.
func (a *refAdapter) dropRun(payload []byte, o *refOpen) {
	if o == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	list := a.byPayload[string(payload)]
	for i, p := range list {
		if p == o {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(a.byPayload, string(payload))
	} else {
		a.byPayload[string(payload)] = list
	}
}

// refKey names one job of one engine.
type refKey struct {
	e  *refEngine
	id string
}

// refDefaultFallback is the reference adapter's fallback delay when the
// Config gives none.
const refDefaultFallback = time.Minute

func newRefAdapter(h *ReferenceHarness, cfg Config) *refAdapter {
	a := &refAdapter{h: h, cfg: cfg, open: map[refKey]int{}, decided: map[string]backoff.Decision{},
		byPayload: map[string][]*refOpen{}}
	a.n = notify.Notifier{Observer: cfg.Observer, GiveUp: cfg.GiveUp, OnError: cfg.OnError, Prefix: "conformance reference"}
	if h.fault == faultNoObserver {
		a.n.Observer = nil
	}
	a.g = guard.New(guard.Config{Store: cfg.Breaker, Bind: cfg.Dependencies}, &a.n, "reference")
	return a
}

// rule returns the rule for jobs of the kind.
func (a *refAdapter) rule(kind string) backoff.Rule {
	if r, ok := a.cfg.KindRules[kind]; ok && a.h.fault != faultIgnoreKinds {
		return r
	}
	return a.cfg.Rule
}

// maxAttempts is the cap the engine applies for rule, and tells
// observers.
func (a *refAdapter) maxAttempts(rule backoff.Rule) int {
	n := rule.MaxAttempts()
	if lim := a.h.Limits().MaxAttempts; lim > 0 && n > lim {
		n = lim
	}
	return n
}

// key returns the job's jitter source: Config.Key's, or backoff.Key(id)
// when there is none or it panics.
func (a *refAdapter) key(id string) backoff.Source {
	if a.h.fault == faultUnkeyed {
		return backoff.Key("reference")
	}
	if a.cfg.Key == nil {
		return backoff.Key(id)
	}
	src, err := safe.Value("key", backoff.Key(id), func() backoff.Source { return a.cfg.Key(id) })
	if err != nil {
		a.n.Report(err)
	}
	return src
}

// decide is the engine's retry hook, called by the worker after failed
// attempt number attempt and by HookDelay: the rule's decision for the
// job's kind and key, within the engine's limits. A panicking policy is
// recovered and reported; the job then retries after the fallback delay,
// unless its error is permanent or its attempts are used up. e is the
// engine asking (nil for HookDelay).
func (a *refAdapter) decide(e *refEngine, id, kind string, attempt int, err error) (d backoff.Decision, panicked bool) {
	rule := a.rule(kind)
	switch a.h.fault {
	case faultRetryPermanent:
		if backoff.IsPermanent(err) {
			err = errors.New(safe.Message(err))
		}
	case faultIgnoreHint:
		if _, ok := backoff.RetryAfterHint(err); ok {
			err = errors.New(safe.Message(err))
		}
	case faultSharedByID:
		if e != nil {
			a.mu.Lock()
			cached, ok := a.decided[id+"#"+strconv.Itoa(attempt)]
			a.mu.Unlock()
			if ok {
				return cached, false
			}
			defer func() {
				a.mu.Lock()
				a.decided[id+"#"+strconv.Itoa(attempt)] = d
				a.mu.Unlock()
			}()
		}
	}
	capN := a.maxAttempts(rule)
	if a.h.fault == faultCapPlusOne && capN < math.MaxInt {
		capN++
	}
	if capN != rule.MaxAttempts() {
		r, rerr := backoff.NewRule(rule.Policy(), max(capN, 1))
		if rerr == nil {
			rule = r
		}
	}
	src := a.key(id)
	if e == nil && a.h.fault == faultHookUnguarded {
		return rule.Decide(attempt, err, src), false
	}
	d, perr := safe.Value("policy", backoff.Decision{}, func() backoff.Decision { return rule.Decide(attempt, err, src) })
	if perr != nil {
		a.n.Report(perr)
		permanent, _ := safe.Value("policy", false, func() bool { return backoff.IsPermanent(err) })
		switch {
		case permanent:
			d = backoff.Decision{Outcome: backoff.OutcomePermanent}
		case attempt >= capN:
			d = backoff.Decision{Outcome: backoff.OutcomeExhausted}
		default:
			d = backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: a.cfg.FallbackDelay}
			if d.Delay <= 0 {
				d.Delay = refDefaultFallback
			}
		}
	}
	if d.Retry() {
		d.Delay = a.store(d.Delay)
	}
	return d, perr != nil
}

// store returns the delay the engine stores for d: clamped to its longest
// delay and rounded up to its resolution.
func (a *refAdapter) store(d time.Duration) time.Duration {
	lim := a.h.Limits()
	if lim.MaxDelay > 0 && d > lim.MaxDelay {
		d = lim.MaxDelay
	}
	if r := lim.Resolution; r > 0 && d%r != 0 {
		d += r - d%r
	}
	return d
}

// timeout is the per-attempt timeout the engine applies: Config.Timeout,
// rounded up to the engine's timeout resolution.
func (a *refAdapter) timeout() time.Duration {
	t := a.cfg.Timeout
	if r := a.h.Limits().TimeoutResolution; r > 0 && t%r != 0 {
		t += r - t%r
	}
	return t
}

// text is the error message the engine stores: valid UTF-8, at most
// MaxErrorBytes, whatever the error does.
func (a *refAdapter) text(err error) string {
	if a.h.fault == faultErrorRaw {
		return safe.Message(err)
	}
	return safe.Truncate(strings.ToValidUTF8(safe.Message(err), "\uFFFD"), a.h.Limits().MaxErrorBytes)
}

// hold and release count a job's running attempts.
func (a *refAdapter) hold(e *refEngine, id string) {
	a.mu.Lock()
	a.open[refKey{e, id}]++
	a.mu.Unlock()
}

func (a *refAdapter) release(e *refEngine, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := refKey{e, id}
	if a.open[k]--; a.open[k] <= 0 {
		delete(a.open, k)
	}
}
