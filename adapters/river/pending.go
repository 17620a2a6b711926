package reboundriver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/observe"
)

// entryTTL is how long a captured decision waits for NextRetry when the
// attempt's context never ends (the middleware called outside River's
// executor). River calls NextRetry on the same goroutine right after the
// middleware returns (only outer middleware and an ErrorHandler run in
// between), so an entry this old was never going to be asked for.
const entryTTL = 5 * time.Minute

// entryGrace is how long a captured decision waits for NextRetry once the
// attempt's context has ended. River ends it when its executor has finished
// with the job, after NextRetry would have been called; a stopping client
// ends it earlier, and NextRetry then follows within microseconds unless an
// ErrorHandler takes its time.
const entryGrace = 2 * time.Second

// entry is a retry the middleware decided for one failed attempt, waiting
// for River to ask for its time. It is reported to the observer when River
// asks, or, if River never does, when it is forgotten.
type entry struct {
	id      int64     // the job's ID
	attempt int       // the attempt that failed
	fireAt  time.Time // when the retry is due

	ctx  context.Context // the attempt's context, as River gave it
	octx context.Context // the context the observer returned
	a    observe.Attempt // what the observer was told at the start
	res  observe.Result  // the retry, as decided

	timer    *time.Timer // forgets the entry after entryTTL or entryGrace
	stopDone func() bool // stops watching ctx
}

// store hands decisions from the middleware to NextRetry. It keys them by
// the job row River hands both: one client passes the same *JobRow to its
// middleware and to its NextRetry, and no other job (another client's job
// with the same ID on another database, the row River's rescuer reads for a
// stuck job) has that pointer, so a decision can only reach the attempt it
// was taken for.
//
// An entry River never asks for (an ErrorHandler cancelled the job, a
// middleware outside the Retrier changed the attempt's error) is forgotten
// on its own, without any further call: shortly after the attempt's context
// ends, or after entryTTL if it never does. forgotten is then told about it.
type store struct {
	ttl, grace time.Duration
	forgotten  func(*entry)

	mu sync.Mutex
	m  map[*rivertype.JobRow]*entry
}

func newStore(forgotten func(*entry)) *store {
	return &store{ttl: entryTTL, grace: entryGrace, forgotten: forgotten, m: make(map[*rivertype.JobRow]*entry)}
}

// put records e for job, replacing (and forgetting) any older entry.
func (s *store) put(job *rivertype.JobRow, e *entry) {
	s.mu.Lock()
	old := s.m[job]
	s.m[job] = e
	e.timer = time.AfterFunc(s.ttl, func() { s.forget(job, e) })
	e.stopDone = context.AfterFunc(e.ctx, func() {
		if errors.Is(context.Cause(e.ctx), rivertype.ErrJobCancelledRemotely) {
			s.forget(job, e) // River cancels the job whatever NextRetry says
			return
		}
		s.mu.Lock()
		if s.m[job] == e {
			e.timer.Reset(s.grace)
		}
		s.mu.Unlock()
	})
	s.mu.Unlock()
	if old != nil {
		old.stop()
		s.forgotten(old)
	}
}

// take removes job's entry and returns it if it was recorded for the job's
// ID and attempt as they are now.
func (s *store) take(job *rivertype.JobRow) (*entry, bool) {
	s.mu.Lock()
	e, ok := s.m[job]
	if ok {
		delete(s.m, job)
	}
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	e.stop()
	if e.id != job.ID || e.attempt != job.Attempt {
		s.forgotten(e)
		return nil, false
	}
	return e, true
}

// forget removes e if it is still job's entry, and tells forgotten.
func (s *store) forget(job *rivertype.JobRow, e *entry) {
	s.mu.Lock()
	current := s.m[job] == e
	if current {
		delete(s.m, job)
	}
	s.mu.Unlock()
	if current {
		e.stop()
		s.forgotten(e)
	}
}

// stop stops e's timer and context watch.
func (e *entry) stop() {
	e.timer.Stop()
	e.stopDone()
}

// len returns the number of entries.
func (s *store) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
