package native

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/memstore"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

func TestBreakerOptions(t *testing.T) {
	q := &Queue{name: "opts"}
	rule := fixedRule(t, time.Second, 3)
	h := func(context.Context, *Job) error { return nil }
	store := memstore.New(breaker.Rules{}, memstore.Options{})
	for _, c := range []struct {
		opts []WorkerOption
		want string
	}{
		{[]WorkerOption{WithBreaker(store), WithDependency("charge", "payments")}, ""},
		{[]WorkerOption{WithBreaker(nil)}, ""},
		{[]WorkerOption{WithDependency("charge", "payments")}, `native: WithDependency("charge", "payments") without WithBreaker, want a breaker.Store to keep the breaker`},
		{[]WorkerOption{WithBreaker(store), WithDependency("", "payments")}, `native: WithDependency: kind is empty, want the job kind bound to "payments"`},
		{[]WorkerOption{WithBreaker(store), WithDependency("charge", "{payments}")}, `native: WithDependency("charge"): breaker: dependency name "{payments}" has '{' at offset 0, want printable ASCII without spaces or braces`},
	} {
		_, err := NewWorker(q, rule, h, c.opts...)
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("NewWorker(%d options) = %v, want %q", len(c.opts), err, c.want)
		}
	}
}

// A job bound to a dependency whose breaker is open is put back without
// running its handler and without spending an attempt, due when the
// breaker may answer otherwise (plus at most one cool-down of spread); its
// metadata counts the deferral and the observer hears it deferred. A job
// bound to nothing runs meanwhile, and its error, marked for another
// dependency, counts against that one.
func TestBreakerDefersBoundJobs(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		store := memstore.New(breaker.Rules{Default: breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1h))"))}, memstore.Options{})
		if tr, err := store.Record(ctx, "payments", breaker.Ticket{}, breaker.Failure); err != nil || tr.To != breaker.Open {
			t.Fatalf("tripping the breaker: %v, %v", tr, err)
		}
		q := newQueue(t, rdb, prefix, "brk")
		rec := &reboundtest.Recorder{}
		var ran atomic.Int32
		startWorker(t, q, fixedRule(t, time.Millisecond, 3), func(_ context.Context, j *Job) error {
			ran.Add(1)
			if j.Name == "report" {
				return breaker.Dependency(errors.New("ledger: 503"), "ledger")
			}
			return nil
		}, WithObserver(rec), WithBreaker(store), WithDependency("charge", "payments"))

		before := time.Now()
		id, err := q.Enqueue(ctx, []byte("x"), WithName("charge"))
		if err != nil {
			t.Fatal(err)
		}
		evs := waitEnded(t, rec, id, 1)
		res := evs[0].Result
		var de *observe.DeferredError
		if res.Counting != observe.Deferred || !errors.As(res.Err, &de) || de.Dependency != "payments" || evs[0].Attempt.Number != 1 {
			t.Fatalf("first run told %+v (attempt %d), want deferred by payments at attempt 1", res, evs[0].Attempt.Number)
		}
		info := waitState(t, q, id, StateDelayed, 5*time.Second)
		if info.Attempts != 0 || info.Metadata[DeferralsKey] != "1" {
			t.Errorf("stored job: %d attempts, deferrals %q; want 0 attempts spent and 1 deferral counted", info.Attempts, info.Metadata[DeferralsKey])
		}
		if lo, hi := before.Add(time.Hour), time.Now().Add(2*time.Hour); info.NextFireAt.Before(lo) || info.NextFireAt.After(hi) {
			t.Errorf("due at %v from now, want between the cool-down's end and one cool-down later", time.Until(info.NextFireAt).Round(time.Second))
		}
		if !res.FireAt.Equal(info.NextFireAt) {
			t.Errorf("observer told FireAt %v, the job is due at %v: want what the script applied", res.FireAt, info.NextFireAt)
		}

		other, err := q.Enqueue(ctx, []byte("y"), WithName("report"), WithMaxAttempts(1))
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, q, other, StateFailed, 5*time.Second)
		if n := ran.Load(); n != 1 {
			t.Errorf("handler ran %d times, want once (the unbound job only)", n)
		}
		waitEnded(t, rec, other, 1)
		if st, _ := store.Status(ctx, "ledger"); st.State != breaker.Open {
			t.Errorf("ledger's breaker is %v after a failure marked for it, want open", st.State)
		}
	})
}
