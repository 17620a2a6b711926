package native

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/conformance"
	"github.com/rebound-go/rebound/internal/testenv"
)

// harness runs the conformance suite on one Redis: each Start gets its own
// queue under prefix.
type harness struct {
	name     string
	rdb      redis.UniversalClient
	prefix   string
	lateness time.Duration
	n        int
}

func (h *harness) Name() string { return h.name }

// Limits: fire times are whole milliseconds of the server clock, rounded up
// (never early); a retry is started by the worker's own timer for the next
// due time, so idle lateness is a timer wake-up plus two round trips.
func (h *harness) Limits() conformance.Limits {
	return conformance.Limits{Resolution: time.Millisecond, Lateness: h.lateness}
}

func (h *harness) Start(t testing.TB, cfg conformance.Config) conformance.Engine {
	h.n++
	q, err := NewQueue(h.rdb, fmt.Sprintf("conf{%d}:q", h.n), WithPrefix(h.prefix))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, q, cfg.Rule, func(ctx context.Context, j *Job) error {
		return cfg.Handler(ctx, conformance.Job{ID: j.ID, Attempt: j.Attempt, Payload: j.Payload})
	}, WithConcurrency(16))
	return engine{q}
}

func (h *harness) HookDelay(cfg conformance.Config, id string, attempt int, err error) (time.Duration, bool) {
	w := &Worker{rule: cfg.Rule}
	d := w.decide(&Job{ID: id, Attempt: attempt, MaxAttempts: cfg.Rule.MaxAttempts()}, err)
	return time.Duration(ceilMicros(d.Delay)) * time.Microsecond, d.Retry()
}

type engine struct{ q *Queue }

func (e engine) Enqueue(ctx context.Context, payload []byte) (string, error) {
	return e.q.Enqueue(ctx, payload)
}

func (e engine) State(ctx context.Context, id string) (conformance.State, error) {
	info, err := e.q.Job(ctx, id)
	if err != nil {
		return conformance.StatePending, err
	}
	switch info.State {
	case StateCompleted:
		return conformance.StateCompleted, nil
	case StateFailed:
		return conformance.StateFailed, nil
	}
	return conformance.StatePending, nil
}

func TestConformanceRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	// Idle p99 measures 5-15ms under -race on two cores; the bound leaves
	// room for a CI machine running other packages' tests at once. The
	// benchmarks measure the engine's own lateness (p99 of a few ms).
	conformance.Run(t, &harness{name: "native/redis", rdb: rdb, prefix: testenv.Prefix(t, rdb), lateness: 100 * time.Millisecond})
}

func TestConformanceMiniredis(t *testing.T) {
	rdb, prefix := backends[1].open(t)
	// miniredis interprets every script in Go (gopher-lua), which the race
	// detector slows about tenfold: idle p99 ~25ms plain, ~140ms under -race.
	conformance.Run(t, &harness{name: "native/miniredis", rdb: rdb, prefix: prefix, lateness: 250 * time.Millisecond})
}
