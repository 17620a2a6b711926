package reboundasynq

import (
	"context"

	"github.com/rebound-go/rebound/conformance"
	"github.com/rebound-go/rebound/internal/testenv"
)

var _ conformance.ProbingHarness = harness{}

// Probe pings the real Redis, so that the suite's lateness witness sees a
// server the machine's load (or another client) holds up. On miniredis the
// suite runs in a bubble, where it never probes.
func (h harness) Probe(ctx context.Context) error {
	if !h.real {
		return nil
	}
	return testenv.PingRedis(ctx)
}
