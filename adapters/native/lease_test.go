package native

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/reboundtest"
)

// No false alarms: with leases renewed often and jobs ending all the time,
// and no worker losing anything, no lease is reported lost.
func TestNoFalseLeaseLost(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "nofalse")
		var lost, other atomic.Int32
		startWorker(t, q, fixedRule(t, time.Millisecond, 3), func(ctx context.Context, j *Job) error {
			time.Sleep(time.Duration(j.Payload[0]) * 100 * time.Microsecond)
			return nil
		}, WithConcurrency(20), WithLease(50*time.Millisecond), WithErrorHandler(func(err error) {
			if errors.Is(err, ErrLeaseLost) {
				lost.Add(1)
			} else {
				other.Add(1)
				t.Logf("worker: %v", err)
			}
		}))
		n := 1500
		if strings.Contains(t.Name(), "miniredis") {
			n = 500 // every script is interpreted in Go there
		}
		for i := range n {
			if _, err := q.Enqueue(ctx, []byte{byte(i % 20)}); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			c, err := q.Counts(ctx)
			if err == nil && c.Completed == int64(n) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("counts %+v (%v), want %d completed", c, err, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// A renewal held up past the short lease (a loaded machine, the
		// race detector) really loses it: the reclaim leaves its mark in
		// the job's record. Only those may be reported.
		recs, err := rdb.HGetAll(ctx, q.keys.jobs).Result()
		if err != nil {
			t.Fatal(err)
		}
		reclaimed := 0
		for _, r := range recs {
			if rec, err := decodeRecord(r); err == nil && rec.err == ErrLeaseExpired.Error() {
				reclaimed++
			}
		}
		if int(lost.Load()) != reclaimed {
			t.Errorf("%d leases reported lost in %d jobs, of which %d lost their lease", lost.Load(), n, reclaimed)
		}
	})
}

// A worker whose job was reclaimed while its handler ran learns that its
// lease is gone: its outcome is refused (ErrLeaseLost, reported once),
// and observers are told what the engine applied to that attempt (the
// reclaim's failure and retry), never the stale worker's success.
func TestStaleWorkerIsToldTheTruth(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		for _, by := range []string{"another worker", "its own worker"} {
			t.Run(strings.ReplaceAll(by, " ", "-"), func(t *testing.T) {
				ctx := context.Background()
				q := newQueue(t, rdb, prefix, "stale-"+strings.ReplaceAll(by, " ", "-"))
				rec := &reboundtest.Recorder{}
				var lost atomic.Int32
				started := make(chan struct{}, 1)
				release := make(chan struct{})
				rule := fixedRule(t, 20*time.Millisecond, 3)
				w := startWorker(t, q, rule, func(ctx context.Context, j *Job) error {
					if j.Attempt == 1 {
						started <- struct{}{}
						<-release // ignores its context: a stale worker
					}
					return nil
				}, WithObserver(rec), WithLease(time.Second), WithErrorHandler(func(err error) {
					if errors.Is(err, ErrLeaseLost) {
						lost.Add(1)
					} else {
						t.Logf("worker: %v", err)
					}
				}))
				reclaimer := w
				if by == "another worker" {
					reclaimer = idle(t, q, rule, WithObserver(rec))
				}
				if _, err := q.Enqueue(ctx, nil, WithID("s")); err != nil {
					t.Fatal(err)
				}
				<-started
				forceReclaim(t, rdb, q, reclaimer, "s")
				close(release)
				waitState(t, q, "s", StateCompleted, 5*time.Second)
				waitEnded(t, rec, "s", 2)
				if got, want := rec.Story("s"), "1 retry 20ms\n2 success"; got != want {
					t.Errorf("story:\n%s\nwant\n%s", got, want)
				}
				if ev := rec.Job("s")[0]; !errors.Is(ev.Result.Err, ErrLeaseExpired) {
					t.Errorf("attempt 1 ended with %v, want ErrLeaseExpired", ev.Result.Err)
				}
				if p := rec.Problems(); len(p) > 0 {
					t.Errorf("recorder problems: %v", p)
				}
				time.Sleep(50 * time.Millisecond)
				if lost.Load() != 1 {
					t.Errorf("ErrLeaseLost reported %d times, want once", lost.Load())
				}
			})
		}
	})
}

func TestStaleWorkerAfterReclaim(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "stale")
		rule := fixedRule(t, 40*time.Millisecond, 3)
		w := idle(t, q, rule, WithLease(50*time.Millisecond))
		id, _ := q.Enqueue(ctx, []byte("p"))
		_, oldTok := reserveOne(t, w)

		// The lease is live: reclaim leaves it alone, and a reclaiming
		// fail is refused even with the right token.
		if n, err := w.reclaimOnce(ctx, 10); err != nil || n != 0 {
			t.Fatalf("reclaim with a live lease found %d (%v), want 0", n, err)
		}
		if c := (tc{t}).code(w.fail(ctx, id, oldTok, backoff.Decision{Outcome: backoff.OutcomeRetry}, 3, "x", "", true)); c != -3 {
			t.Fatalf("reclaiming fail on a live lease = %d, want -3", c)
		}
		time.Sleep(70 * time.Millisecond)
		if n, err := w.reclaimOnce(ctx, 10); err != nil || n != 1 {
			t.Fatalf("reclaim after expiry found %d (%v), want 1", n, err)
		}
		info, _ := q.Job(ctx, id)
		if info.State != StateDelayed || info.Attempts != 1 || info.LastError != ErrLeaseExpired.Error() {
			t.Fatalf("reclaimed job: %+v; want delayed, 1 attempt counted, lease-expired error", info)
		}

		// The stale worker comes back: neither completing nor failing nor
		// renewing may touch the newer state.
		if c := (tc{t}).code(w.complete(ctx, id, oldTok+"x", "")); c != -1 {
			t.Errorf("stale complete = %d, want -1", c)
		}
		if res, err := scriptExtend.Run(ctx, rdb, []string{q.keys.active, q.keys.jobs}, 1000, id, oldTok).Slice(); err != nil || parseInt(res[0]) != 0 {
			t.Errorf("stale extend = %v, %v; want 0", res, err)
		}
		time.Sleep(50 * time.Millisecond)
		j, newTok := reserveOne(t, w)
		if j.Attempt != 2 || newTok == oldTok {
			t.Fatalf("re-reserved attempt %d token %s (old %s); want attempt 2 and a new token", j.Attempt, newTok, oldTok)
		}
		// The reclaim ended the old token's attempt, not its worker: the
		// stale worker's own outcome is refused as stale, never taken for
		// one it already stored.
		_, err := w.finish(id, nil, func(ctx context.Context) ([]any, error) { return w.complete(ctx, id, oldTok, "") })
		if !errors.Is(err, ErrLeaseLost) {
			t.Errorf("stale complete with the reclaimed token: %v, want ErrLeaseLost", err)
		}
		_, err = w.finish(id, nil, func(ctx context.Context) ([]any, error) { return w.complete(ctx, id, "12345", "") })
		if !errors.Is(err, ErrLeaseLost) {
			t.Errorf("stale complete with a foreign token: %v, want ErrLeaseLost", err)
		}
		if info, _ := q.Job(ctx, id); info.State != StateActive || info.Attempts != 2 {
			t.Errorf("after stale calls: %+v; want active with attempt 2", info)
		}
		if c := (tc{t}).code(w.complete(ctx, id, newTok, "")); c != 1 {
			t.Errorf("current holder's complete = %d, want 1", c)
		}
	})
}

func TestPoisonJobStopsAtCap(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "poison")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3), WithLease(50*time.Millisecond))
		id, _ := q.Enqueue(ctx, nil)
		for attempt := 1; attempt <= 3; attempt++ {
			deadline := time.Now().Add(2 * time.Second)
			var j *Job
			for j == nil {
				jobs, _, _, err := w.reserve(1)
				if err != nil {
					t.Fatal(err)
				}
				if len(jobs) == 1 {
					j = jobs[0]
				} else if time.Now().After(deadline) {
					t.Fatalf("attempt %d never became runnable", attempt)
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
			if j.Attempt != attempt {
				t.Fatalf("reserved attempt %d, want %d", j.Attempt, attempt)
			}
			// The worker "dies": nothing is stored, the lease runs out.
			time.Sleep(60 * time.Millisecond)
			if n, err := w.reclaimOnce(ctx, 10); err != nil || n != 1 {
				t.Fatalf("attempt %d: reclaim found %d (%v), want 1", attempt, n, err)
			}
		}
		info, _ := q.Job(ctx, id)
		if info.State != StateFailed || info.Attempts != 3 {
			t.Fatalf("poison job: %+v; want failed after 3 attempts", info)
		}
	})
}
