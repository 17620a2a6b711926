package native

import (
	"context"

	"github.com/rebound-go/rebound/conformance"
)

var _ conformance.ProbingHarness = (*harness)(nil)

// Probe pings the harness's Redis, so that the suite's lateness witness
// sees a server the machine's load (or another client) holds up.
func (h *harness) Probe(ctx context.Context) error {
	if h.rdb == nil {
		return nil // a miniredis of its own per Start, in a bubble: exact time
	}
	return h.rdb.Ping(ctx).Err()
}
