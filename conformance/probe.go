package conformance

import (
	"context"
	"time"

	"github.com/rebound-go/rebound/internal/stall"
)

// A ProbingHarness is a [Harness] whose engine depends on a server in
// another process (Redis, PostgreSQL), which a busy machine, or another
// client of a shared server, can hold up as it holds up the test process.
//
// Beside every check the suite runs a witness: a chain of short timers in
// the test's process, whose lateness widens the check's lateness bounds
// (see [Limits.Lateness]). With a ProbingHarness the witness also makes a
// round trip with Probe after each of its timers, so a server that answers
// late widens the bounds by as much (the probes' idle round trips count
// too: a few percent of the interval). An engine that is late by itself is
// not excused: the probe shares only the server's delays, not the engine's.
type ProbingHarness interface {
	Harness
	// Probe makes one cheap round trip to the engine's server, such as a
	// Redis PING or a PostgreSQL SELECT 1, and returns when it is done or
	// ctx is. Its error is ignored: only how long it took counts.
	Probe(ctx context.Context) error
}

// probeTimeout bounds one probe of the witness.
const probeTimeout = 5 * time.Second

// newLagWitness starts the witness of one check, stopped when t ends: nil on
// fake time (a bubble's timers are exact), probing the server when h can.
func newLagWitness(t interface{ Cleanup(func()) }, h Harness) *stall.Witness {
	if sh, ok := h.(SynctestHarness); ok && sh.Synctest() {
		return nil
	}
	ph, ok := h.(ProbingHarness)
	if !ok {
		return stall.Watch(t)
	}
	return stall.Watch(t, func() {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		_ = ph.Probe(ctx)
	})
}
