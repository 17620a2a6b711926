package contention

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/memstore"
	"github.com/rebound-go/rebound/internal/guard"
	"github.com/rebound-go/rebound/internal/notify"
)

// SimulateBreaker is [Simulate] with a circuit breaker shared by every
// client, run exactly as an adapter runs one (rebound's breaker core in
// an in-memory store, asked before each attempt and told after, every run
// it holds back deferred without counting as an attempt), on the
// simulation's virtual clock. A conflict is a failure of the row's server;
// the breaker trips on them, holds clients back while open, lets a probe
// through, and releases the others at its budget's rate: the server gets
// the writes it can take rather than a herd that mostly conflicts.
// Deferrals counts the attempts held back; Calls counts only the writes.
func SimulateBreaker(p backoff.Policy, b breaker.Breaker, clients int, net Network, seed uint64, run int) (Run, error) {
	if b.IsZero() {
		return Run{}, errors.New("contention: the breaker is the zero Breaker, want one built with breaker.New or Parse")
	}
	return simulate(p, newBreakerGate(b, clients), clients, net, seed, run)
}

// epoch is virtual time 0 on the breaker's clock.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// errConflict is a write refused for a stale version.
var errConflict = errors.New("contention: stale version")

// breakerGate is a gate run by rebound's adapter logic (internal/guard) on
// a memstore, both on a clock the simulation sets before every call.
type breakerGate struct {
	g      *guard.Guard
	now    time.Time
	passes []guard.Pass
}

const simDep = "row"

func newBreakerGate(b breaker.Breaker, clients int) *breakerGate {
	bg := &breakerGate{now: epoch, passes: make([]guard.Pass, clients)}
	clock := func() time.Time { return bg.now }
	store := memstore.New(breaker.Rules{Default: b}, memstore.Options{Now: clock})
	bg.g = guard.New(guard.Config{Store: store, Bind: map[string]string{"write": simDep}}, &notify.Notifier{OnError: func(error) {}}, "contention")
	bg.g.SetClock(clock)
	return bg
}

func (bg *breakerGate) ask(now time.Duration, client int, rerun bool) (time.Duration, bool) {
	bg.now = epoch.Add(now)
	p := bg.g.Ask(context.Background(), "write", strconv.Itoa(client), rerun)
	bg.passes[client] = p
	if !p.Deferred() {
		return 0, true
	}
	d, _ := bg.g.Deferral(context.Background(), p)
	return d, false
}

func (bg *breakerGate) done(now time.Duration, client int, ok bool) {
	bg.now = epoch.Add(now)
	var err error
	if !ok {
		err = errConflict
	}
	bg.g.Done(context.Background(), bg.passes[client], err, false)
}

// StudyBreaker is the breaker the study's replay runs beside full jitter
// (virtual units read as milliseconds): it trips after 5 conflicts in a
// row, cools down 50 to 400 units, probes once, and releases the clients
// it held back at 20 attempts per 1000 units plus 10% of the successes,
// about one write per round trip of the study's network (four messages of
// 10 units).
var StudyBreaker = breaker.Must(breaker.Parse("breaker(failures=5, cooldown=exponential(50ms, 400ms), lease=100ms, budget=budget(10%, 20/s, 2))"))

// BreakerStrategy is the study's full jitter with [StudyBreaker].
func BreakerStrategy() Strategy {
	full := StudyStrategies()[1]
	return Strategy{Name: FullJitter + " + breaker", Policy: full.Policy, Breaker: StudyBreaker}
}
