package native

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/stall"
	"github.com/rebound-go/rebound/reboundtest"
)

// near fails the test unless got is within tol of want.
func near(t *testing.T, what string, got, want time.Time, tol time.Duration) {
	t.Helper()
	if d := got.Sub(want); d > tol || d < -tol {
		t.Errorf("%s is %v, want %v (within %s; off by %s)", what, got, want, tol, d)
	}
}

// A delay at or beyond MaxDelay, up to the largest Duration, schedules the
// job MaxDelay ahead: it never runs at once by overflow.
func TestEnqueueDelayBeyondMaxDelay(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "hugedelay")
		for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 500, MaxDelay + time.Hour, MaxDelay} {
			id, err := q.Enqueue(ctx, nil, WithDelay(d))
			if err != nil {
				t.Fatalf("WithDelay(%d): %v", d, err)
			}
			info, err := q.Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if info.State != StateDelayed {
				t.Errorf("WithDelay(%d): job is %v, want delayed", d, info.State)
				continue
			}
			near(t, "fire time of WithDelay("+d.String()+")", info.NextFireAt, time.Now().Add(MaxDelay), time.Minute)
		}
	})
}

// hugePolicy returns the largest Duration for every attempt, as a buggy or
// naive custom policy might.
type hugePolicy struct{}

func (hugePolicy) Delay(int, backoff.Source) time.Duration { return math.MaxInt64 }

func (hugePolicy) Max() time.Duration { return math.MaxInt64 }

func (hugePolicy) String() string { return "huge" }

// A retry delay of the largest Duration, from the policy or from a
// RetryAfter hint, is clamped to MaxDelay: the job waits that long, the
// observer is told what was applied, and the other retries of the queue
// keep their time.
func TestRetryDelayBeyondMaxDelay(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		for _, c := range []struct {
			name string
			rule backoff.Rule
			err  error
		}{
			{"policy", backoff.Must(backoff.NewRule(hugePolicy{}, 3)), errors.New("down")},
			{"hint", fixedRule(t, 30*time.Millisecond, 3), backoff.RetryAfter(errors.New("slow down"), math.MaxInt64)},
		} {
			t.Run(c.name, func(t *testing.T) {
				q := newQueue(t, rdb, prefix, "hugeretry-"+c.name)
				lag := stall.Watch(t)
				rec := &reboundtest.Recorder{}
				var mu sync.Mutex
				var ends []time.Time
				var secondStart time.Time
				startWorker(t, q, c.rule, func(ctx context.Context, j *Job) error {
					if j.ID == "huge" {
						return c.err
					}
					mu.Lock()
					defer mu.Unlock()
					if j.Attempt == 1 {
						defer func() { ends = append(ends, time.Now()) }()
						return backoff.RetryAfter(errors.New("once"), 0)
					}
					secondStart = time.Now()
					return nil
				}, WithObserver(rec))
				if _, err := q.Enqueue(ctx, nil, WithID("huge")); err != nil {
					t.Fatal(err)
				}
				info := waitState(t, q, "huge", StateDelayed, 5*time.Second)
				near(t, "the retry's fire time", info.NextFireAt, time.Now().Add(MaxDelay), time.Minute)
				waitEnded(t, rec, "huge", 1)
				if ev, _ := rec.Last("huge"); ev.Result.Decision.Delay != MaxDelay {
					t.Errorf("observer told delay %s, want the applied %s", ev.Result.Decision.Delay, MaxDelay)
				} else {
					near(t, "the observer's FireAt", ev.Result.FireAt, info.NextFireAt, time.Millisecond)
				}
				if c.name == "policy" {
					return // the other job's delay is the same huge one
				}
				// Another job of the queue retries on time.
				if _, err := q.Enqueue(ctx, nil, WithID("normal")); err != nil {
					t.Fatal(err)
				}
				waitState(t, q, "normal", StateCompleted, 5*time.Second)
				mu.Lock()
				defer mu.Unlock()
				if gap, late := secondStart.Sub(ends[0]), lag.Allow(270*time.Millisecond, ends[0], secondStart); gap < 30*time.Millisecond || gap > 30*time.Millisecond+late {
					t.Errorf("the other job's 30ms retry ran %s after its failure, want 30ms to 30ms+%v (270ms, plus what this process's own timers lagged meanwhile)", gap, late)
				}
			})
		}
	})
}

// A delayed entry with a negative score (no fire time this package writes;
// older versions wrote one for a delay that overflowed) counts as due
// rather than parking its job for good.
func TestNegativeScoreIsDue(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "negative")
		if _, err := q.Enqueue(ctx, nil, WithID("parked"), WithDelay(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := rdb.ZAdd(ctx, q.keys.delayed, redis.Z{Score: -1 << 50, Member: "parked"}).Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := q.Promote(ctx); err != nil || n != 1 {
			t.Fatalf("Promote moved %d (%v), want the job with a negative score", n, err)
		}
	})
}

// Fire times after 2039-09-07 (fire_ms*4096 beyond 2^53, where a double no
// longer holds every integer) are still kept to the millisecond: no job is
// promoted before its fire time, and each is promoted at it.
func TestFireTimesPast2039NeverEarly(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	for _, base := range []int64{1<<41 - 8, 1<<41 + 1000, 1<<42 + 77, time.Now().Add(MaxDelay).UnixMilli()} {
		q := newQueue(t, rdb, "rbt", fmt.Sprintf("late-%d", base))
		m.SetTime(time.UnixMilli(base))
		const n = 24
		for i := range n {
			// Fire times base+1 .. base+n, sequence numbers 1 .. n.
			if _, err := q.Enqueue(ctx, nil, WithID(strconv.Itoa(i)), WithDelay(time.Duration(i+1)*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			info, err := q.Job(ctx, strconv.Itoa(i))
			if err != nil || info.NextFireAt.UnixMilli() != base+int64(i)+1 {
				t.Errorf("base %d: job %d fires at %d (%v), want %d", base, i, info.NextFireAt.UnixMilli(), err, base+int64(i)+1)
			}
		}
		for i := range n {
			fire := base + int64(i) + 1
			m.SetTime(time.UnixMilli(fire - 1))
			if _, err := q.Promote(ctx); err != nil {
				t.Fatal(err)
			}
			if due, _ := rdb.LLen(ctx, q.keys.due).Result(); due != int64(i) {
				t.Errorf("base %d: %d jobs due 1ms before job %d's fire time, want %d", base, due, i, i)
			}
			m.SetTime(time.UnixMilli(fire))
			if _, err := q.Promote(ctx); err != nil {
				t.Fatal(err)
			}
			if due, _ := rdb.LLen(ctx, q.keys.due).Result(); due != int64(i)+1 {
				t.Errorf("base %d: %d jobs due at job %d's fire time, want %d", base, due, i, i+1)
			}
		}
	}
}

func TestSameMillisecondFIFO(t *testing.T) {
	// On miniredis the clock is frozen, so every job shares one fire
	// millisecond and only the sequence number orders them.
	m := miniredis.RunT(t)
	m.SetTime(time.UnixMilli(1_800_000_000_000))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	checkFIFO(t, rdb, "rbt", func() { m.SetTime(time.UnixMilli(1_800_000_000_000 + 60)) })
	t.Run("redis", func(t *testing.T) {
		rdb, prefix := backends[0].open(t)
		checkFIFO(t, rdb, prefix, func() { time.Sleep(60 * time.Millisecond) })
	})
}

func checkFIFO(t *testing.T, rdb redis.UniversalClient, prefix string, advance func()) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "fifo")
	const n = 300
	var want []string
	for i := range n {
		id := fmt.Sprintf("job-%03d", i)
		if _, err := q.Enqueue(ctx, nil, WithID(id), WithDelay(50*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	scores, err := rdb.ZRangeWithScores(ctx, q.keys.delayed, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	ms := map[int64]int{}
	for _, z := range scores {
		ms[int64(z.Score)/0x1000]++
	}
	shared := 0
	for _, c := range ms {
		shared = max(shared, c)
	}
	advance()
	if _, err := q.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := rdb.LRange(ctx, q.keys.due, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("due list after promotion is not in enqueue order:\n got %v\nwant %v", got, want)
	}
	t.Logf("%d jobs, at most %d sharing one fire millisecond", n, shared)
	if shared < 2 {
		t.Logf("no two jobs shared a millisecond on this run; order held anyway")
	}
}

// A job whose delay has passed (a retry, or a first run enqueued with a
// delay) is reserved before jobs enqueued to run at once, however many of
// those wait: its lateness is bounded by the workers' capacity, not by the
// backlog. Due jobs keep their fire-time order among themselves, and fresh
// jobs theirs.
func TestDueJobsRunBeforeTheWaitList(t *testing.T) {
	m := miniredis.RunT(t)
	m.SetTime(time.UnixMilli(1_800_000_000_000))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	q := newQueue(t, rdb, "rbt", "duefirst")
	w := idle(t, q, fixedRule(t, time.Millisecond, 3))
	for i := range 5 {
		if _, err := q.Enqueue(ctx, nil, WithID(fmt.Sprintf("fresh-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for i, d := range []time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
		if _, err := q.Enqueue(ctx, nil, WithID(fmt.Sprintf("delayed-%d", i)), WithDelay(d)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	take := func(n int) {
		t.Helper()
		jobs, _, _, err := w.reserve(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			got = append(got, j.ID)
		}
	}
	take(2) // nothing due yet: the wait list's first two
	m.SetTime(time.UnixMilli(1_800_000_000_000 + 25))
	take(1) // delayed-1 and delayed-2 are due; the earliest goes first
	if c, err := q.Counts(ctx); err != nil || c.Waiting != 4 || c.Delayed != 1 {
		t.Fatalf("counts %+v, %v; want 4 waiting (3 fresh, 1 due) and 1 delayed", c, err)
	}
	take(3) // delayed-2, then the wait list resumes
	m.SetTime(time.UnixMilli(1_800_000_000_000 + 40))
	take(5) // delayed-0, then what is left of the wait list
	want := "fresh-0,fresh-1,delayed-1,delayed-2,fresh-2,fresh-3,delayed-0,fresh-4"
	if strings.Join(got, ",") != want {
		t.Fatalf("reserved in order\n %s\nwant\n %s", strings.Join(got, ","), want)
	}
}

// Jobs due in the same millisecond keep their enqueue order however far
// the queue's counter has gone: it hands out lease tokens too, and a
// score taken from it modulo 4096 put the jobs enqueued after it crossed
// a multiple of 4096 ahead of those enqueued before. On miniredis the
// clock is frozen, so every job below shares one fire millisecond; on
// Redis each EnqueueMany reads the clock once, so each batch does.
func TestSameMillisecondFIFOAcrossCounterWrap(t *testing.T) {
	t.Run("bulk", func(t *testing.T) {
		eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
			ctx := context.Background()
			q := newQueue(t, rdb, prefix, "fifowrap-bulk")
			var want []string
			for b := range 5 {
				jobs := make([]EnqueueParams, 1000)
				for i := range jobs {
					id := fmt.Sprintf("b%d-%04d", b, i)
					jobs[i] = EnqueueParams{Options: []EnqueueOption{WithID(id), WithDelay(time.Hour)}}
					want = append(want, id)
				}
				if _, err := q.EnqueueMany(ctx, jobs); err != nil {
					t.Fatal(err)
				}
			}
			checkDelayedOrder(t, rdb, q, want)
		})
	})
	t.Run("single", func(t *testing.T) {
		eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
			ctx := context.Background()
			q := newQueue(t, rdb, prefix, "fifowrap-one")
			// Lease tokens of 4093 reservations taken before.
			if err := rdb.Set(ctx, q.keys.counter, 4093, 0).Err(); err != nil {
				t.Fatal(err)
			}
			var want []string
			for i := range 6 {
				id := fmt.Sprintf("one-%d", i)
				if _, err := q.Enqueue(ctx, nil, WithID(id), WithDelay(time.Hour)); err != nil {
					t.Fatal(err)
				}
				want = append(want, id)
			}
			checkDelayedOrder(t, rdb, q, want)
		})
	})
}

// checkDelayedOrder fails the test unless the jobs of q's delayed set that
// share a fire millisecond are in the order of want (the enqueue order),
// and reports how many pairs are not.
func checkDelayedOrder(t *testing.T, rdb redis.UniversalClient, q *Queue, want []string) {
	t.Helper()
	zs, err := rdb.ZRangeWithScores(context.Background(), q.keys.delayed, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(zs) != len(want) {
		t.Fatalf("%d jobs delayed, want %d", len(zs), len(want))
	}
	rank := map[string]int{}
	for i, id := range want {
		rank[id] = i
	}
	// Walk each millisecond's run of the set in order; count the pairs of
	// jobs of that millisecond out of enqueue order.
	inversions, first := 0, ""
	for i := range zs {
		for j := i + 1; j < len(zs) && int64(zs[j].Score)/0x1000 == int64(zs[i].Score)/0x1000; j++ {
			a, b := zs[i].Member.(string), zs[j].Member.(string)
			if rank[a] > rank[b] {
				if inversions == 0 {
					first = fmt.Sprintf("%s comes before %s", a, b)
				}
				inversions++
			}
		}
	}
	if inversions > 0 {
		t.Fatalf("%d pairs of jobs due in one millisecond are out of enqueue order (first: %s)", inversions, first)
	}
}

// A millisecond's places are taken after the highest one the delayed set
// holds, whoever stored it: a job scored by an earlier version (a sequence
// modulo 4096) stays ahead of the jobs enqueued after it for the same
// millisecond. Past 4096 jobs waiting for one millisecond the later ones
// share its last place: still due at their time, after the first 4095.
func TestSameMillisecondPlaces(t *testing.T) {
	m := miniredis.RunT(t)
	now := time.UnixMilli(1_800_000_000_000)
	m.SetTime(now)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	q := newQueue(t, rdb, "rbt", "places")
	fire := now.Add(time.Hour).UnixMilli()
	if err := rdb.HSet(ctx, q.keys.jobs, "legacy", "0,,0,1,,|0:0:0:").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, q.keys.delayed, redis.Z{Score: float64(fire*0x1000 + 4000), Member: "legacy"}).Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"legacy"}
	for i := range 100 { // places 4001 to 4095, then five at 4095
		id := fmt.Sprintf("new-%02d", i)
		if _, err := q.Enqueue(ctx, nil, WithID(id), WithDelay(time.Hour)); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	got, err := rdb.ZRange(ctx, q.keys.delayed, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("delayed order after a stored job at place 4000:\n got %v\nwant %v", got, want)
	}
	last, err := rdb.ZScore(ctx, q.keys.delayed, "new-99").Result()
	if err != nil || int64(last) != fire*0x1000+4095 {
		t.Fatalf("the jobs past place 4095 scored %v (%v), want the millisecond's last place %d", int64(last), err, fire*0x1000+4095)
	}
	m.SetTime(time.UnixMilli(fire - 1))
	if n, err := q.Promote(ctx); err != nil || n != 0 {
		t.Fatalf("a millisecond before their fire time, Promote moved %d (%v), want 0", n, err)
	}
	m.SetTime(time.UnixMilli(fire))
	if n, err := q.Promote(ctx); err != nil || n != 101 {
		t.Fatalf("at their fire time, Promote moved %d (%v), want all 101", n, err)
	}
}
