// Package conformance is rebound's definition of a correct adapter: one
// suite that every adapter (asynq, River, the native Redis path), on every
// backend, runs from its own tests, so that "the same schedule and the same
// attempts cap on every engine" is checked rather than promised.
//
// An adapter's test implements [Harness] (start a worker for a
// [Config], enqueue jobs, report their [State], call the adapter's retry
// hook without waiting) and calls [Run]:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, harness{redis: testenv.Redis(t)})
//	}
//
// [Reference] is a complete harness on an in-memory engine; read it as the
// example of how to write one.
package conformance
