package conformance

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rebound-go/rebound/observe"
)

// witness is the observer, give-up hook and error handler the suite gives
// every worker (Config.Observer, GiveUp and OnError). It records what the
// adapter tells it, and links each attempt it is told about to the
// handler's run through the context: AttemptStarted returns a context
// carrying the attempt's record, the handler finds it there, and
// AttemptEnded and the give-up hook must be called with it. So the suite
// knows which run each report is about even when job IDs collide (several
// engines sharing one adapter value).
//
// It is stricter than reboundtest.Recorder on purpose: a report that does
// not come with the context AttemptStarted returned is a violation here,
// not something to match by job ID.
type witness struct {
	// busy makes the observer write many carrier keys on every start and
	// end, to give the race detector a chance at engines that share the
	// job's metadata map with the observer.
	busy bool

	mu       sync.Mutex
	events   []*event
	giveUps  []giveUp
	reports  []error
	problems []string
	changes  []observe.BreakerChange // breaker changes told, in order
}

// event is one attempt as the observer was told about it.
type event struct {
	w         *witness
	attempt   observe.Attempt
	startedAt time.Time
	// ends is how often AttemptEnded was called for it; result, endedAt
	// and endAttempt are from the first call.
	ends       int
	endedAt    time.Time
	endAttempt observe.Attempt
	result     observe.Result
}

// giveUp is one call of the give-up hook.
type giveUp struct {
	g  observe.GiveUp
	ev *event // the attempt whose context came with the call, or nil
	at time.Time
}

// witnessKey is the context key of the attempt's record.
type witnessKey struct{}

func newWitness() *witness { return &witness{} }

// AttemptStarted records a and returns ctx carrying its record.
func (w *witness) AttemptStarted(ctx context.Context, a observe.Attempt) context.Context {
	ev := &event{w: w, attempt: a, startedAt: time.Now()}
	w.write(a.Carrier, "conformance-started", strconv.Itoa(a.Number))
	w.mu.Lock()
	w.events = append(w.events, ev)
	w.mu.Unlock()
	return context.WithValue(ctx, witnessKey{}, ev)
}

// AttemptEnded records how the attempt ended, on the record ctx carries.
func (w *witness) AttemptEnded(ctx context.Context, a observe.Attempt, r observe.Result) {
	now := time.Now()
	w.write(a.Carrier, "conformance-ended", r.Outcome())
	ev, _ := ctx.Value(witnessKey{}).(*event)
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev == nil || ev.w != w {
		w.problems = append(w.problems, fmt.Sprintf(
			"AttemptEnded for job %s attempt %d (%s) came without the context AttemptStarted returned (or without AttemptStarted at all); want every ended attempt started, and its context passed on",
			a.JobID, a.Number, r.Outcome()))
		return
	}
	ev.ends++
	if ev.ends == 1 {
		ev.endedAt, ev.endAttempt, ev.result = now, a, r
	}
}

// GiveUp records a call of the give-up hook.
func (w *witness) GiveUp(ctx context.Context, g observe.GiveUp) {
	ev, _ := ctx.Value(witnessKey{}).(*event)
	if ev != nil && ev.w != w {
		ev = nil
	}
	w.mu.Lock()
	w.giveUps = append(w.giveUps, giveUp{g: g, ev: ev, at: time.Now()})
	w.mu.Unlock()
}

// OnError records an internal error the adapter reported.
func (w *witness) OnError(err error) {
	w.mu.Lock()
	w.reports = append(w.reports, err)
	w.mu.Unlock()
}

// write writes the job's carrier as an observer propagating a trace does,
// reading it too, so that an engine that shares the map races visibly.
func (w *witness) write(c observe.Carrier, key, value string) {
	if c == nil {
		return
	}
	n := 1
	if w.busy {
		n = 16
	}
	for i := range n {
		k := key
		if i > 0 {
			k = fmt.Sprintf("%s-%d", key, i)
		}
		c.Set(k, value)
		_ = c.Get(k)
	}
	_ = c.Keys()
}

// snapshot returns copies of what the witness holds, keyed by the records
// the handler's runs point to.
func (w *witness) snapshot() (events map[*event]event, order []*event, giveUps []giveUp, reports []error, problems []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	events = make(map[*event]event, len(w.events))
	for _, ev := range w.events {
		events[ev] = *ev
	}
	return events, append([]*event(nil), w.events...), append([]giveUp(nil), w.giveUps...),
		append([]error(nil), w.reports...), append([]string(nil), w.problems...)
}

// unended returns how many recorded attempts have not ended yet.
func (w *witness) unended() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ev := range w.events {
		if ev.ends == 0 {
			n++
		}
	}
	return n
}

var (
	_ observe.Observer   = (*witness)(nil)
	_ observe.GiveUpFunc = (*witness)(nil).GiveUp
)
