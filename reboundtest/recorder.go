// Package reboundtest helps users test code that runs on rebound, the way
// rivertest and OpenTelemetry's tracetest do for theirs: a [Recorder] is an
// observer and give-up hook that keeps everything an adapter reports, for a
// test to read back and assert on without sleeping.
//
// Pass a Recorder to any adapter's WithObserver, and its GiveUp method to
// WithGiveUp; read it back with [Recorder.Story] ("1 retry 250ms\n2
// success"), [Recorder.Last], [Recorder.Job], [Recorder.GiveUps], and assert
// [Recorder.Problems] is empty.
//
// Each adapter has its own kit beside it that runs a handler through the
// adapter on a clock the test controls and reports to a Recorder:
// adapters/native/nativetest, adapters/asynq/reboundasynqtest and
// adapters/river/reboundrivertest.
//
// The guide to testing, with an example of each kit: https://github.com/rebound-go/rebound/blob/main/docs/testing.md
package reboundtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rebound-go/rebound/observe"
)

// An Event is one attempt as an adapter reported it: the attempt, and once
// it has ended, how.
type Event struct {
	// Attempt is what the adapter passed to AttemptStarted.
	Attempt observe.Attempt
	// Ended reports whether AttemptEnded has been called for it.
	Ended bool
	// Result is what AttemptEnded was told; zero until Ended.
	Result observe.Result
	// StartedAt and EndedAt are when the adapter called AttemptStarted and
	// AttemptEnded, by the recorder's clock.
	StartedAt, EndedAt time.Time
}

// Recorder is an [observe.Observer] that records every attempt, and a
// give-up hook ([Recorder.GiveUp]) that records every job given up. Pass it
// to an adapter's WithObserver and its GiveUp method to WithGiveUp. It is
// safe for concurrent use. The zero Recorder is ready to use.
type Recorder struct {
	// Now is the clock StartedAt and EndedAt are read from; nil means
	// time.Now.
	Now func() time.Time

	mu      sync.Mutex
	events  []*Event
	giveUps []observe.GiveUp
	// errors holds unmatched AttemptEnded calls and the like: a Recorder
	// notes what no adapter should do rather than panicking in the
	// adapter's goroutine.
	errors []string
}

type ctxKey struct{}

func (r *Recorder) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// AttemptStarted records a and returns ctx carrying the attempt's record,
// so that AttemptEnded matches the two even when attempts of jobs with the
// same ID run at once.
func (r *Recorder) AttemptStarted(ctx context.Context, a observe.Attempt) context.Context {
	e := &Event{Attempt: a, StartedAt: r.now()}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	return context.WithValue(ctx, ctxKey{}, e)
}

// AttemptEnded records how the attempt ended. It finds the attempt through
// ctx (the context AttemptStarted returned); an adapter that loses that
// context is matched by job ID and attempt number instead.
func (r *Recorder) AttemptEnded(ctx context.Context, a observe.Attempt, res observe.Result) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	e, _ := ctx.Value(ctxKey{}).(*Event)
	if e == nil {
		for _, c := range slices.Backward(r.events) {
			if !c.Ended && c.Attempt.JobID == a.JobID && c.Attempt.Number == a.Number && c.Attempt.Queue == a.Queue {
				e = c
				break
			}
		}
	}
	if e == nil {
		r.errors = append(r.errors, fmt.Sprintf("AttemptEnded for job %s attempt %d without AttemptStarted", a.JobID, a.Number))
		e = &Event{Attempt: a}
		r.events = append(r.events, e)
	}
	if e.Ended {
		r.errors = append(r.errors, fmt.Sprintf("AttemptEnded twice for job %s attempt %d", a.JobID, a.Number))
	}
	e.Ended, e.Result, e.EndedAt = true, res, now
}

// GiveUp records g. Pass the method value to an adapter's WithGiveUp.
func (r *Recorder) GiveUp(_ context.Context, g observe.GiveUp) {
	r.mu.Lock()
	r.giveUps = append(r.giveUps, g)
	r.mu.Unlock()
}

// Events returns a copy of every recorded attempt, in the order they started.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Event, len(r.events))
	for i, e := range r.events {
		out[i] = *e
	}
	return out
}

// Job returns the recorded attempts of the job with the given ID, in the
// order they started.
func (r *Recorder) Job(id string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events {
		if e.Attempt.JobID == id {
			out = append(out, *e)
		}
	}
	return out
}

// Last returns the job's most recently started attempt, and false when the
// job has none.
func (r *Recorder) Last(id string) (Event, bool) {
	evs := r.Job(id)
	if len(evs) == 0 {
		return Event{}, false
	}
	return evs[len(evs)-1], true
}

// GiveUps returns a copy of every recorded give-up, in order.
func (r *Recorder) GiveUps() []observe.GiveUp {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.giveUps)
}

// Problems returns what the recorder saw that no adapter should do: an
// attempt ended twice, or ended without having started. A test can assert
// it is empty.
func (r *Recorder) Problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errors)
}

// Reset forgets everything recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.events, r.giveUps, r.errors = nil, nil, nil
	r.mu.Unlock()
}

// Story returns the job's attempts as one line each ("1 retry 250ms",
// "2 exhausted", "3 success", "2 interrupted"), the form a test compares
// against the story it expects.
func (r *Recorder) Story(id string) string {
	var b strings.Builder
	for _, e := range r.Job(id) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%d ", e.Attempt.Number)
		switch {
		case !e.Ended:
			b.WriteString("running")
		case e.Result.Counting == observe.Counted && e.Result.Decision.Retry() && e.Result.Err != nil:
			fmt.Fprintf(&b, "retry %v", e.Result.Decision.Delay)
		default:
			b.WriteString(e.Result.Outcome())
		}
	}
	return b.String()
}

var _ observe.Observer = (*Recorder)(nil)
var _ observe.GiveUpFunc = (*Recorder)(nil).GiveUp
