// Package memstore keeps circuit breakers in the memory of one process: a
// [breaker.Store] for tests, examples and single-process workers. Every
// transition runs under one mutex, on the process's clock.
//
// The guide to breakers on every adapter: https://github.com/rebound-go/rebound/blob/main/docs/breaker.md
package memstore

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/internal/safe"
)

// Store is an in-memory [breaker.Store]. Build it with [New]; it is safe
// for concurrent use.
type Store struct {
	rules breaker.Rules
	now   func() time.Time

	mu       sync.Mutex
	circuits map[string]*breaker.Circuit
	deferred map[string]map[string]int64 // dep -> job ID -> forget at (Unix ms)
	inserts  int                         // deferrals since the last sweep
}

// Options configure a Store.
type Options struct {
	// Now is the clock; nil means time.Now. Tests pass a fake one.
	Now func() time.Time
}

// New returns a store whose dependencies rules guards.
func New(rules breaker.Rules, o Options) *Store {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Store{rules: rules.Clone(), now: o.Now, circuits: map[string]*breaker.Circuit{}, deferred: map[string]map[string]int64{}}
}

var _ breaker.Store = (*Store)(nil)

// clock reads the clock, which must not take the process down.
func (s *Store) clock() (time.Time, error) {
	return safe.Value("memstore: clock", time.Time{}, s.now)
}

// Allow implements [breaker.Store].
func (s *Store) Allow(ctx context.Context, dep string, job breaker.Job) (breaker.Verdict, error) {
	if err := breaker.CheckName(dep); err != nil {
		return breaker.Verdict{}, err
	}
	if err := breaker.CheckJobID(job.ID); err != nil {
		return breaker.Verdict{}, err
	}
	b, ok := s.rules.For(dep)
	if !ok {
		return breaker.Verdict{Decision: breaker.Run}, nil
	}
	now, err := s.clock()
	if err != nil {
		return breaker.Verdict{}, err
	}
	ms := now.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	jobs := s.deferred[dep]
	at, remembered := jobs[job.ID]
	remembered = remembered && job.ID != "" && at > ms
	kind := job.Kind
	if remembered {
		kind = breaker.Retry
	}
	v := b.Allow(s.circuit(dep), now, kind)
	if job.ID == "" {
		return v, nil
	}
	switch {
	case !v.Runs():
		if jobs == nil {
			jobs = map[string]int64{}
			s.deferred[dep] = jobs
		}
		jobs[job.ID] = v.Until.Add(breaker.Remember).UnixMilli()
		if s.inserts++; s.inserts >= 1024 {
			s.sweep(ms)
		}
	case remembered || at != 0:
		delete(jobs, job.ID)
	}
	return v, nil
}

// sweep forgets the deferred jobs whose time is up; s.mu is held.
func (s *Store) sweep(now int64) {
	s.inserts = 0
	for dep, jobs := range s.deferred {
		for id, at := range jobs {
			if at <= now {
				delete(jobs, id)
			}
		}
		if len(jobs) == 0 {
			delete(s.deferred, dep)
		}
	}
}

// Record implements [breaker.Store].
func (s *Store) Record(ctx context.Context, dep string, t breaker.Ticket, o breaker.Outcome) (breaker.Transition, error) {
	if err := breaker.CheckName(dep); err != nil {
		return breaker.Transition{}, err
	}
	b, ok := s.rules.For(dep)
	if !ok {
		return breaker.Transition{}, nil
	}
	now, err := s.clock()
	if err != nil {
		return breaker.Transition{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.circuit(dep)
	// The cool-down policy is the user's: a panic in it must leave the
	// circuit as it was, so the transition runs on a copy.
	next := *c
	var tr breaker.Transition
	if err := safe.Call("memstore: record", func() { tr = b.Record(&next, dep, now, t, o) }); err != nil {
		return breaker.Transition{From: c.State, To: c.State}, err
	}
	*c = next
	return tr, nil
}

// circuit returns dep's circuit, creating it; s.mu is held.
func (s *Store) circuit(dep string) *breaker.Circuit {
	c, ok := s.circuits[dep]
	if !ok {
		c = new(breaker.Circuit)
		s.circuits[dep] = c
	}
	return c
}

// Status implements [breaker.Store].
func (s *Store) Status(ctx context.Context, dep string) (breaker.Status, error) {
	if err := breaker.CheckName(dep); err != nil {
		return breaker.Status{}, err
	}
	now, err := s.clock()
	if err != nil {
		return breaker.Status{}, err
	}
	b, _ := s.rules.For(dep)
	s.mu.Lock()
	defer s.mu.Unlock()
	var c breaker.Circuit
	if p, ok := s.circuits[dep]; ok {
		c = *p
	}
	return safe.Value("memstore: status", breaker.Status{}, func() breaker.Status { return b.Status(dep, c, now) })
}

// List implements [breaker.Store].
func (s *Store) List(ctx context.Context) ([]breaker.Status, error) {
	now, err := s.clock()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]breaker.Status, 0, len(s.circuits))
	for dep, c := range s.circuits {
		b, _ := s.rules.For(dep)
		st, err := safe.Value("memstore: status", breaker.Status{}, func() breaker.Status { return b.Status(dep, *c, now) })
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b breaker.Status) int {
		switch {
		case a.Dependency < b.Dependency:
			return -1
		case a.Dependency > b.Dependency:
			return 1
		}
		return 0
	})
	return out, nil
}
