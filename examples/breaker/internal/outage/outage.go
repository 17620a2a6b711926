// Package outage is the story the breaker examples tell on each engine: a
// payment API that is down for a while, jobs that charge through it, and
// an observer that prints what the breaker did.
package outage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/observe"
)

// Dependency is the name jobs bind the payment API by.
const Dependency = "payments"

// Jobs is how many charges each example enqueues.
const Jobs = 20

// Down is how long the payment API answers errors.
const Down = 2 * time.Second

// Rule is the jobs' retry rule: its whole schedule (at most 1.5s) is
// shorter than the outage, so without a breaker most jobs would be
// exhausted by it.
var Rule = backoff.Must(backoff.ParseRule("jitter(exponential(100ms, 1s)) x 5"))

// Breaker trips after 3 failures in a row, stays open 500ms, then 1s, 2s
// (while its probes keep failing), closes after one probe success and
// releases the backlog at 10% of the successes plus 10 a second.
var Breaker = breaker.Must(breaker.Parse("breaker(failures=3, cooldown=exponential(500ms, 2s), lease=2s, budget=budget(10%, 10/s, 2))"))

// Rules guards the payment API with Breaker, for a store.
func Rules() breaker.Rules {
	return breaker.Rules{Named: map[string]breaker.Breaker{Dependency: Breaker}}
}

// API is a payment API that is down until Down has passed since Start.
type API struct {
	mu            sync.Mutex
	start         time.Time
	calls, failed int
}

// Start prints the rule, the breaker and the outage the example runs, and
// starts the outage.
func (a *API) Start(out io.Writer) {
	fmt.Fprintf(out, "rule %s, %s\nthe payment API is down for %s; %d charges\n", Rule, Breaker, Down, Jobs)
	a.mu.Lock()
	a.start = time.Now()
	a.mu.Unlock()
}

// Charge is one call: an error bound to the dependency while it is down.
func (a *API) Charge(context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if time.Since(a.start) < Down {
		a.failed++
		return breaker.Dependency(errors.New("payments: 503 service unavailable"), Dependency)
	}
	return nil
}

// Calls returns how many calls the API got, and how many while it was
// down.
func (a *API) Calls() (calls, failed int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls, a.failed
}

// Watcher is an observe.BreakerObserver that prints every change of the
// breaker and counts what happened to the jobs.
type Watcher struct {
	Out   io.Writer
	Start time.Time

	mu                             sync.Mutex
	deferred, succeeded, exhausted int
	done                           chan struct{}
}

// NewWatcher returns a watcher printing to out.
func NewWatcher(out io.Writer) *Watcher {
	return &Watcher{Out: out, Start: time.Now(), done: make(chan struct{})}
}

// AttemptStarted implements observe.Observer.
func (w *Watcher) AttemptStarted(ctx context.Context, _ observe.Attempt) context.Context { return ctx }

// AttemptEnded counts deferred runs, successes and jobs given up.
func (w *Watcher) AttemptEnded(_ context.Context, _ observe.Attempt, r observe.Result) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case r.Counting == observe.Deferred:
		w.deferred++
	case r.Counts() && r.Err == nil:
		w.succeeded++
	case r.GaveUp():
		w.exhausted++
	}
	if w.succeeded+w.exhausted == Jobs {
		select {
		case <-w.done:
		default:
			close(w.done)
		}
	}
}

// BreakerChanged prints the change.
func (w *Watcher) BreakerChanged(_ context.Context, c observe.BreakerChange) {
	w.mu.Lock()
	defer w.mu.Unlock()
	line := fmt.Sprintf("+%.1fs  breaker %s: %s -> %s", time.Since(w.Start).Seconds(), c.Dependency, c.From, c.To)
	if !c.NextProbe.IsZero() {
		line += fmt.Sprintf(" (next probe at +%.1fs)", c.NextProbe.Sub(w.Start).Seconds())
	}
	fmt.Fprintln(w.Out, line)
}

// Wait waits until every job succeeded or was given up, or ctx ends.
func (w *Watcher) Wait(ctx context.Context) error {
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the jobs did not all end: %w", ctx.Err())
	}
}

// Finish waits until every job succeeded or was given up (see Wait), then
// prints the outcome.
func (w *Watcher) Finish(ctx context.Context, api *API) error {
	if err := w.Wait(ctx); err != nil {
		return err
	}
	w.Summary(api)
	return nil
}

// Summary prints the outcome.
func (w *Watcher) Summary(api *API) {
	w.mu.Lock()
	defer w.mu.Unlock()
	calls, failed := api.Calls()
	fmt.Fprintf(w.Out, "+%.1fs  %d of %d jobs charged, %d exhausted; %d runs deferred without spending an attempt; %d calls into the API, %d of them while it was down\n",
		time.Since(w.Start).Seconds(), w.succeeded, Jobs, w.exhausted, w.deferred, calls, failed)
}

var _ observe.BreakerObserver = (*Watcher)(nil)
