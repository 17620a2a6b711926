package reboundotel_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	reboundasynq "github.com/rebound-go/rebound/adapters/asynq"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
	"github.com/rebound-go/rebound/observe"
)

// errBusy is what the busy task returns on its first run; the server's
// IsFailure does not count it, so asynq runs the task again without using
// up an attempt.
var errBusy = errors.New("mail server busy, try later")

func notBusy(err error) bool { return !errors.Is(err, errBusy) }

// runAsynqStory runs flaky, doomed and bad (see scripted) and busy (busy on
// its first run, then done) on an asynq server over c with the Observer in
// the documented middleware, and checks their stories and the metrics. Tasks carry headers (the producer's traceparent,
// or a header of their own): asynq keeps headers only for tasks enqueued
// with at least one.
func runAsynqStory(t *testing.T, c redis.UniversalClient, queue string, opts ...reboundasynq.Option) {
	f := newFixture(t)
	p, _ := backoff.Fixed(time.Second)
	rule, _ := backoff.NewRule(p, 3)
	r, err := reboundasynq.New(rule, append([]reboundasynq.Option{reboundasynq.WithObserver(f.obs), reboundasynq.WithIsFailure(notBusy)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	srv := asynq.NewServerFromRedisClient(c, asynq.Config{
		Concurrency:              4,
		Queues:                   map[string]int{queue: 1},
		RetryDelayFunc:           r.RetryDelay,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		TaskCheckInterval:        100 * time.Millisecond,
		ShutdownTimeout:          2 * time.Second,
		LogLevel:                 asynq.FatalLevel,
		IsFailure:                notBusy,
	})
	h := &scripted{}
	mux := asynq.NewServeMux()
	mux.Use(r.Middleware)
	var busyRuns atomic.Int32
	mux.HandleFunc("email.send", func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		if id == "busy" {
			if busyRuns.Add(1) == 1 {
				return errBusy
			}
			return nil
		}
		return h.attempt(id)
	})
	if err := srv.Start(mux); err != nil {
		t.Fatalf("start asynq server: %v", err)
	}
	defer srv.Shutdown()
	client := asynq.NewClientFromRedisClient(c)

	pctx, producer := f.tp.Tracer("producer").Start(context.Background(), "send emails",
		trace.WithSpanKind(trace.SpanKindProducer))
	headers := map[string]string{}
	f.obs.Inject(pctx, observe.MapCarrier(headers))
	producer.End()
	for id, hdr := range map[string]map[string]string{
		"flaky":  headers,
		"doomed": {"tenant": "a"},
		"bad":    {"tenant": "a"},
		"busy":   {"tenant": "a"},
	} {
		task := asynq.NewTaskWithHeaders("email.send", nil, hdr)
		if _, err := client.Enqueue(task, asynq.Queue(queue), asynq.TaskID(id), r.MaxRetry()); err != nil {
			t.Fatalf("enqueue %s: %v", id, err)
		}
	}
	waitSpans(t, f, 9, time.Minute)

	base := story{system: reboundasynq.System, queue: queue, maxAttempts: 3}
	flaky := base
	flaky.jobID, flaky.outcomes, flaky.producer = "flaky", []string{"retry", "retry", "success"}, producer.SpanContext().SpanID()
	flaky.check(t, jobSpans(f.spans, "flaky"))
	doomed := base
	doomed.jobID, doomed.outcomes = "doomed", []string{"retry", "retry", "exhausted"}
	doomed.check(t, jobSpans(f.spans, "doomed"))
	bad := base
	bad.jobID, bad.outcomes = "bad", []string{"permanent"}
	bad.check(t, jobSpans(f.spans, "bad"))
	busy := base
	busy.jobID, busy.outcomes, busy.numbers = "busy", []string{"snoozed", "success"}, []int{1, 1}
	busy.check(t, jobSpans(f.spans, "busy"))
	checkJobMetrics(t, f, reboundasynq.System, queue, map[string]int64{"retry": 4, "success": 2, "exhausted": 1, "permanent": 1, "snoozed": 1}, 4, 1)
}

// TestAsynqAdapter tells the three stories on asynq over an in-process
// miniredis, in a synctest bubble so that whole-second retries take no
// real time.
func TestAsynqAdapter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true)
		c := redis.NewClient(&redis.Options{
			Addr:   "127.0.0.1:1", // never dialled: the dialer connects in-process
			Dialer: func(context.Context, string, string) (net.Conn, error) { return m.Dial() },
		})
		defer m.Close()
		defer c.Close()
		runAsynqStory(t, c, "emails")
	})
}

// TestAsynqAdapterRedis tells the same stories on the real Redis, in precise
// mode (exact fire times in a task header).
func TestAsynqAdapterRedis(t *testing.T) {
	c := testenv.Redis(t)
	queue := "rbt-" + testenv.Name(t, 24)
	t.Cleanup(func() {
		testenv.DeleteKeys(c, "asynq:{"+queue+"}*")
		c.SRem(context.Background(), "asynq:queues", queue)
	})
	runAsynqStory(t, c, queue, reboundasynq.WithPrecise())
}
