// Package nativetest runs a native queue and its worker inside a test, on
// an in-process Redis (miniredis) whose clock the test sets, so that the
// test can follow a job attempt by attempt, and assert "attempt 2 failed,
// and the job runs again at t", without sleeping and without a Redis
// server:
//
// The guide to testing, with an example of each kit: https://github.com/rebound-go/rebound/blob/main/docs/testing.md
//
//	w := nativetest.NewWorker(t, rule, handler)
//	id := w.Enqueue(payload)
//	ev := w.Next(id)          // attempt 1 has ended
//	// ev.Result: the error, the rule's decision, the fire time
//	w.AdvanceTo(ev.Result.FireAt)
//	ev = w.Next(id)           // attempt 2 has ended
//
// Jobs run through the real worker: native.NewWorker with the given rule,
// handler and options, reserving, running, deciding and storing each
// attempt through the queue's own scripts. Only the clock is the test's:
// fire times, leases and the inspector's times are read from it, and it
// moves only when the test moves it. Attempts are reported to a
// [reboundtest.Recorder].
package nativetest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// Epoch is the time a Worker's clock starts at: 2030-01-01T00:00:00Z.
func Epoch() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }

// DefaultTimeout is how long [Worker.Next] waits for an attempt to end
// unless Worker.Timeout says otherwise.
const DefaultTimeout = 10 * time.Second

// Worker is a native queue and a running native.Worker on an in-process
// Redis with a clock of the test's. Build it with [NewWorker]; it stops
// when the test ends (or at [Worker.Close]). Its methods fail the test
// when something goes wrong; they are not for use after Close.
type Worker struct {
	// Queue is the worker's queue: enqueue on it and inspect it as on any
	// native.Queue (the [Worker.Enqueue] and [Worker.Job] shorthands fail
	// the test on error).
	Queue *native.Queue
	// Recorder holds every attempt the worker reported and every job it
	// gave up: it is the worker's observer and give-up hook.
	Recorder *reboundtest.Recorder
	// Timeout is how long Next waits for an attempt; DefaultTimeout when
	// zero.
	Timeout time.Duration

	t      testing.TB
	srv    *miniredis.Miniredis
	rdb    *redis.Client
	worker *native.Worker
	ended  chan struct{} // a token per report, for Next to look again

	mu     sync.Mutex
	now    time.Time
	seen   map[string]int // attempts of each job Next has returned
	closed bool
}

// NewWorker starts a worker that runs the jobs of a queue named "test"
// with h under rule, as native.NewWorker(queue, rule, h, opts...) does,
// on a fresh in-process Redis whose clock stands at [Epoch]. Its observer
// and give-up hook are the Worker's Recorder (an option that sets either
// is overridden); its error handler logs to t unless opts set another.
func NewWorker(t testing.TB, rule backoff.Rule, h native.Handler, opts ...native.WorkerOption) *Worker {
	t.Helper()
	w := &Worker{t: t, srv: miniredis.NewMiniRedis(), ended: make(chan struct{}, 1),
		now: Epoch(), seen: map[string]int{}}
	w.Recorder = &reboundtest.Recorder{Now: w.Now}
	w.srv.SetTime(w.now)
	w.rdb = redis.NewClient(&redis.Options{
		Addr:   "nativetest", // never dialled: the Dialer connects in-process
		Dialer: func(context.Context, string, string) (net.Conn, error) { return w.srv.Dial() },
		// miniredis sends no maintenance notifications, and the goroutines
		// that wait for them outlive Close (which a testing/synctest bubble
		// does not allow).
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	q, err := native.NewQueue(w.rdb, "test")
	if err != nil {
		w.stopRedis()
		t.Fatalf("nativetest: %v", err)
	}
	w.Queue = q
	opts = append([]native.WorkerOption{native.WithErrorHandler(func(err error) { t.Logf("nativetest: worker: %v", err) })}, opts...)
	opts = append(opts, native.WithObserver(signal{w}), native.WithGiveUp(signal{w}.GiveUp))
	nw, err := native.NewWorker(q, rule, h, opts...)
	if err != nil {
		w.stopRedis()
		t.Fatalf("nativetest: %v", err)
	}
	if err := nw.Start(); err != nil {
		w.stopRedis()
		t.Fatalf("nativetest: %v", err)
	}
	w.worker = nw
	t.Cleanup(w.Close)
	return w
}

// Now returns the worker's clock: where the test last set it.
func (w *Worker) Now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

// AdvanceTo sets the clock to at (never back) and has the worker run the
// jobs due by then: it moves them to the due list, waking the worker,
// and returns at once. [Worker.Next] waits for their attempts.
func (w *Worker) AdvanceTo(at time.Time) {
	w.t.Helper()
	w.mu.Lock()
	if at.After(w.now) {
		w.now = at
	}
	w.srv.SetTime(w.now)
	w.mu.Unlock()
	for {
		n, err := w.Queue.Promote(context.Background())
		if err != nil {
			w.t.Fatalf("nativetest: %v", err)
		}
		if n < 1000 {
			return
		}
	}
}

// Advance moves the clock d ahead, as AdvanceTo(Now().Add(d)).
func (w *Worker) Advance(d time.Duration) {
	w.t.Helper()
	w.AdvanceTo(w.Now().Add(d))
}

// Enqueue adds a job to the queue and returns its ID; an error fails the
// test.
func (w *Worker) Enqueue(payload []byte, opts ...native.EnqueueOption) string {
	w.t.Helper()
	id, err := w.Queue.Enqueue(context.Background(), payload, opts...)
	if err != nil {
		w.t.Fatalf("nativetest: %v", err)
	}
	return id
}

// Job returns the stored state of job id; an error fails the test.
func (w *Worker) Job(id string) native.StoredJob {
	w.t.Helper()
	j, err := w.Queue.Job(context.Background(), id)
	if err != nil {
		w.t.Fatalf("nativetest: %v", err)
	}
	return j
}

// Next waits for the next attempt of job id to end (the first on the first
// call, then the one after the attempt the last call returned) and returns
// it as the Recorder has it: the attempt, and its Result (the error, the
// decision, the fire time of the next run). By then the job's outcome is
// stored, and a job given up is in the Recorder's GiveUps. A job that does
// not run fails the test after Timeout, with what the queue holds of it:
// a job waiting for its fire time runs only once the clock reaches it
// ([Worker.AdvanceTo]).
func (w *Worker) Next(id string) reboundtest.Event {
	w.t.Helper()
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	w.mu.Lock()
	n := w.seen[id]
	w.mu.Unlock()
	for {
		if ev, ok := w.ended1(id, n); ok {
			w.mu.Lock()
			w.seen[id] = n + 1
			w.mu.Unlock()
			return ev
		}
		select {
		case <-w.ended:
		case <-timer.C:
			w.t.Fatalf("nativetest: attempt %d of job %s did not end within %s (clock at %s); the queue holds %s; the attempts so far:\n%s",
				n+1, id, timeout, w.Now().Format(time.RFC3339Nano), w.describe(id), w.Recorder.Story(id))
			return reboundtest.Event{}
		}
	}
}

// ended1 returns the n-th (0-based) attempt of job id once it has ended
// and, when the job was given up then, the give-up is recorded too.
func (w *Worker) ended1(id string, n int) (reboundtest.Event, bool) {
	evs := w.Recorder.Job(id)
	if n >= len(evs) || !evs[n].Ended {
		return reboundtest.Event{}, false
	}
	ev := evs[n]
	if ev.Result.GaveUp() {
		for _, g := range w.Recorder.GiveUps() {
			if g.Attempt.JobID == id && g.Attempt.Number == ev.Attempt.Number {
				return ev, true
			}
		}
		return reboundtest.Event{}, false
	}
	return ev, true
}

// describe says where job id is, for a failure message.
func (w *Worker) describe(id string) string {
	j, err := w.Queue.Job(context.Background(), id)
	switch {
	case err != nil:
		return err.Error()
	case j.State == native.StateDelayed:
		return fmt.Sprintf("it %v, due at %s", j.State, j.NextFireAt.Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("it %v after %d attempts", j.State, j.Attempts)
}

// Close stops the worker, letting running handlers finish for up to 10
// seconds, and the in-process Redis. NewWorker has the test call it when
// it ends; calling it again does nothing.
func (w *Worker) Close() {
	w.mu.Lock()
	closed := w.closed
	w.closed = true
	w.mu.Unlock()
	if closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.worker.Shutdown(ctx); err != nil {
		w.t.Errorf("nativetest: shutdown: %v", err)
	}
	w.stopRedis()
}

func (w *Worker) stopRedis() {
	_ = w.rdb.Close()
	w.srv.Close()
}

// signal hands every report to the Recorder, then lets Next look again.
type signal struct{ w *Worker }

func (s signal) AttemptStarted(ctx context.Context, a observe.Attempt) context.Context {
	return s.w.Recorder.AttemptStarted(ctx, a)
}

func (s signal) AttemptEnded(ctx context.Context, a observe.Attempt, r observe.Result) {
	s.w.Recorder.AttemptEnded(ctx, a, r)
	s.poke()
}

func (s signal) GiveUp(ctx context.Context, g observe.GiveUp) {
	s.w.Recorder.GiveUp(ctx, g)
	s.poke()
}

func (s signal) poke() {
	select {
	case s.w.ended <- struct{}{}:
	default:
	}
}
