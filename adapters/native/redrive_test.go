package native

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/redisstore"
	"github.com/rebound-go/rebound/internal/stall"
	"github.com/rebound-go/rebound/internal/testenv"
)

// seedFailed stores n failed jobs r0000000.. straight into q's keys, one
// record each as a worker's last failed attempt leaves it, failed 1ms
// apart from an hour ago (the first the oldest): faster than failing them
// through a worker, for tests of many jobs.
func seedFailed(t testing.TB, q *Queue, n int, errText string) []string {
	t.Helper()
	ctx := context.Background()
	base := time.Now().Add(-time.Hour).UnixMilli()
	ids := make([]string, n)
	for from := 0; from < n; from += 5000 {
		pipe := q.rdb.Pipeline()
		for i := from; i < min(n, from+5000); i++ {
			ids[i] = fmt.Sprintf("r%07d", i)
			fin := base + int64(i)
			name := "charge"
			rec := fmt.Sprintf("1,,1,%d,%d,1|%d:%s0:%d:%sp", fin-10, fin, len(errText), errText, len(name), name)
			pipe.HSet(ctx, q.keys.jobs, ids[i], rec)
			pipe.ZAdd(ctx, q.keys.failed, redis.Z{Score: float64(fin), Member: ids[i]})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// switchStore is a breaker store whose one dependency's breaker the test
// opens and closes by hand.
type switchStore struct {
	open atomic.Bool
}

func (s *switchStore) Allow(context.Context, string, breaker.Job) (breaker.Verdict, error) {
	return breaker.Verdict{}, nil
}
func (s *switchStore) Record(context.Context, string, breaker.Ticket, breaker.Outcome) (breaker.Transition, error) {
	return breaker.Transition{}, nil
}
func (s *switchStore) Status(_ context.Context, dep string) (breaker.Status, error) {
	now := time.Now()
	if s.open.Load() {
		return breaker.Status{Dependency: dep, State: breaker.Open, NextProbe: now.Add(time.Hour), At: now}, nil
	}
	return breaker.Status{Dependency: dep, At: now}, nil
}
func (s *switchStore) List(context.Context) ([]breaker.Status, error) { return nil, nil }

// arrivals records, every 2ms, how many jobs are on q's wait list, and
// when.
type arrivals struct {
	mu   sync.Mutex
	at   []time.Time
	n    []int64
	stop chan struct{}
	done chan struct{}
}

func watchArrivals(q *Queue) *arrivals {
	a := &arrivals{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for {
			select {
			case <-a.stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			n, err := q.rdb.LLen(context.Background(), q.keys.wait).Result()
			if err != nil {
				continue
			}
			a.mu.Lock()
			a.at, a.n = append(a.at, time.Now()), append(a.n, n)
			a.mu.Unlock()
		}
	}()
	return a
}

func (a *arrivals) end() { close(a.stop); <-a.done }

// reached is when the wait list first held n jobs or more, zero if never.
func (a *arrivals) reached(n int64) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, c := range a.n {
		if c >= n {
			return a.at[i]
		}
	}
	return time.Time{}
}

// last is when the wait list last grew, and to how many.
func (a *arrivals) last() (time.Time, int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var at time.Time
	var n int64 = -1
	for i, c := range a.n {
		if c > n {
			at, n = a.at[i], c
		}
	}
	return at, n
}

// waitList is q's wait list, front first.
func waitList(t testing.TB, q *Queue) []string {
	t.Helper()
	ids, err := q.rdb.LRange(context.Background(), q.keys.wait, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// A redrive of 2,000 failed jobs at 500/s sends them oldest failure
// first, at the rate (within 5%, measured by when they arrived on the
// wait list, the machine's stalls allowed for), each with its record of
// the redrive.
func TestRedriveRate(t *testing.T) {
	rdb := testenv.Redis(t)
	q := newQueue(t, rdb, testenv.Prefix(t, rdb), "redrive-rate", WithFailedRetention(time.Hour, 1_000_000))
	const n, rate = 2000, 500.0
	ids := seedFailed(t, q, n, "dial tcp 10.0.0.1:443: i/o timeout")
	ctx := context.Background()
	r, err := q.StartRedrive(ctx, RedriveOptions{Filter: Filter{Error: "timeout"}, Rate: rate})
	if err != nil {
		t.Fatal(err)
	}
	wit := stall.Watch(t, func() { rdb.Ping(ctx) })
	a := watchArrivals(q)
	st, err := r.Run(ctx)
	a.end()
	if err != nil || st.State != RedriveDone || st.Sent != n || st.Total != n || st.Left != 0 {
		t.Fatalf("Run = %+v, %v; want done, %d sent", st, err, n)
	}
	got := waitList(t, q)
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("the wait list is not the jobs oldest failure first: %d jobs, first %v", len(got), got[:min(5, len(got))])
	}
	// The rate between the 100th and the 1,900th arrival.
	t1, t2 := a.reached(100), a.reached(n-100)
	took := t2.Sub(t1)
	want := time.Duration(float64(n-200) / rate * float64(time.Second))
	measured := float64(n-200) / took.Seconds()
	t.Logf("%d jobs at %.0f/s: measured %.1f/s (%s for %d), witness lag %s", n, rate, measured, took.Round(time.Millisecond), n-200, wit.Lag(t1, t2))
	if took < want*95/100 || took > want*105/100+wit.Lag(t1, t2) {
		t.Errorf("jobs 100..%d arrived in %s, want %s within 5%% (%.1f/s for %.0f/s)", n-100, took, want, measured, rate)
	}
	j, err := q.Job(ctx, ids[7])
	if err != nil {
		t.Fatal(err)
	}
	if j.State != StateWaiting || j.Metadata[RedriveIDKey] != st.ID || j.Metadata[RedriveFilterKey] != `failed, error holds "timeout"` || j.Metadata[RedrivenAtKey] == "" || j.FinishedAt != (time.Time{}) {
		t.Errorf("a redriven job: %+v", j)
	}
}

// A breaker that opens mid-way stops the redrive within a second (it
// asks before every step), the status says why it holds, and once the
// breaker closes it goes on to the end.
func TestRedriveHoldsWhileTheBreakerIsOpen(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		q := newQueue(t, rdb, prefix, "redrive-breaker", WithFailedRetention(time.Hour, 1_000_000))
		const n = 1000
		seedFailed(t, q, n, "payments: 503")
		ctx := context.Background()
		store := &switchStore{}
		r, err := q.StartRedrive(ctx, RedriveOptions{Rate: 500, Dependency: "payments", Breaker: store})
		if err != nil {
			t.Fatal(err)
		}
		wit := stall.Watch(t)
		a := watchArrivals(q)
		defer a.end()
		type result struct {
			st  RedriveStatus
			err error
		}
		ran := make(chan result, 1)
		go func() {
			st, err := r.Run(ctx)
			ran <- result{st, err}
		}()
		for a.reached(300).IsZero() {
			time.Sleep(5 * time.Millisecond)
		}
		store.open.Store(true)
		opened := time.Now()
		time.Sleep(1500 * time.Millisecond)
		lastAt, lastN := a.last()
		if stop := lastAt.Sub(opened); stop > time.Second+wit.Lag(opened, lastAt) {
			t.Errorf("jobs arrived %s after the breaker opened, want it stopped within a second", stop)
		}
		t.Logf("the last job arrived %s after the breaker opened (%d sent by then)", lastAt.Sub(opened).Round(time.Millisecond), lastN)
		st, _, err := q.RedriveStatus(ctx)
		if err != nil || st.State != RedriveRunning || st.Held == "" || st.Sent != lastN || !st.Live {
			t.Errorf("status while held: %+v, %v; want running, held, %d sent", st, err, lastN)
		}
		store.open.Store(false)
		res := <-ran
		if res.err != nil || res.st.State != RedriveDone || res.st.Sent != n {
			t.Fatalf("Run = %+v, %v; want done, all %d sent", res.st, res.err, n)
		}
	})
}

// A driver stalled for 300ms (its Progress callback sleeps, on Run's
// goroutine) does not send the jobs it missed in a burst after: in the
// 100ms after the stall at most 100ms of jobs and the 20ms of debt it
// catches up arrive (at 500/s, 50 + 11), not the 150 it fell behind.
func TestRedriveNoBurstAfterAStall(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		q := newQueue(t, rdb, prefix, "redrive-stall")
		seedFailed(t, q, 1000, "boom")
		ctx := context.Background()
		var resumed time.Time
		r, err := q.StartRedrive(ctx, RedriveOptions{Rate: 500, Progress: func(st RedriveStatus) {
			if st.Sent >= 200 && resumed.IsZero() {
				time.Sleep(300 * time.Millisecond)
				resumed = time.Now()
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		a := watchArrivals(q)
		st, err := r.Run(ctx)
		a.end()
		if err != nil || st.Sent != 1000 {
			t.Fatalf("Run = %+v, %v", st, err)
		}
		burst := a.count(resumed.Add(100*time.Millisecond)) - a.count(resumed)
		t.Logf("%d jobs arrived in the 100ms after a 300ms stall", burst)
		if burst > 50+11+5 {
			t.Errorf("%d jobs arrived in the 100ms after a 300ms stall, want at most about 61: no burst of the 150 missed", burst)
		}
	})
}

// On a three-master Cluster the redrive's hash lives in the queue's slot:
// a redrive runs there to its end.
func TestRedriveCluster(t *testing.T) {
	cc := testenv.Cluster(t)
	q := newQueue(t, cc, fmt.Sprintf("rbt-redrive-%d", time.Now().UnixNano()), "redrive-cluster")
	t.Cleanup(func() {
		_ = cc.Del(context.Background(), q.keys.jobs, q.keys.failed, q.keys.wait, q.keys.redrive, q.keys.marker).Err()
	})
	ids := seedFailed(t, q, 300, "boom")
	ctx := context.Background()
	r, err := q.StartRedrive(ctx, RedriveOptions{Rate: 2000})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.Run(ctx)
	if err != nil || st.State != RedriveDone || st.Sent != 300 {
		t.Fatalf("Run = %+v, %v", st, err)
	}
	if got := waitList(t, q); fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("the wait list holds %d jobs, want all 300 in order", len(got))
	}
}

// A sharded queue has no redrive yet: every redrive method says so.
func TestRedriveShardedRefused(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	q, err := NewShardedQueue(ctx, rdb, "redrive-sharded", 2)
	if err != nil {
		t.Fatal(err)
	}
	_, err1 := q.StartRedrive(ctx, RedriveOptions{Rate: 10})
	_, err2 := q.ResumeRedrive(ctx, ResumeOptions{})
	_, _, err3 := q.RedriveStatus(ctx)
	for i, err := range []error{err1, err2, err3, q.PauseRedrive(ctx), q.CancelRedrive(ctx)} {
		if !errors.Is(err, ErrRedriveSharded) {
			t.Errorf("call %d on a sharded queue = %v, want ErrRedriveSharded", i, err)
		}
	}
}

// One redrive per queue: a second start is refused while the first has
// not ended, and a resume from another process leaves a live driver be.
func TestRedriveOnePerQueue(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		q := newQueue(t, rdb, prefix, "redrive-one")
		other := newQueue(t, rdb, prefix, "redrive-one")
		seedFailed(t, q, 50, "boom")
		ctx := context.Background()
		if _, err := q.StartRedrive(ctx, RedriveOptions{Rate: 10}); err != nil {
			t.Fatal(err)
		}
		if _, err := other.StartRedrive(ctx, RedriveOptions{Rate: 100}); !errors.Is(err, ErrRedriveRunning) {
			t.Errorf("a second StartRedrive = %v, want ErrRedriveRunning", err)
		}
		if r, err := other.ResumeRedrive(ctx, ResumeOptions{}); r != nil || err != nil {
			t.Errorf("ResumeRedrive under a live lease = %v, %v; want nil, nil", r, err)
		}
		// Bad options are refused before anything is read.
		for _, o := range []RedriveOptions{{Rate: 0}, {Rate: MaxRedriveRate + 1}, {Rate: 1, Dependency: "x"}, {Rate: 1, Filter: Filter{State: StateWaiting}}} {
			if _, err := q.StartRedrive(ctx, o); err == nil || errors.Is(err, ErrRedriveRunning) {
				t.Errorf("StartRedrive(%+v) = %v, want the option refused", o, err)
			}
		}
		if err := q.CancelRedrive(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := other.StartRedrive(ctx, RedriveOptions{Rate: 100}); err != nil {
			t.Errorf("StartRedrive after the cancel = %v, want started", err)
		}
	})
}

// Pause stops the sending (from the next step), resume goes on, cancel
// ends it with the rest left failed.
func TestRedrivePauseResumeCancel(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		q := newQueue(t, rdb, prefix, "redrive-pause")
		seedFailed(t, q, 1000, "boom")
		ctx := context.Background()
		r, err := q.StartRedrive(ctx, RedriveOptions{Rate: 400})
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan RedriveStatus, 1)
		go func() {
			st, err := r.Run(ctx)
			if err != nil {
				t.Error(err)
			}
			ran <- st
		}()
		sent := func() int64 {
			st, _, err := q.RedriveStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return st.Sent
		}
		for sent() < 100 {
			time.Sleep(5 * time.Millisecond)
		}
		if err := q.PauseRedrive(ctx); err != nil {
			t.Fatal(err)
		}
		paused := sent()
		time.Sleep(300 * time.Millisecond)
		st, _, _ := q.RedriveStatus(ctx)
		if st.State != RedrivePaused || st.Sent != paused || int64(len(waitList(t, q))) != paused {
			t.Errorf("paused: %+v, want %d sent and no more", st, paused)
		}
		if r, err := q.ResumeRedrive(ctx, ResumeOptions{}); r != nil || err != nil {
			t.Fatalf("ResumeRedrive = %v, %v; want the live driver to go on", r, err)
		}
		for sent() < paused+100 {
			time.Sleep(5 * time.Millisecond)
		}
		if err := q.CancelRedrive(ctx); err != nil {
			t.Fatal(err)
		}
		end := <-ran
		c, _ := q.Counts(ctx)
		if end.State != RedriveCancelled || end.Sent >= 1000 || c.Waiting != end.Sent || c.Failed != 1000-end.Sent {
			t.Errorf("cancelled: %+v, counts %+v", end, c)
		}
		if err := q.PauseRedrive(ctx); !errors.Is(err, ErrNoRedrive) {
			t.Errorf("PauseRedrive after the cancel = %v, want ErrNoRedrive", err)
		}
	})
}

// redriveChildEnv names the prefix a re-executed test binary drives a
// redrive under, until it is killed.
const redriveChildEnv = "REBOUND_REDRIVE_CHILD_PREFIX"

// The child of TestRedriveKilledThenResumed: it starts the redrive and
// drives it until the parent kills it.
func TestRedriveChild(t *testing.T) {
	prefix := os.Getenv(redriveChildEnv)
	if prefix == "" {
		t.Skip("run by TestRedriveKilledThenResumed")
	}
	rdb := testenv.Redis(t)
	q, err := NewQueue(rdb, "redrive-kill", WithPrefix(prefix), WithFailedRetention(time.Hour, 1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	r, err := q.StartRedrive(context.Background(), RedriveOptions{Rate: 1000, Lease: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(context.Background())
	t.Fatalf("the child's redrive ended before it was killed: %v", err)
}

// A redriving process killed (SIGKILL) mid-way, then the redrive resumed
// by another: every job is sent exactly once, none lost, in order.
func TestRedriveKilledThenResumed(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	q := newQueue(t, rdb, prefix, "redrive-kill", WithFailedRetention(time.Hour, 1_000_000))
	const n = 3000
	ids := seedFailed(t, q, n, "boom")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestRedriveChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), redriveChildEnv+"="+prefix)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); ; {
		st, ok, err := q.RedriveStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ok && st.Sent >= 1000 {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the child sent %d jobs in 30s", st.Sent)
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed, _, _ := q.RedriveStatus(ctx)
	// Its lease still runs: a resume waits for it to end.
	var r *Redrive
	for deadline := time.Now().Add(10 * time.Second); r == nil; {
		if r, err = q.ResumeRedrive(ctx, ResumeOptions{}); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed child's lease never ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, err := r.Run(ctx)
	if err != nil || st.State != RedriveDone || st.Sent != n || st.Skipped != 0 {
		t.Fatalf("resumed Run = %+v, %v; want done, %d sent", st, err, n)
	}
	got := waitList(t, q)
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("job %s is on the wait list %d times, want once", id, seen[id])
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("the wait list is not in order of failure")
	}
	t.Logf("killed after %s jobs sent; resumed and sent the rest", strconv.FormatInt(killed.Sent, 10))
}

// count is how many jobs the wait list held at t, as last sampled.
func (a *arrivals) count(t time.Time) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var n int64
	for i, at := range a.at {
		if at.After(t) {
			break
		}
		n = a.n[i]
	}
	return n
}

// The measurement of docs/native.md (not in CI): REBOUND_REDRIVE_SCALE
// failed jobs (100000) redriven at 500/s, the rate of each second, and
// how long after a real breaker (breaker/redisstore) tripped mid-way the
// last job arrived.
func TestRedriveScale(t *testing.T) {
	n := 0
	if _, err := fmt.Sscan(os.Getenv("REBOUND_REDRIVE_SCALE"), &n); err != nil || n <= 0 {
		t.Skip("set REBOUND_REDRIVE_SCALE=100000 to measure a redrive of that many failed jobs")
	}
	const rate = 500.0
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "redrive-scale", WithFailedRetention(7*24*time.Hour, 10_000_000))
	t.Cleanup(func() {
		iter := rdb.Scan(context.Background(), 0, prefix+"*", 1000).Iterator()
		for iter.Next(context.Background()) {
			rdb.Unlink(context.Background(), iter.Val())
		}
	})
	seedFailed(t, q, n, "payments: 503 Service Unavailable")
	brk := breaker.Must(breaker.New(breaker.Config{Failures: 3, Cooldown: backoff.Must(backoff.Fixed(3 * time.Second))}))
	store := redisstore.New(rdb, breaker.Rules{Named: map[string]breaker.Breaker{"payments": brk}}, redisstore.Options{Prefix: prefix + ":brk"})
	started := time.Now()
	r, err := q.StartRedrive(ctx, RedriveOptions{Rate: rate, Dependency: "payments", Breaker: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("StartRedrive over %d failed jobs returned in %s", n, time.Since(started).Round(time.Millisecond))
	wit := stall.Watch(t, func() { rdb.Ping(ctx) })
	a := watchArrivals(q)
	ran := make(chan error, 1)
	var end RedriveStatus
	go func() {
		var err error
		end, err = r.Run(ctx)
		ran <- err
	}()
	for a.reached(1).IsZero() {
		time.Sleep(time.Millisecond)
	}
	begin := a.reached(1) // after Run counted the jobs
	t.Logf("the first job arrived %s after the start (Run counts the jobs first)", begin.Sub(started).Round(time.Millisecond))
	for a.reached(int64(n / 2)).IsZero() {
		time.Sleep(5 * time.Millisecond)
	}
	var tripped time.Time
	for tripped.IsZero() {
		v, err := store.Allow(ctx, "payments", breaker.Job{})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := store.Record(ctx, "payments", v.Ticket, breaker.Failure)
		if err != nil {
			t.Fatal(err)
		}
		if tr.To == breaker.Open {
			tripped = time.Now()
		}
	}
	atTrip := a.count(tripped)
	time.Sleep(2 * time.Second)
	lastAt, lastN := a.last()
	t.Logf("breaker tripped with %d sent; the last job arrived %s after (%d sent), witness lag %s", atTrip, lastAt.Sub(tripped).Round(time.Millisecond), lastN, wit.Lag(tripped, lastAt))
	if err := <-ran; err != nil || end.Sent != int64(n) {
		t.Fatalf("Run = %+v, %v", end, err)
	}
	a.end()
	finish, _ := a.last()
	// The rate of each whole second but those the hold touched.
	// Too many in a window is wrong whatever the load; too few is
	// allowed for by what the witness saw the machine stall in it.
	lo, hi, windows, outside := 1e9, 0.0, 0, 0
	for s := begin.Add(time.Second); s.Add(time.Second).Before(finish); s = s.Add(time.Second) {
		if s.Add(time.Second).After(tripped.Add(-time.Second)) && s.Before(tripped.Add(5*time.Second)) {
			continue
		}
		got := float64(a.count(s.Add(time.Second)) - a.count(s))
		lo, hi, windows = min(lo, got), max(hi, got), windows+1
		lag := wit.Lag(s, s.Add(time.Second))
		if got > rate*1.05 || got < rate*0.95-rate*lag.Seconds() {
			outside++
			t.Errorf("the window at %s sent %.0f jobs, want %.0f within 5%% (witness lag %s)", s.Sub(begin).Round(time.Second), got, rate, lag)
		} else if got < rate*0.95 {
			t.Logf("the window at %s sent %.0f jobs: the machine stalled %s in it", s.Sub(begin).Round(time.Second), got, lag)
		}
	}
	t.Logf("%d jobs at %.0f/s in %s: per 1s window (%d windows) %.0f..%.0f jobs, %d outside 5%% unexplained, witness max lag %s", n, rate, finish.Sub(begin).Round(time.Millisecond), windows, lo, hi, outside, wit.Max())
}

// Hostile rates: NaN, the infinities and negatives are refused; a rate so
// small that one job's interval is past the largest Duration (1e-300/s)
// sends nothing, rather than taking the overflowed interval for none.
func TestRedriveHostileRates(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "redrive-hostile", WithFailedRetention(time.Hour, 1000))
		seedFailed(t, q, 3, "boom")
		for _, rate := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, -math.SmallestNonzeroFloat64, math.MaxFloat64} {
			if _, err := q.StartRedrive(ctx, RedriveOptions{Rate: rate}); err == nil {
				t.Errorf("StartRedrive(Rate %v) = nil error, want the rate refused", rate)
			}
		}
		r, err := q.StartRedrive(ctx, RedriveOptions{Rate: 1e-300})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		st, _ := r.Run(rctx)
		if st.Sent != 0 {
			t.Errorf("a redrive at 1e-300 jobs/s sent %d jobs in 500ms, want none", st.Sent)
		}
		if c, err := q.Counts(ctx); err != nil || c.Failed != 3 {
			t.Errorf("Counts = %+v, %v; want the 3 jobs still failed", c, err)
		}
	})
}
