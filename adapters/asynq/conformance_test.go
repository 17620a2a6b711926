package reboundasynq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/conformance"
	"github.com/rebound-go/rebound/internal/testenv"
)

// harness runs the conformance suite on asynq, on real Redis or on
// miniredis (inside a synctest bubble), rounding fire times up or precise.
type harness struct {
	real    bool
	precise bool
	// intervals are the server's DelayedTaskCheckInterval and
	// TaskCheckInterval.
	interval time.Duration
}

func (h harness) Name() string {
	name := "asynq/miniredis"
	if h.real {
		name = "asynq/redis"
	}
	if h.precise {
		name += "/precise"
	}
	return name
}

// Limits: asynq promotes a due retry on the forwarder's next tick (at most
// one interval) and an idle worker sees it on its next poll (at most 1.5
// intervals); the rest is Redis round trips and scheduling on a busy
// machine. Rounding mode adds up to one second of resolution; precise mode
// has none: the stored second is never after the exact time, and the
// middleware waits the rest.
func (h harness) Limits() conformance.Limits {
	lim := conformance.Limits{Lateness: 5*h.interval/2 + 250*time.Millisecond}
	if !h.precise {
		lim.Resolution = time.Second
	}
	return lim
}

func (h harness) Synctest() bool { return !h.real }

// concurrency is the number of workers: enough for a cohort of the Herd
// check to re-fire together, fewer on miniredis, where every idle worker's
// poll is a script run in the test process.
func (h harness) concurrency() int {
	if h.real {
		return 32
	}
	return 8
}

func (h harness) retrier(t testing.TB, cfg conformance.Config) *Retrier {
	var opts []Option
	if h.precise {
		opts = append(opts, WithPrecise())
	}
	if t != nil {
		opts = append(opts, WithErrorHandler(func(err error) { t.Errorf("rebound reported: %v", err) }))
	}
	r, err := New(cfg.Rule, opts...)
	if err != nil {
		panic(err)
	}
	return r
}

func (h harness) Start(t testing.TB, cfg conformance.Config) conformance.Engine {
	t.Helper()
	var c redis.UniversalClient
	queue := "conformance"
	if h.real {
		c, queue = realRedis(t)
	} else {
		c = miniRedis(t)
	}
	r := h.retrier(t, cfg)
	handler := func(ctx context.Context, task *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		n, _ := asynq.GetRetryCount(ctx)
		return cfg.Handler(ctx, conformance.Job{ID: id, Attempt: n + 1, Payload: task.Payload()})
	}
	s := start(t, c, queue, r, handler, serverOpts{
		delayedCheck: h.interval,
		taskCheck:    h.interval,
		concurrency:  h.concurrency(),
	})
	return engine{s: s}
}

// HookDelay runs the middleware's decision step for a failure that ended
// now, then RetryDelay on its result, as asynq would, and returns the gap
// between the failure and the time the retry runs: the whole second asynq
// stores, or in precise mode the exact time the middleware waits for.
func (h harness) HookDelay(cfg conformance.Config, id string, attempt int, err error) (time.Duration, bool) {
	r := h.retrier(nil, cfg)
	end := time.Now()
	c := r.decideNow(asynq.NewTaskWithHeaders(kind, nil, map[string]string{"suite": "1"}), id, attempt-1, math.MaxInt32, err, end)
	if errors.Is(c, asynq.SkipRetry) {
		return 0, false
	}
	// asynq: d := RetryDelayFunc(...); retryAt := time.Now().Add(d).
	d := r.RetryDelay(attempt-1, c, nil)
	fire := time.Now().Add(d)
	if _, at, _ := Decision(c); h.precise {
		fire = at // the middleware waits until exactly this time
	} else {
		fire = time.Unix(fire.Unix(), 0) // what asynq stores and fires on
	}
	return fire.Sub(end), true
}

type engine struct{ s *server }

func (e engine) Enqueue(_ context.Context, payload []byte) (string, error) {
	// MaxRetry far above any rule in the suite: the rule's cap must win.
	info, err := e.s.client.Enqueue(asynq.NewTaskWithHeaders(kind, payload, map[string]string{"suite": "1"}),
		asynq.Queue(e.s.queue), asynq.MaxRetry(100), asynq.Retention(time.Hour))
	if err != nil {
		return "", err
	}
	return info.ID, nil
}

func (e engine) State(_ context.Context, id string) (conformance.State, error) {
	info, err := e.s.insp.GetTaskInfo(e.s.queue, id)
	if err != nil {
		return 0, fmt.Errorf("task %s: %w", id, err)
	}
	switch info.State {
	case asynq.TaskStateCompleted:
		return conformance.StateCompleted, nil
	case asynq.TaskStateArchived:
		return conformance.StateFailed, nil
	}
	return conformance.StatePending, nil
}

func TestConformance(t *testing.T) {
	for _, h := range []harness{
		{interval: 100 * time.Millisecond},
		{interval: 100 * time.Millisecond, precise: true},
		{real: true, interval: 100 * time.Millisecond},
		{real: true, interval: 100 * time.Millisecond, precise: true},
	} {
		t.Run(h.Name(), func(t *testing.T) {
			if h.real {
				testenv.Redis(t) // skip, or fail under REBOUND_REQUIRE_SERVERS=1, before any check
			}
			conformance.Run(t, h)
		})
	}
}
