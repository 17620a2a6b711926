package native

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
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
func (hugePolicy) Max() time.Duration                      { return math.MaxInt64 }
func (hugePolicy) String() string                          { return "huge" }

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
				if gap := secondStart.Sub(ends[0]); gap < 30*time.Millisecond || gap > 300*time.Millisecond {
					t.Errorf("the other job's 30ms retry ran %s after its failure, want 30ms to 300ms", gap)
				}
			})
		}
	})
}

// waitEnded waits until the recorder has seen n ended attempts of job id.
func waitEnded(t *testing.T, rec *reboundtest.Recorder, id string, n int) []reboundtest.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		evs := rec.Job(id)
		ended := 0
		for _, e := range evs {
			if e.Ended {
				ended++
			}
		}
		if ended >= n {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: %d attempts ended, want %d; story:\n%s", id, ended, n, rec.Story(id))
		}
		time.Sleep(2 * time.Millisecond)
	}
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
func (panicPolicy) String() string     { return "panicky" }

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

// textBomb is an error whose Error method panics.
type textBomb struct{}

func (textBomb) Error() string { panic("no text for you") }

// typedNil is an error type whose nil pointer a handler may return by
// mistake (var e *typedNil; return e): a non-nil error holding nil.
type typedNil struct{ msg string }

func (e *typedNil) Error() string { return e.msg }

// An error whose Error method panics, a typed-nil error and a 1MB message
// each fail one attempt like any error: the worker lives and the stored
// message is readable, cut to MaxErrorBytes.
func TestHostileHandlerErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "hostileerr")
		rec := &reboundtest.Recorder{}
		huge := strings.Repeat("é", 1<<19) // 1MB of two-byte runes
		startWorker(t, q, fixedRule(t, time.Millisecond, 1), func(ctx context.Context, j *Job) error {
			switch j.ID {
			case "panics":
				return textBomb{}
			case "typed-nil":
				var e *typedNil
				return e
			case "huge":
				return errors.New(huge)
			}
			return errors.New("plain \xff bytes")
		}, WithObserver(rec))
		for _, c := range []struct{ id, want string }{
			{"panics", "native.textBomb (its Error method panicked: no text for you)"},
			{"typed-nil", "(*native.typedNil)(nil)"},
			{"huge", ""},
			{"plain", "plain \uFFFD bytes"},
		} {
			if _, err := q.Enqueue(ctx, nil, WithID(c.id)); err != nil {
				t.Fatal(err)
			}
			info := waitState(t, q, c.id, StateFailed, 5*time.Second)
			if info.Attempts != 1 {
				t.Errorf("job %s took %d attempts, want 1", c.id, info.Attempts)
			}
			if !utf8.ValidString(info.LastError) || len(info.LastError) > MaxErrorBytes {
				t.Errorf("job %s: stored error of %d bytes (valid UTF-8: %v), want at most %d of valid UTF-8",
					c.id, len(info.LastError), utf8.ValidString(info.LastError), MaxErrorBytes)
			}
			if c.want != "" && info.LastError != c.want {
				t.Errorf("job %s: stored error %q, want %q", c.id, info.LastError, c.want)
			}
			if c.id == "huge" && (!strings.HasPrefix(info.LastError, "éé") || !strings.HasSuffix(info.LastError, "bytes truncated]")) {
				t.Errorf("job huge: stored error %q...%q, want the message's start and a truncation note", info.LastError[:10], info.LastError[len(info.LastError)-30:])
			}
			evs := waitEnded(t, rec, c.id, 1)
			if r := evs[0].Result; r.Err == nil || r.Decision.Outcome != backoff.OutcomeExhausted {
				t.Errorf("job %s: observer told %+v, want a failed, exhausted attempt", c.id, r)
			}
		}
	})
}

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

// forceReclaim makes the lease of running job id expire and reclaims it
// with w, retrying while the job's own worker renews the lease in between.
func forceReclaim(t *testing.T, rdb redis.UniversalClient, q *Queue, w *Worker, id string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := rdb.ZAddXX(ctx, q.keys.active, redis.Z{Score: 0, Member: id}).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.reclaimOnce(ctx, 10); err != nil {
			t.Fatal(err)
		}
		if info, err := q.Job(ctx, id); err == nil && info.State != StateActive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s was never reclaimed", id)
		}
	}
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

// Metadata is stored byte for byte, keys included, also when it is not
// valid UTF-8: from Enqueue to the handler, from one attempt to the next,
// and to the inspector.
func TestMetadataIsStoredFaithfully(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "meta")
		in := map[string]string{"k\xff": "v\xfe", "ok": "plain", "": "", "quote\"{": "1:2,3|"}
		var mu sync.Mutex
		var seen []map[string]string
		startWorker(t, q, fixedRule(t, time.Millisecond, 3), func(ctx context.Context, j *Job) error {
			mu.Lock()
			seen = append(seen, maps.Clone(map[string]string(j.Metadata)))
			mu.Unlock()
			if j.Attempt == 1 {
				j.Metadata.Set("set\xfd", "\xfc by the handler")
				return errors.New("again")
			}
			return nil
		})
		if _, err := q.Enqueue(ctx, nil, WithID("m"), WithMetadata(in)); err != nil {
			t.Fatal(err)
		}
		info := waitState(t, q, "m", StateCompleted, 5*time.Second)
		want := maps.Clone(in)
		want["set\xfd"] = "\xfc by the handler"
		if !maps.Equal(info.Metadata, want) {
			t.Errorf("stored metadata %q, want %q", info.Metadata, want)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 2 || !maps.Equal(seen[0], in) || !maps.Equal(seen[1], want) {
			t.Errorf("handler saw %q, want %q then %q", seen, in, want)
		}
	})
}

func TestMetadataPacking(t *testing.T) {
	for _, m := range []map[string]string{{}, {"a": "b"}, {"": ""}, {"k\xff": "v\x00:", "12:": "3:x"}} {
		s := encodeMeta(m)
		if got := decodeMeta(s); !maps.Equal(got, m) {
			t.Errorf("decodeMeta(encodeMeta(%q)) = %q via %q", m, got, s)
		}
		if s != encodeMeta(maps.Clone(m)) {
			t.Errorf("encodeMeta(%q) is not deterministic", m)
		}
	}
	// Records written before metadata was packed hold JSON.
	if got := decodeMeta(`{"traceparent":"00-ab","k":"v"}`); !maps.Equal(got, map[string]string{"traceparent": "00-ab", "k": "v"}) {
		t.Errorf("JSON metadata decoded to %q", got)
	}
	// A malformed pair ends the map; it never panics.
	if got := decodeMeta("1:a1:b9:c"); !maps.Equal(got, map[string]string{"a": "b"}) {
		t.Errorf("malformed metadata decoded to %q, want the pairs before the bad one", got)
	}
	if got := decodeMeta(""); got == nil || len(got) != 0 {
		t.Errorf("empty metadata decoded to %#v, want an empty, non-nil map", got)
	}
}

// A typed-nil client (a nil *redis.Client in the interface) is refused like
// a nil one, not accepted to panic at the first Enqueue.
func TestNewQueueRefusesTypedNilClient(t *testing.T) {
	var c *redis.Client
	var cc *redis.ClusterClient
	for _, rdb := range []redis.UniversalClient{c, cc} {
		q, err := NewQueue(rdb, "q")
		if err == nil || !strings.Contains(err.Error(), "redis client is nil") {
			t.Errorf("NewQueue(%T(nil)) = %v, %v; want an error saying the client is nil", rdb, q, err)
		}
	}
}

// WithTimeout gives each attempt a deadline: a handler still running at it
// has failed that attempt (ErrTimeout, decided by the rule like any
// failure), whether it honours its context or ignores it, and a handler
// that ignores it does not hold the worker up: its slot is freed at the
// deadline and whatever it returns later is not stored.
func TestTimeout(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "timeout")
		rec := &reboundtest.Recorder{}
		var mu sync.Mutex
		runs := map[string][]time.Time{}
		ignored := make(chan struct{})
		startWorker(t, q, fixedRule(t, 20*time.Millisecond, 3), func(ctx context.Context, j *Job) error {
			mu.Lock()
			runs[j.ID] = append(runs[j.ID], time.Now())
			mu.Unlock()
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("job %s attempt %d: context has no deadline", j.ID, j.Attempt)
			}
			if j.Attempt > 1 || j.ID == "other" {
				return nil
			}
			switch j.ID {
			case "honours":
				<-ctx.Done()
				if !errors.Is(context.Cause(ctx), ErrTimeout) {
					t.Errorf("cause %v, want ErrTimeout", context.Cause(ctx))
				}
				return ctx.Err()
			case "ignores":
				time.Sleep(600 * time.Millisecond)
				j.Metadata.Set("late", "write")
				close(ignored)
			}
			return nil // too late: the attempt failed at its deadline
		}, WithObserver(rec), WithConcurrency(1), WithTimeout(150*time.Millisecond))
		for _, id := range []string{"honours", "ignores", "other"} {
			if _, err := q.Enqueue(ctx, nil, WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"honours", "ignores", "other"} {
			info := waitState(t, q, id, StateCompleted, 10*time.Second)
			want := "1 retry 20ms\n2 success"
			if id == "other" {
				want = "1 success"
			} else if !strings.Contains(info.LastError, "timeout") {
				t.Errorf("job %s: stored error %q, want the timeout", id, info.LastError)
			}
			waitEnded(t, rec, id, strings.Count(want, "\n")+1)
			if got := rec.Story(id); got != want {
				t.Errorf("job %s:\n%s\nwant\n%s", id, got, want)
			}
			if ev := rec.Job(id)[0]; id != "other" && !errors.Is(ev.Result.Err, ErrTimeout) {
				t.Errorf("job %s: attempt 1 ended with %v, want ErrTimeout", id, ev.Result.Err)
			}
		}
		// With one handler slot, the job after the one that ignored its
		// deadline ran before that handler returned.
		mu.Lock()
		otherStart, ignoredStart := runs["other"][0], runs["ignores"][0]
		mu.Unlock()
		if otherStart.Sub(ignoredStart) > 450*time.Millisecond {
			t.Errorf("the next job started %s after the handler that ignored its 150ms deadline, want the slot freed at the deadline", otherStart.Sub(ignoredStart))
		}
		<-ignored
		time.Sleep(50 * time.Millisecond)
		if info, _ := q.Job(ctx, "ignores"); info.Metadata["late"] != "" || info.Attempts != 2 {
			t.Errorf("after the late return: %+v; want 2 attempts and nothing of the late handler stored", info)
		}
		if p := rec.Problems(); len(p) > 0 {
			t.Errorf("recorder problems: %v", p)
		}
	})
}

func TestTimeoutOption(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	q, _ := NewQueue(rdb, "q")
	h := func(context.Context, *Job) error { return nil }
	if _, err := NewWorker(q, fixedRule(t, time.Second, 3), h, WithTimeout(-time.Second)); err == nil ||
		err.Error() != "native: WithTimeout: -1s is negative, want > 0 (or 0 for none)" {
		t.Errorf("WithTimeout(-1s): %v", err)
	}
	if _, err := NewWorker(q, fixedRule(t, time.Second, 3), h, WithTimeout(0)); err != nil {
		t.Errorf("WithTimeout(0): %v, want none", err)
	}
}

// WithGiveUp is told once of every job given up, exhausted or permanent,
// also when a reclaim exhausts it, and never of one that later succeeds.
func TestGiveUp(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "giveup")
		rec := &reboundtest.Recorder{}
		rule := fixedRule(t, 5*time.Millisecond, 3)
		stuck := make(chan struct{})
		startWorker(t, q, rule, func(ctx context.Context, j *Job) error {
			switch j.ID {
			case "poison":
				<-stuck // a worker that hangs, its job reclaimed
				return nil
			case "perm":
				return backoff.Permanent(errors.New("bad input"))
			case "late-success":
				if j.Attempt < 3 {
					return errors.New("not yet")
				}
				return nil
			}
			return errors.New("always")
		}, WithObserver(rec), WithGiveUp(rec.GiveUp))
		t.Cleanup(func() { close(stuck) }) // before the worker's shutdown
		for _, id := range []string{"perm", "late-success", "exhausted"} {
			if _, err := q.Enqueue(ctx, nil, WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		waitState(t, q, "late-success", StateCompleted, 5*time.Second)
		waitState(t, q, "perm", StateFailed, 5*time.Second)
		waitState(t, q, "exhausted", StateFailed, 5*time.Second)
		waitEnded(t, rec, "exhausted", 3)
		waitEnded(t, rec, "perm", 1)

		// A job its workers keep dying on is given up by the reclaim.
		reclaimer := idle(t, q, rule, WithLease(50*time.Millisecond), WithGiveUp(rec.GiveUp))
		if _, err := q.Enqueue(ctx, nil, WithID("poison"), WithMaxAttempts(1)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			info, _ := q.Job(ctx, "poison")
			if info.State == StateActive {
				break // taken by the running worker: make it stale
			}
			if time.Now().After(deadline) {
				t.Fatal("poison job never started")
			}
			time.Sleep(time.Millisecond)
		}
		forceReclaim(t, rdb, q, reclaimer, "poison")
		waitState(t, q, "poison", StateFailed, 5*time.Second)

		got := map[string]backoff.Outcome{}
		for _, g := range rec.GiveUps() {
			if _, dup := got[g.Attempt.JobID]; dup {
				t.Errorf("job %s given up twice", g.Attempt.JobID)
			}
			got[g.Attempt.JobID] = g.Outcome
		}
		want := map[string]backoff.Outcome{"perm": backoff.OutcomePermanent, "exhausted": backoff.OutcomeExhausted, "poison": backoff.OutcomeExhausted}
		if !maps.Equal(got, want) {
			t.Errorf("given up: %v, want %v", got, want)
		}
		for _, g := range rec.GiveUps() {
			if g.Attempt.JobID == "exhausted" && (g.Attempt.Number != 3 || g.Err == nil || g.Err.Error() != "always") {
				t.Errorf("give-up of exhausted: %+v, want attempt 3 and its error", g)
			}
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
