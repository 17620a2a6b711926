package native

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// An outcome handed over just as the worker's background goroutines stop
// is not lost: its submitter sends it itself, exactly once, and a batch
// that drains it later leaves it out.
func TestPostedOutcomeSurvivesStop(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	q := newQueue(t, rdb, "rbt", "handover")
	w := idle(t, q, fixedRule(t, time.Millisecond, 3))
	w.bgStop = make(chan struct{})
	w.finishCh = make(chan *finishReq, 1)
	if _, err := q.Enqueue(ctx, nil, WithID("a")); err != nil {
		t.Fatal(err)
	}
	jobs, tokens, _, err := w.reserve(1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("reserve = %d jobs, %v; want 1", len(jobs), err)
	}
	r := w.post(scriptComplete, w.completeKeys(), w.completeArgs("a", tokens[0], keepMeta), false)
	if r == nil {
		t.Fatal("post refused the call while the worker runs")
	}
	close(w.bgStop) // nobody will send it now
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res, err := r.wait(wctx, w.bgStop, rdb)
	if err != nil || parseInt(res[0]) != 1 {
		t.Fatalf("wait = %v, %v; want the submitter to complete the job itself", res, err)
	}
	if info, _ := q.Job(ctx, "a"); info.State != StateCompleted {
		t.Fatalf("job is %v, want completed", info.State)
	}
	// A batch that drains the call afterwards must not send it again.
	b := w.prepareBatch(w.drainOutcomes(nil))
	if len(b.order) != 0 {
		t.Fatalf("a batch took a call its submitter already sent: %d scripts", len(b.order))
	}
	if w.post(scriptComplete, nil, nil, false) != nil {
		t.Fatal("post accepted a call after the background goroutines stopped")
	}
}
