package reboundotel_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
	"github.com/rebound-go/rebound/observe"
)

// scripted is a handler whose attempts fail or succeed by job ID: flaky
// fails twice then succeeds, doomed always fails, bad fails permanently.
type scripted struct {
	mu   sync.Mutex
	runs map[string]int
}

func (s *scripted) attempt(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs == nil {
		s.runs = map[string]int{}
	}
	s.runs[id]++
	switch id {
	case "flaky":
		if s.runs[id] <= 2 {
			return &errTimeout{host: "smtp"}
		}
		return nil
	case "doomed":
		return errors.New("always fails")
	case "bad":
		return backoff.Permanent(errors.New("malformed payload"))
	}
	return nil
}

// waitSpans polls until rec holds n ended spans with a message ID.
func waitSpans(t *testing.T, f *fixture, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := 0
		for _, s := range f.spans.Ended() {
			if attrMap(s.Attributes())["messaging.message.id"].AsString() != "" {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d attempt spans after %s, want %d", got, within, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNativeAdapter runs three jobs through the native worker with the
// Observer and checks each one's story: flaky (retry, retry, success) with
// a producer context injected at enqueue, doomed (retry, retry, exhausted)
// and bad (permanent). It runs on miniredis and on the real Redis.
func TestNativeAdapter(t *testing.T) {
	backends := map[string]func(t *testing.T) (redis.UniversalClient, string){
		"miniredis": func(t *testing.T) (redis.UniversalClient, string) {
			m := miniredis.RunT(t)
			c := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = c.Close() })
			return c, "rbt"
		},
		"redis": func(t *testing.T) (redis.UniversalClient, string) {
			c := testenv.Redis(t)
			return c, testenv.Prefix(t, c)
		},
	}
	for _, name := range []string{"miniredis", "redis"} {
		t.Run(name, func(t *testing.T) {
			rdb, prefix := backends[name](t)
			f := newFixture(t)
			q, err := native.NewQueue(rdb, "emails", native.WithPrefix(prefix))
			if err != nil {
				t.Fatal(err)
			}
			p, _ := backoff.Fixed(20 * time.Millisecond)
			rule, _ := backoff.NewRule(p, 3)
			h := &scripted{}
			w, err := native.NewWorker(q, rule, func(_ context.Context, j *native.Job) error { return h.attempt(j.ID) },
				native.WithObserver(f.obs),
				native.WithErrorHandler(func(err error) { t.Logf("worker: %v", err) }))
			if err != nil {
				t.Fatal(err)
			}

			// The producer injects its context into the job's metadata.
			pctx, producer := f.tp.Tracer("producer").Start(context.Background(), "send emails",
				trace.WithSpanKind(trace.SpanKindProducer))
			meta := map[string]string{}
			f.obs.Inject(pctx, observe.MapCarrier(meta))
			producer.End()

			ctx := context.Background()
			for _, e := range []struct {
				id   string
				opts []native.EnqueueOption
			}{
				{"flaky", []native.EnqueueOption{native.WithMetadata(meta)}},
				{"doomed", nil},
				{"bad", nil},
			} {
				opts := append([]native.EnqueueOption{native.WithID(e.id), native.WithName("email.send")}, e.opts...)
				if _, err := q.Enqueue(ctx, []byte("{}"), opts...); err != nil {
					t.Fatalf("enqueue %s: %v", e.id, err)
				}
			}
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			waitSpans(t, f, 7, 20*time.Second)
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := w.Shutdown(sctx); err != nil {
				t.Fatalf("shutdown: %v", err)
			}

			base := story{system: native.System, queue: "emails", maxAttempts: 3}
			flaky := base
			flaky.jobID, flaky.outcomes, flaky.producer = "flaky", []string{"retry", "retry", "success"}, producer.SpanContext().SpanID()
			flaky.check(t, jobSpans(f.spans, "flaky"))
			doomed := base
			doomed.jobID, doomed.outcomes = "doomed", []string{"retry", "retry", "exhausted"}
			doomed.check(t, jobSpans(f.spans, "doomed"))
			bad := base
			bad.jobID, bad.outcomes = "bad", []string{"permanent"}
			bad.check(t, jobSpans(f.spans, "bad"))
			checkJobMetrics(t, f, native.System, "emails", map[string]int64{"retry": 4, "success": 1, "exhausted": 1, "permanent": 1}, 4, 1)
		})
	}
}
