package reboundriver

import (
	"sync"
	"time"
)

// entryTTL is how long a captured decision waits for NextRetry. River calls
// NextRetry on the same goroutine right after the middleware returns (only an
// ErrorHandler runs in between), so an entry older than this was never going
// to be asked for.
const entryTTL = 5 * time.Minute

// entry is the decision the middleware took for one failed attempt.
type entry struct {
	attempt int       // the attempt that failed
	fireAt  time.Time // when the retry is due
	stored  time.Time // when the middleware stored it
}

// store hands decisions from the middleware to NextRetry, keyed by job ID.
type store struct {
	mu        sync.Mutex
	m         map[int64]entry
	lastSweep time.Time
	now       func() time.Time
}

func newStore() *store {
	return &store{m: make(map[int64]entry), now: time.Now}
}

// put records the decision for job id, replacing any older one, and drops
// expired entries at most once per half TTL, so the cost of the sweep is
// spread over many calls.
func (s *store) put(id int64, e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = e
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

// take removes job id's entry and returns it if it was recorded for attempt.
func (s *store) take(id int64, attempt int) (entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[id]
	if !ok {
		return entry{}, false
	}
	delete(s.m, id)
	return e, e.attempt == attempt
}

// drop removes job id's entry, if any.
func (s *store) drop(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// len returns the number of entries.
func (s *store) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
