package reboundriver

import (
	"context"
	"strings"

	"github.com/rebound-go/rebound/conformance"
	"github.com/rebound-go/rebound/internal/testenv"
)

var _ conformance.ProbingHarness = (*harness[pgxTx])(nil)

// Probe makes a round trip to PostgreSQL for the PostgreSQL harness, so
// that the suite's lateness witness sees a server the machine's load (or
// another client) holds up. SQLite runs in the test's process, where the
// witness's timers already see what the machine does.
func (h *harness[TTx]) Probe(ctx context.Context) error {
	if !strings.HasPrefix(h.name, "river/postgres") {
		return nil
	}
	return testenv.PingPostgres(ctx)
}
