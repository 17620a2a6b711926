package reboundasynq_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"

	reboundasynq "github.com/rebound-go/rebound/adapters/asynq"
	"github.com/rebound-go/rebound/adapters/asynq/reboundasynqtest"
	"github.com/rebound-go/rebound/backoff"
)

func rule(t *testing.T, d time.Duration, maxAttempts int) backoff.Rule {
	t.Helper()
	r, err := backoff.NewRule(backoff.Must(backoff.Fixed(d)), maxAttempts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var errBoom = errors.New("boom")

// TestKindRules: two task types under two rules each keep their own
// schedule and cap; other types run under the default rule; RuleFor and
// MaxRetryFor answer per type.
func TestKindRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		short, long := rule(t, time.Second, 2), rule(t, 3*time.Second, 4)
		fail := asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return errBoom })
		s := reboundasynqtest.NewServer(t, nil, fail, rule(t, 2*time.Second, 3),
			reboundasynq.WithKindRule("a", short), reboundasynq.WithKindRule("b", long))
		r := s.Retrier
		if r.RuleFor("a") != short || r.RuleFor("b") != long || r.RuleFor("c") != r.Rule() {
			t.Fatalf("RuleFor answers %v, %v, %v", r.RuleFor("a"), r.RuleFor("b"), r.RuleFor("c"))
		}
		want := map[string]string{
			"a": "1 retry 1s\n2 exhausted",
			"b": "1 retry 3s\n2 retry 3s\n3 retry 3s\n4 exhausted",
			"c": "1 retry 2s\n2 retry 2s\n3 exhausted",
		}
		ids := map[string]string{}
		for typ := range want {
			ids[typ] = s.Enqueue(t, typ, nil)
		}
		for typ, id := range ids {
			info := s.WaitState(t, id, asynq.TaskStateArchived)
			if got := s.Recorder.Story(id); got != want[typ] {
				t.Errorf("type %s story:\n%s\nwant:\n%s", typ, got, want[typ])
			}
			if wantMax := r.RuleFor(typ).MaxAttempts(); info.MaxRetry != wantMax {
				t.Errorf("type %s enqueued with MaxRetry %d, want %d (MaxRetryFor)", typ, info.MaxRetry, wantMax)
			}
			evs := s.Recorder.Job(id)
			for i := 1; i < len(evs); i++ {
				if evs[i].StartedAt.Before(evs[i-1].Result.FireAt) {
					t.Errorf("type %s attempt %d started %v, before the FireAt %v it was told", typ, i+1, evs[i].StartedAt, evs[i-1].Result.FireAt)
				}
			}
		}
	})
}

// TestRetryAfter: a retry-after hint longer than the policy's delay wins,
// one shorter does not.
func TestRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := asynq.HandlerFunc(func(ctx context.Context, task *asynq.Task) error {
			if n, _ := asynq.GetRetryCount(ctx); n == 0 {
				d, _ := time.ParseDuration(string(task.Payload()))
				return backoff.RetryAfter(errBoom, d)
			}
			return nil
		})
		s := reboundasynqtest.NewServer(t, nil, h, rule(t, 2*time.Second, 2))
		for hint, want := range map[string]time.Duration{"7s": 7 * time.Second, "500ms": 2 * time.Second} {
			id := s.Enqueue(t, "hinted", []byte(hint))
			ev := s.Attempt(t, id, 1)
			if ev.Result.Decision.Delay != want {
				t.Errorf("hint %s: retry after %v, want %v", hint, ev.Result.Decision.Delay, want)
			}
			if next := s.Attempt(t, id, 2); next.StartedAt.Before(ev.Result.FireAt) || next.StartedAt.Sub(ev.Result.FireAt) > time.Second {
				t.Errorf("hint %s: retry ran at %v, FireAt %v", hint, next.StartedAt, ev.Result.FireAt)
			}
		}
	})
}
