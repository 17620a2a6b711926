package native

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// panicPolicy panics for the attempts in panics and waits 10ms after any
// other.
type panicPolicy struct{ panics map[int]bool }

func (p panicPolicy) Delay(attempt int, _ backoff.Source) time.Duration {
	if p.panics[attempt] {
		panic(fmt.Sprintf("policy bug at attempt %d", attempt))
	}
	return 10 * time.Millisecond
}

func (panicPolicy) Max() time.Duration { return 10 * time.Millisecond }

func (panicPolicy) String() string { return "panicky" }

// unwrapBomb is an error whose Unwrap panics, so that errors.As, walking
// it for a Permanent mark or a RetryAfter hint, panics too.
type unwrapBomb struct{}

func (unwrapBomb) Error() string { return "bomb" }

func (unwrapBomb) Unwrap() error { panic("unwrap bomb") }

// A policy that panics, or an error that makes deciding panic, does not
// take the worker down: the attempt is decided with the fallback delay
// (the cap still applies), the panic is reported as an
// *observe.PanicError{Op: "policy"}, and the queue keeps flowing.
func TestDecidingPanicUsesFallback(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "policypanic")
		rec := &reboundtest.Recorder{}
		var mu sync.Mutex
		var reported []*observe.PanicError
		rule := backoff.Must(backoff.NewRule(panicPolicy{panics: map[int]bool{1: true}}, 3))
		startWorker(t, q, rule, func(ctx context.Context, j *Job) error {
			switch {
			case j.ID == "bomb":
				return unwrapBomb{}
			case j.Attempt < 3:
				return errors.New("down")
			}
			return nil
		}, WithObserver(rec), WithFallbackDelay(40*time.Millisecond), WithErrorHandler(func(err error) {
			var pe *observe.PanicError
			if errors.As(err, &pe) {
				mu.Lock()
				reported = append(reported, pe)
				mu.Unlock()
			}
		}))
		for _, id := range []string{"a", "b"} {
			if _, err := q.Enqueue(ctx, nil, WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		// The bomb's last attempt is exhausted though deciding panics.
		if _, err := q.Enqueue(ctx, nil, WithID("bomb"), WithMaxAttempts(2)); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"a", "b"} {
			waitState(t, q, id, StateCompleted, 5*time.Second)
			waitEnded(t, rec, id, 3)
			if got, want := rec.Story(id), "1 retry 40ms\n2 retry 10ms\n3 success"; got != want {
				t.Errorf("job %s:\n%s\nwant\n%s", id, got, want)
			}
		}
		waitState(t, q, "bomb", StateFailed, 5*time.Second)
		waitEnded(t, rec, "bomb", 2)
		if got, want := rec.Story("bomb"), "1 retry 40ms\n2 exhausted"; got != want {
			t.Errorf("job bomb:\n%s\nwant\n%s", got, want)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(reported) < 4 {
			t.Errorf("%d panics reported, want at least 4 (two policy panics, two bomb attempts)", len(reported))
		}
		for _, pe := range reported {
			if pe.Op != "policy" {
				t.Errorf("reported a panic of %q, want \"policy\"", pe.Op)
			}
		}
	})
}

// The reclaim path decides too: a policy that panics there is recovered
// the same way.
func TestReclaimDecidingPanicUsesFallback(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "reclaimpanic")
		rule := backoff.Must(backoff.NewRule(panicPolicy{panics: map[int]bool{1: true}}, 3))
		var panics atomic.Int32
		w := idle(t, q, rule, WithLease(50*time.Millisecond), WithFallbackDelay(time.Hour), WithErrorHandler(func(err error) {
			if errors.As(err, new(*observe.PanicError)) {
				panics.Add(1)
			}
		}))
		if _, err := q.Enqueue(ctx, nil, WithID("r")); err != nil {
			t.Fatal(err)
		}
		reserveOne(t, w)
		time.Sleep(70 * time.Millisecond)
		if n, err := w.reclaimOnce(ctx, 10); err != nil || n != 1 {
			t.Fatalf("reclaim found %d (%v), want 1", n, err)
		}
		info, err := q.Job(ctx, "r")
		if err != nil || info.State != StateDelayed {
			t.Fatalf("reclaimed job: %+v (%v), want delayed", info, err)
		}
		near(t, "the reclaimed job's fire time", info.NextFireAt, time.Now().Add(time.Hour), time.Minute)
		if panics.Load() != 1 {
			t.Errorf("%d panics reported, want 1", panics.Load())
		}
	})
}

func TestKindRuleOption(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	q, _ := NewQueue(rdb, "q")
	h := func(context.Context, *Job) error { return nil }
	for _, c := range []struct {
		opt  WorkerOption
		want string
	}{
		{WithKindRule("", fixedRule(t, time.Second, 3)), "native: WithKindRule: kind is empty, want a job name"},
		{WithKindRule("mail", backoff.Rule{}), `native: WithKindRule("mail"): the rule is the zero backoff.Rule, want one built with backoff.NewRule`},
	} {
		if _, err := NewWorker(q, fixedRule(t, time.Second, 3), h, c.opt); err == nil || err.Error() != c.want {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

func TestRuleFor(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	q, _ := NewQueue(rdb, "q")
	def, mail := fixedRule(t, time.Second, 3), fixedRule(t, time.Minute, 7)
	w, err := NewWorker(q, def, func(context.Context, *Job) error { return nil }, WithKindRule("mail", mail))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Rule().String(); got != def.String() {
		t.Errorf("Rule() = %s, want the default %s", got, def)
	}
	if got := w.RuleFor("mail").String(); got != mail.String() {
		t.Errorf(`RuleFor("mail") = %s, want its own %s`, got, mail)
	}
	if got := w.RuleFor("other").String(); got != def.String() {
		t.Errorf(`RuleFor("other") = %s, want the default %s`, got, def)
	}
}
