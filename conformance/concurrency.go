package conformance

import (
	"github.com/rebound-go/rebound/backoff"
)

// sharedCohort is the number of jobs each engine of the Concurrency check
// runs.
const sharedCohort = 8

// checkConcurrency starts two engines sharing one adapter value
// (SharedHarness), whose job IDs may collide (an engine that lets the
// harness choose IDs numbers them from 1 on each). On one engine every job
// fails with a long retry-after hint and gives up after two runs; on the
// other every job fails once with no hint and completes. Each job must
// follow its own schedule: a decision applied to the other engine's job
// with the same ID shows as a retry early or late. Throughout, the
// observer writes and reads many keys of each attempt's carrier when it
// starts and ends, so the race detector sees an engine that shares the
// job's metadata map with the observer.
func checkConcurrency(e *env) {
	rule := e.rule(backoff.Must(backoff.Fixed(unit)), 2)
	// Long enough that a retry after the other engine's delay is late by
	// more than the allowed lateness, also once the load's share widened
	// it (twice the declared lateness was not, under -race on a loaded
	// machine).
	long := max(5*unit+5*e.slack, 2*e.lim.Resolution)
	wit := newWitness()
	wit.busy = true
	sh, ok := e.h.(SharedHarness)
	if !e.need(FeatureShared, ok, "StartShared starts several engines sharing one adapter value") {
		w := e.newWorker("carrier writer", rule, wit)
		w.eng = e.h.Start(e.t, w.cfg)
		w.enqueueN(sharedCohort, script{Fail: 1})
		w.verify(w.settle())
		return
	}
	a := e.newWorker("shared engine 1", rule, wit)
	b := e.newWorker("shared engine 2", rule, wit)
	a.peers = []*worker{a, b}
	b.peers = a.peers
	engines := sh.StartShared(e.t, []Config{a.cfg, b.cfg})
	if len(engines) != 2 || engines[0] == nil || engines[1] == nil {
		e.errorf("StartShared(2 configs) returned %d engines (%v), want 2, none nil", len(engines), engines)
		return
	}
	a.eng, b.eng = engines[0], engines[1]
	for range sharedCohort {
		a.enqueue(script{Always: true, After: long})
		b.enqueue(script{Fail: 1})
	}
	verifyGroup([]*worker{a, b}, []map[string]State{a.settle(), b.settle()})
}
