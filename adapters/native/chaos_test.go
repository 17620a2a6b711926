package native

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
)

// TestChaos runs thousands of jobs through several workers while workers
// are killed mid-job (abandoned as a crash would leave them) and their
// Redis connections are dropped with CLIENT KILL; about 30% of attempts
// fail. Meanwhile an operator runs every action on random jobs: cancels
// (running jobs too), retries, run-nows, deletes, bulk retries of failed
// jobs, pauses and resumes, listings. Throughout, every job is in exactly
// one state (checked on snapshots of the queue's keys); afterwards every
// job not deleted is in exactly one terminal state, none is lost and none
// ran more than its cap. Real Redis only: miniredis has no CLIENT KILL.
func TestChaos(t *testing.T) {
	admin := testenv.Redis(t)
	prefix := testenv.Prefix(t, admin)
	ctx := context.Background()
	const (
		jobs        = 3000
		maxAttempts = 4
		workers     = 4
		chaosFor    = 15 * time.Second
	)
	clientName := "rbt-chaos-" + strings.ReplaceAll(prefix, ":", "-")
	rule, err := backoff.NewRule(backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(5*time.Millisecond, 50*time.Millisecond)))), maxAttempts)
	if err != nil {
		t.Fatal(err)
	}

	var (
		over     atomic.Int32 // attempts seen above the cap
		attempts atomic.Int64
		failed   atomic.Int64
	)
	handler := func(ctx context.Context, j *Job) error {
		attempts.Add(1)
		if j.Attempt > maxAttempts {
			over.Add(1)
		}
		time.Sleep(5 * time.Millisecond)
		h := fnv.New32a()
		fmt.Fprintf(h, "%s/%d", j.ID, j.Attempt)
		if h.Sum32()%10 < 3 {
			failed.Add(1)
			return errors.New("chaos: attempt fails")
		}
		return nil
	}

	newWorker := func() *Worker {
		rdb := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(), ClientName: clientName, PoolSize: 20})
		t.Cleanup(func() { _ = rdb.Close() })
		q, err := NewQueue(rdb, "chaos", WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		w, err := NewWorker(q, rule, handler, WithConcurrency(8), WithLease(300*time.Millisecond),
			WithReclaimInterval(100*time.Millisecond), WithErrorHandler(func(error) {}))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		return w
	}

	q, err := NewQueue(admin, "chaos", WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, jobs)
	for i := range ids {
		if ids[i], err = q.Enqueue(ctx, nil, WithName(fmt.Sprintf("kind%d", i%3))); err != nil {
			t.Fatal(err)
		}
	}

	var mu sync.Mutex
	pool := make([]*Worker, workers)
	for i := range pool {
		pool[i] = newWorker()
	}
	// The operator uses its own connection, which the chaos leaves alone:
	// an action whose reply is lost could not be told applied or not.
	op := &operator{q: q, rdb: admin, ids: ids, retryName: "kind1", checkEvery: 25}
	opStop := make(chan struct{})
	opDone := op.start(t, opStop)

	var kills, drops atomic.Int32
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		// Chaos until 90% of the jobs have ended, so it hits a busy queue.
		end := time.Now().Add(chaosFor)
		for i := 0; time.Now().Before(end); i++ {
			if c, err := q.Counts(ctx); err == nil && c.Completed+c.Failed >= jobs*9/10 {
				break
			}
			time.Sleep(100 * time.Millisecond)
			if i%3 == 0 {
				mu.Lock()
				victim := i / 3 % workers
				pool[victim].abandon()
				pool[victim] = newWorker()
				mu.Unlock()
				kills.Add(1)
			} else {
				list, err := admin.ClientList(ctx).Result()
				if err != nil {
					continue
				}
				for _, line := range strings.Split(list, "\n") {
					if !strings.Contains(line, " name="+clientName+" ") {
						continue
					}
					for _, f := range strings.Fields(line) {
						if id, ok := strings.CutPrefix(f, "id="); ok {
							if admin.Do(ctx, "CLIENT", "KILL", "ID", id).Err() == nil {
								drops.Add(1)
							}
						}
					}
				}
			}
		}
	}()
	<-chaosDone
	close(opStop)
	<-opDone
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	deleted := op.deletedIDs()

	deadline := time.Now().Add(40 * time.Second)
	for {
		c, err := q.Counts(ctx)
		if err == nil && c.Completed+c.Failed == int64(jobs-len(deleted)) && c.Waiting+c.Active+c.Delayed == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs not all finished 40s after the chaos: %+v (%v)", c, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	for _, w := range pool {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := w.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		cancel()
	}
	mu.Unlock()

	// Every job in exactly one state, none lost: over the keys, then job
	// by job.
	states := checkInvariants(t, admin, q)
	for _, id := range ids {
		if _, ok := states[id]; ok == deleted[id] {
			t.Errorf("job %s: deleted %v, yet in the queue %v", id, deleted[id], ok)
		}
	}
	// Every job not deleted in exactly one terminal state, attempts within
	// the cap.
	var done, gaveUp, cancelled, reclaimed int
	for lo := 0; lo < jobs; lo += 500 {
		batch := ids[lo:min(lo+500, jobs)]
		type row struct{ c, f *redis.FloatCmd }
		rows := make([]row, len(batch))
		stored := make([]*redis.StringCmd, len(batch))
		_, _ = admin.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range batch {
				rows[i] = row{p.ZScore(ctx, q.keys.completed, id), p.ZScore(ctx, q.keys.failed, id)}
				stored[i] = p.HGet(ctx, q.keys.jobs, id)
			}
			return nil
		})
		for i, id := range batch {
			if deleted[id] {
				continue
			}
			inC, inF := rows[i].c.Err() == nil, rows[i].f.Err() == nil
			rec, err := decodeRecord(stored[i].Val())
			if err != nil {
				t.Errorf("job %s: %v", id, err)
			}
			n := rec.attempts
			switch {
			case inC && inF:
				t.Errorf("job %s is both completed and failed", id)
			case !inC && !inF:
				t.Errorf("job %s is in no terminal state", id)
			case inC:
				done++
			case rec.cancelled():
				cancelled++
			default:
				gaveUp++
				if n != maxAttempts {
					t.Errorf("job %s failed after %d attempts, want exactly the cap %d", id, n, maxAttempts)
				}
			}
			if rec.err == ErrLeaseExpired.Error() {
				reclaimed++
			}
			if n < 1 && !rec.cancelled() || n > maxAttempts {
				t.Errorf("job %s took %d attempts, want 1..%d (0 for a job cancelled before it ran)", id, n, maxAttempts)
			}
		}
	}
	if over.Load() > 0 {
		t.Errorf("%d attempts ran above the cap", over.Load())
	}
	if kills.Load() == 0 || drops.Load() == 0 {
		t.Errorf("chaos did nothing: %d workers killed, %d connections dropped", kills.Load(), drops.Load())
	}
	if reclaimed == 0 {
		t.Errorf("no job was reclaimed from a killed worker")
	}
	if len(deleted) == 0 || cancelled == 0 {
		t.Errorf("the operator did nothing: %d jobs deleted, %d cancelled", len(deleted), cancelled)
	}
	t.Logf("%d jobs: %d completed, %d failed, %d cancelled, %d deleted; %d attempts (%d failing by design); %d workers killed, %d connections dropped; %d jobs last failed by a reclaimed lease; operator actions that changed something: %s",
		jobs, done, gaveUp, cancelled, len(deleted), attempts.Load(), failed.Load(), kills.Load(), drops.Load(), reclaimed, op.summary())
}
