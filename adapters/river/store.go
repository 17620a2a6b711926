package reboundriver

import (
	"sync"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// entryTTL is how long a captured decision waits for NextRetry. River calls
// NextRetry on the same goroutine right after the middleware returns (only an
// ErrorHandler runs in between), so an entry older than this was never going
// to be asked for.
const entryTTL = 5 * time.Minute

// entry is the decision the middleware took for one failed attempt.
type entry struct {
	id      int64     // the job's ID
	attempt int       // the attempt that failed
	fireAt  time.Time // when the retry is due
	stored  time.Time // when the middleware stored it
}

// store hands decisions from the middleware to NextRetry. It keys them by
// the job row River hands both: one client passes the same *JobRow to its
// middleware and to its NextRetry, and no other job (another client's job
// with the same ID on another database, the row River's rescuer reads for a
// stuck job) has that pointer, so a decision can only reach the attempt it
// was taken for.
type store struct {
	mu        sync.Mutex
	m         map[*rivertype.JobRow]entry
	lastSweep time.Time
	now       func() time.Time
}

func newStore() *store {
	return &store{m: make(map[*rivertype.JobRow]entry), now: time.Now}
}

// put records the decision for job, replacing any older one, and drops
// expired entries at most once per half TTL, so the cost of the sweep is
// spread over many calls.
func (s *store) put(job *rivertype.JobRow, e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[job] = e
	now := s.now()
	if now.Sub(s.lastSweep) < entryTTL/2 {
		return
	}
	s.lastSweep = now
	for k, v := range s.m {
		if now.Sub(v.stored) > entryTTL {
			delete(s.m, k)
		}
	}
}

// take removes job's entry and returns it if it was recorded for the
// job's ID and attempt as they are now.
func (s *store) take(job *rivertype.JobRow) (entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[job]
	if !ok {
		return entry{}, false
	}
	delete(s.m, job)
	return e, e.id == job.ID && e.attempt == job.Attempt
}

// len returns the number of entries.
func (s *store) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
