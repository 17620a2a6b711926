package reboundriver

import (
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/adapters/river/internal/riverclock"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/guard"
	"github.com/rebound-go/rebound/internal/notify"
	"github.com/rebound-go/rebound/internal/option"
)

// System is the value of [observe.Attempt.System] for River jobs.
const System = "river"

// DefaultFallbackDelay is the retry delay used when a policy panics, unless
// [WithFallbackDelay] sets another.
const DefaultFallbackDelay = time.Minute

// A Retrier applies a [backoff.Rule] to River jobs. Put the same value in
// river.Config as RetryPolicy and in Plugins: it is a
// river.ClientRetryPolicy, a rivertype.WorkerMiddleware that captures each
// attempt's outcome and enforces the attempts cap, a
// rivertype.JobInsertMiddleware that writes the cap into inserted jobs, and
// a rivertype.HookWorkEnd that counts an attempt outliving its timeout as
// a failure.
//
// A Retrier is safe for concurrent use by any number of clients and workers.
type Retrier struct {
	rule     backoff.Rule
	kinds    map[string]backoff.Rule
	key      func(*rivertype.JobRow) backoff.Source
	fallback time.Duration
	notify   notify.Notifier
	store    *store
	now      func() time.Time
	brk      guard.Config // WithBreaker's store and WithDependency's bindings
	guard    *guard.Guard // built from brk; nil guards nothing
}

func init() {
	riverclock.Set = func(r any, now func() time.Time) {
		r.(*Retrier).now = now
		r.(*Retrier).guard.SetClock(now)
	}
}

// Compile-time checks that a Retrier plugs into River where documented.
var (
	_ river.ClientRetryPolicy       = (*Retrier)(nil)
	_ rivertype.WorkerMiddleware    = (*Retrier)(nil)
	_ rivertype.JobInsertMiddleware = (*Retrier)(nil)
	_ rivertype.HookWorkEnd         = (*Retrier)(nil)
	_ rivertype.Plugin              = (*Retrier)(nil)
)

// New returns a Retrier that applies rule to every job kind not given its own
// rule with [WithKindRule].
func New(rule backoff.Rule, opts ...Option) (*Retrier, error) {
	if err := option.CheckRule(rule); err != nil {
		return nil, fmt.Errorf("reboundriver: %w", err)
	}
	r := &Retrier{
		rule:     rule,
		fallback: DefaultFallbackDelay,
		notify:   notify.Notifier{Prefix: "reboundriver"},
		now:      time.Now,
	}
	r.store = newStore(r.forgotten)
	if err := option.Apply(r, opts); err != nil {
		return nil, err
	}
	if err := r.brk.Validate("reboundriver"); err != nil {
		return nil, err
	}
	r.guard = guard.New(r.brk, &r.notify, System)
	return r, nil
}

// Rule returns the default rule: the one applied to kinds without a rule of
// their own.
func (r *Retrier) Rule() backoff.Rule { return r.rule }

// RuleFor returns the rule applied to jobs of the given kind.
func (r *Retrier) RuleFor(kind string) backoff.Rule {
	if rule, ok := r.kinds[kind]; ok {
		return rule
	}
	return r.rule
}

// Pending returns how many captured retry decisions wait for River to call
// NextRetry. It stays near the number of jobs failing at this moment: River
// asks for a decision microseconds after the middleware takes it, and one
// River never asks for is forgotten within two seconds of River finishing
// with the attempt (five minutes when the attempt's context never ends).
func (r *Retrier) Pending() int { return r.store.len() }

// IsMiddleware marks a Retrier as River middleware.
func (r *Retrier) IsMiddleware() bool { return true }

// IsHook marks a Retrier as a River hook.
func (r *Retrier) IsHook() bool { return true }

// IsPlugin marks a Retrier as a River plugin, installed in river.Config's
// Plugins as both middleware and hook.
func (r *Retrier) IsPlugin() bool { return true }
