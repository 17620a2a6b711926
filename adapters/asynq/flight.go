package reboundasynq

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"sync"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/internal/safe"
)

// flightKey is what RetryDelay can see of a run. asynq hands it a copy of
// the task message's type, payload and headers, never the task ID; of
// those, the header [HeaderTask] names the delivery: [Retrier.NewTask]
// puts a fresh random token there, and RetryDelay a new one before asynq
// stores each retry. With asynq's retry count, the token tells apart the
// runs of tasks identical in type and payload, and the runs of tasks of
// one ID on two Redis databases served by one Retrier.
type flightKey struct {
	token string // the HeaderTask value; "" for a task without one
	typ   string
	n     int
}

func keyOf(t *asynq.Task, n int) flightKey {
	return flightKey{token: t.Headers()[HeaderTask], typ: t.Type(), n: n}
}

// newToken returns a fresh delivery token for HeaderTask.
func newToken() string { return rand.Text() }

// flight holds the runs asynq is working on.
type flight struct {
	mu   sync.Mutex
	runs map[flightKey][]*run
}

func (f *flight) add(ru *run) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = make(map[flightKey][]*run)
	}
	f.runs[ru.key] = append(f.runs[ru.key], ru)
}

func (f *flight) remove(ru *run) {
	f.mu.Lock()
	defer f.mu.Unlock()
	list := f.runs[ru.key]
	i := slices.Index(list, ru)
	if i < 0 {
		return
	}
	if len(list) == 1 {
		delete(f.runs, ru.key)
		return
	}
	f.runs[ru.key] = slices.Delete(list, i, i+1)
}

// take returns the run of the task message t at retry count n that asynq
// hands to RetryDelay with an error, and marks it claimed; nil when none may
// be it. A run is handed to one claimer only.
//
// Only two kinds of run reach RetryDelay without rebound's error: one
// whose context ended (asynq then hands it the context's error, or
// asynq.ErrLeaseExpired), and one the middleware decided whose error a
// middleware outside rebound's replaced. A run still running is neither.
// When runs share a key (tasks built without a token, or one task value
// enqueued twice, on their first delivery), the kind err points to is
// preferred, then the oldest: such runs cannot be told apart by anything
// asynq hands back.
//
// ended says err is the context's error or asynq.ErrLeaseExpired (see
// [endedError]).
func (f *flight) take(t *asynq.Task, n int, ended bool) *run {
	if t == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var best *run
	bestScore := 0
	for _, ru := range f.runs[keyOf(t, n)] {
		ru.mu.Lock()
		claimed, decided := ru.claimed, ru.decided
		ru.mu.Unlock()
		done := ru.actx.Err() != nil
		if claimed || (!done && !decided) {
			continue
		}
		score := 1
		if done == ended {
			score = 2
		}
		if score > bestScore {
			best, bestScore = ru, score
		}
	}
	if best != nil {
		best.mu.Lock()
		best.claimed = true
		best.mu.Unlock()
	}
	return best
}

// endedError reports whether asynq hands RetryDelay err because a run's
// context ended (its deadline, a cancel, a lost lease). err may come from
// a middleware outside rebound's: a panic while it is asked is recovered
// and counts as no.
func endedError(err error) bool {
	ok, _ := safe.Value("error text", false, func() bool {
		return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, asynq.ErrLeaseExpired)
	})
	return ok
}

// len returns the number of runs held.
func (f *flight) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, list := range f.runs {
		n += len(list)
	}
	return n
}
