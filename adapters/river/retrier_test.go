package reboundriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

var (
	errBoom   = errors.New("boom")
	quietLogs = slog.New(slog.NewTextHandler(io.Discard, nil))
	// quietErrors silences the internal errors the tests provoke.
	quietErrors = WithErrorHandler(func(error) {})
	// base is a fixed clock reading, a whole second, for exact delays.
	base = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
)

func mustRule(t testing.TB, p backoff.Policy, max int) backoff.Rule {
	t.Helper()
	r, err := backoff.NewRule(p, max)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newFixed returns a Retrier on a frozen clock at base.
func newFixed(t testing.TB, rule backoff.Rule, opts ...Option) *Retrier {
	t.Helper()
	r, err := New(rule, append([]Option{quietErrors}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	r.now = func() time.Time { return base }
	return r
}

// attempt runs one attempt of job through the middleware with a worker
// returning err, and reports what River would do next: the error the
// middleware handed back and, when River would retry, the NextRetry time.
func attempt(r *Retrier, job *rivertype.JobRow, err error) (next time.Time, retried bool, returned error) {
	returned = r.Work(context.Background(), job, func(context.Context) error { return err })
	var cancel *rivertype.JobCancelError
	var snooze *rivertype.JobSnoozeError
	switch {
	case returned == nil, errors.As(returned, &cancel), errors.As(returned, &snooze):
		return time.Time{}, false, returned
	case job.Attempt >= job.MaxAttempts:
		return time.Time{}, false, returned
	}
	return r.NextRetry(job), true, returned
}

func TestNewRejectsBadInput(t *testing.T) {
	good := mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 3)
	cases := []struct {
		name string
		rule backoff.Rule
		opts []Option
		want string
	}{
		{"zero rule", backoff.Rule{}, nil, "zero backoff.Rule"},
		{"zero kind rule", good, []Option{WithKindRule("k", backoff.Rule{})}, `WithKindRule("k")`},
		{"empty kind", good, []Option{WithKindRule("", good)}, "kind is empty"},
		{"zero fallback", good, []Option{WithFallbackDelay(0)}, "WithFallbackDelay: 0s is not positive, want > 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := New(c.rule, c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New: got %v, %v; want an error containing %q", r, err, c.want)
			}
		})
	}
}

// The middleware captures the attempt's error and NextRetry schedules the
// rule's delay for it, keyed by the job ID.
func TestErrorCaptureAndKeyedDelay(t *testing.T) {
	rule := mustRule(t, backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second)))), 6)
	r := newFixed(t, rule)
	for _, id := range []int64{1, 2, 42, 1 << 40} {
		for a := 1; a < 6; a++ {
			job := &rivertype.JobRow{ID: id, Attempt: a, MaxAttempts: 25, Kind: "k"}
			next, retried, _ := attempt(r, job, errBoom)
			if !retried {
				t.Fatalf("job %d attempt %d: no retry, want one", id, a)
			}
			want := ceil(base.Add(rule.Decide(a, errBoom, backoff.Key(strconv.FormatInt(id, 10))).Delay))
			if !next.Equal(want) {
				t.Errorf("job %d attempt %d: NextRetry %v, want %v", id, a, next.Sub(base), want.Sub(base))
			}
		}
	}
	if n := r.Pending(); n != 0 {
		t.Fatalf("Pending = %d after every retry was asked for, want 0", n)
	}
}

// Without the captured error, a retry-after hint would be invisible to
// NextRetry: this is what the capture is for.
func TestRetryAfterHintHonoured(t *testing.T) {
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 5))
	job := &rivertype.JobRow{ID: 7, Attempt: 1, MaxAttempts: 5}
	next, _, _ := attempt(r, job, backoff.RetryAfter(errBoom, 90*time.Second))
	if got := next.Sub(base); got != 90*time.Second {
		t.Fatalf("NextRetry after a 90s hint: +%v, want +90s", got)
	}
	job = &rivertype.JobRow{ID: 7, Attempt: 2, MaxAttempts: 5}
	next, _, _ = attempt(r, job, backoff.RetryAfter(errBoom, time.Millisecond))
	if got := next.Sub(base); got != time.Second {
		t.Fatalf("NextRetry after a 1ms hint: +%v, want the policy's +1s", got)
	}
}

func TestPermanentCancels(t *testing.T) {
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 5))
	job := &rivertype.JobRow{ID: 3, Attempt: 1, MaxAttempts: 5}
	_, retried, returned := attempt(r, job, backoff.Permanent(errBoom))
	var cancel *rivertype.JobCancelError
	if retried || !errors.As(returned, &cancel) {
		t.Fatalf("permanent error: middleware returned %v (retried %v), want a river.JobCancel error", returned, retried)
	}
	if !errors.Is(returned, errBoom) {
		t.Fatalf("JobCancel error %v does not wrap the worker's error", returned)
	}
	if r.Pending() != 0 {
		t.Fatal("a permanent error left an entry")
	}
}

// The rule's cap wins over the job's MaxAttempts both ways, and an
// exhausted job is left for River to discard.
func TestAttemptsCap(t *testing.T) {
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 3))
	for _, inserted := range []int{1, 2, 3, 50} {
		for a := 1; a <= 4; a++ {
			job := &rivertype.JobRow{ID: 9, Attempt: a, MaxAttempts: inserted}
			_, retried, returned := attempt(r, job, errBoom)
			if want := a < 3; retried != want {
				t.Errorf("inserted MaxAttempts %d, attempt %d: retried %v, want %v", inserted, a, retried, want)
			}
			if !errors.Is(returned, errBoom) {
				t.Errorf("attempt %d: middleware returned %v, want the worker's error unchanged", a, returned)
			}
			if a >= 3 && job.Attempt < job.MaxAttempts {
				t.Errorf("attempt %d: job.MaxAttempts %d left above the attempt; River would retry", a, job.MaxAttempts)
			}
		}
	}
	if r.Pending() != 0 {
		t.Fatalf("Pending = %d, want 0", r.Pending())
	}
}

// A cap above what PostgreSQL stores (32767, a smallint) gives up at 32767
// runs: River is never asked to retry a job whose next attempt number it
// cannot store.
func TestCapAboveStorableGivesUpAtStorable(t *testing.T) {
	o := &reboundtest.Recorder{}
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 40000), WithObserver(o))
	job := &rivertype.JobRow{ID: 9, Attempt: math.MaxInt16 - 1, MaxAttempts: math.MaxInt16}
	if _, retried, _ := attempt(r, job, errBoom); !retried {
		t.Fatal("attempt 32766 of a 40000 cap: no retry, want one")
	}
	job = &rivertype.JobRow{ID: 9, Attempt: math.MaxInt16, MaxAttempts: math.MaxInt16}
	if _, retried, _ := attempt(r, job, errBoom); retried || job.MaxAttempts > math.MaxInt16 {
		t.Fatalf("attempt 32767 of a 40000 cap: retried %v with job.MaxAttempts %d, want exhausted at 32767", retried, job.MaxAttempts)
	}
	if got := ended(o)[1].Outcome(); got != "exhausted" || started(o)[1].MaxAttempts != math.MaxInt16 {
		t.Fatalf("observer heard %s with MaxAttempts %d, want exhausted of 32767", got, started(o)[1].MaxAttempts)
	}
}

func TestSnoozeAndCancelLeaveNothing(t *testing.T) {
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 3))
	for i, err := range []error{river.JobSnooze(time.Minute), river.JobCancel(errBoom), nil} {
		job := &rivertype.JobRow{ID: int64(i), Attempt: 1, MaxAttempts: 3}
		if _, _, returned := attempt(r, job, err); !errors.Is(returned, err) && returned != err {
			t.Errorf("middleware changed %v into %v", err, returned)
		}
	}
	if r.Pending() != 0 {
		t.Fatalf("Pending = %d, want 0", r.Pending())
	}
}

// A worker panic is decided like an error, and River still sees the panic;
// the observer is told an *observe.PanicError, as on every adapter.
func TestWorkerPanicIsRetriedAndRepanics(t *testing.T) {
	o := &reboundtest.Recorder{}
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 3), WithObserver(o))
	job := &rivertype.JobRow{ID: 11, Attempt: 1, MaxAttempts: 3}
	func() {
		defer func() {
			if p := recover(); p != "worker bug" {
				t.Fatalf("recovered %v, want the worker's panic value", p)
			}
		}()
		_ = r.Work(context.Background(), job, func(context.Context) error { panic("worker bug") })
	}()
	if got := r.NextRetry(job).Sub(base); got != time.Second {
		t.Fatalf("NextRetry after a panic: +%v, want +1s", got)
	}
	var pe *observe.PanicError
	if len(ended(o)) != 1 || !errors.As(ended(o)[0].Err, &pe) || pe.Op != "handler" || pe.Value != "worker bug" || len(pe.Stack) == 0 {
		t.Fatalf("observer heard %+v, want a retry whose error is *observe.PanicError{Op: handler, Value: worker bug, Stack}", ended(o))
	}
}

// panicPolicy is a foreign Policy with a bug.
type panicPolicy struct{}

func (panicPolicy) Delay(int, backoff.Source) time.Duration { panic("policy bug") }
func (panicPolicy) Max() time.Duration                      { return time.Hour }
func (panicPolicy) String() string                          { panic("string bug") }

// negativePolicy returns nonsense that backoff.Delay clamps.
type negativePolicy struct{}

func (negativePolicy) Delay(int, backoff.Source) time.Duration { return -time.Hour }
func (negativePolicy) Max() time.Duration                      { return -time.Hour }
func (negativePolicy) String() string                          { return "negative" }

func TestBrokenPolicyFallsBack(t *testing.T) {
	rule, err := backoff.NewRule(panicPolicy{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	r := newFixed(t, rule, WithFallbackDelay(42*time.Second))
	job := &rivertype.JobRow{ID: 1, Attempt: 1, MaxAttempts: 3}
	next, retried, _ := attempt(r, job, errBoom)
	if !retried || next.Sub(base) != 42*time.Second {
		t.Fatalf("panicking policy: retried %v at +%v, want a retry at the fallback +42s", retried, next.Sub(base))
	}
	// The cap and the permanent mark still apply.
	job = &rivertype.JobRow{ID: 1, Attempt: 3, MaxAttempts: 3}
	if _, retried, _ := attempt(r, job, errBoom); retried {
		t.Fatal("panicking policy: attempt 3 of 3 retried, want exhausted")
	}
	job = &rivertype.JobRow{ID: 1, Attempt: 1, MaxAttempts: 3}
	if _, _, returned := attempt(r, job, backoff.Permanent(errBoom)); !errors.As(returned, new(*rivertype.JobCancelError)) {
		t.Fatalf("panicking policy: permanent error returned %v, want JobCancel", returned)
	}
	// Without a captured entry NextRetry uses the policy directly.
	if got := r.NextRetry(&rivertype.JobRow{ID: 2, Attempt: 2, MaxAttempts: 3}).Sub(base); got != 42*time.Second {
		t.Fatalf("uncaptured NextRetry with a panicking policy: +%v, want +42s", got)
	}
}

// NextRetry never returns a zero time or one before now: not for huge or
// invalid attempt numbers, not for a nil job, not for a broken policy or
// key, not for a decision taken long before River asks.
func TestNextRetryNeverInThePast(t *testing.T) {
	exp := mustRule(t, backoff.Must(backoff.Exponential(time.Millisecond, 24*time.Hour*365*200)), math.MaxInt)
	zero := mustRule(t, backoff.Must(backoff.Fixed(0)), math.MaxInt)
	brokenRule, _ := backoff.NewRule(panicPolicy{}, 5)
	negRule, _ := backoff.NewRule(negativePolicy{}, 5)
	rules := map[string]backoff.Rule{"exponential": exp, "zero": zero, "panicking": brokenRule, "negative": negRule}
	keys := map[string]Option{
		"default":   nil,
		"panicking": WithKey(func(*rivertype.JobRow) backoff.Source { panic("key bug") }),
	}
	attempts := []int{math.MinInt, -1, 0, 1, 2, 62, 63, 64, 1000, math.MaxInt32, math.MaxInt - 1, math.MaxInt}
	for rn, rule := range rules {
		for kn, key := range keys {
			r, err := New(rule, quietErrors, key)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range attempts {
				for _, captured := range []bool{false, true} {
					job := &rivertype.JobRow{ID: int64(a), Attempt: a, MaxAttempts: math.MaxInt}
					if captured {
						_ = r.Work(context.Background(), job, func(context.Context) error { return errBoom })
						job.MaxAttempts = math.MaxInt // as if River kept it
					}
					before := time.Now()
					got := r.NextRetry(job)
					if got.IsZero() || got.Before(before) {
						t.Errorf("rule %s, key %s, attempt %d, captured %v: NextRetry = %v, before now %v", rn, kn, a, captured, got, before)
					}
				}
			}
		}
	}
	r, _ := New(exp, quietErrors)
	if got := r.NextRetry(nil); got.Before(time.Now()) {
		t.Errorf("NextRetry(nil) = %v, in the past", got)
	}
	// A decision taken an hour before River asks is clamped to now.
	clock := base
	r.now = func() time.Time { return clock }
	job := &rivertype.JobRow{ID: 5, Attempt: 1, MaxAttempts: 5}
	_ = r.Work(context.Background(), job, func(context.Context) error { return errBoom })
	clock = base.Add(time.Hour)
	if got := r.NextRetry(job); got.Before(clock) {
		t.Errorf("stale decision: NextRetry = %v, before now %v", got, clock)
	}
}

// A decision is handed out only for the attempt it was taken for.
func TestEntryForAnotherAttemptIsNotUsed(t *testing.T) {
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 5))
	job := &rivertype.JobRow{ID: 1000, Attempt: 1, MaxAttempts: 5}
	_ = r.Work(context.Background(), job, func(context.Context) error { return errBoom })
	if r.Pending() != 1 {
		t.Fatalf("Pending = %d after a failed attempt, want 1", r.Pending())
	}
	job.Attempt = 2
	if got := r.WorkerNextRetry(job); !got.IsZero() {
		t.Fatalf("WorkerNextRetry for attempt 2 used attempt 1's entry: %v", got)
	}
	if r.Pending() != 0 {
		t.Fatalf("Pending = %d, want 0", r.Pending())
	}
}

// Options given nil mean "none" or "the default", never an error.
func TestNilOptionsMeanDefault(t *testing.T) {
	r, err := New(mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 3), nil, WithKey(nil), WithObserver(nil), WithGiveUp(nil), WithErrorHandler(nil))
	if err != nil {
		t.Fatalf("New with nil options: %v", err)
	}
	r.now = func() time.Time { return base }
	job := &rivertype.JobRow{ID: 4, Attempt: 1}
	if next, _, _ := attempt(r, job, errBoom); next.Sub(base) != time.Second {
		t.Fatalf("NextRetry +%v, want +1s", next.Sub(base))
	}
}

// Every recovered panic of user code reaches the error handler once, as an
// *observe.PanicError naming what panicked; the give-up hook hears each
// job given up once, after the observer.
func TestReports(t *testing.T) {
	var reports []string
	onError := func(err error) {
		var pe *observe.PanicError
		if !errors.As(err, &pe) {
			t.Errorf("error handler told %v, want an *observe.PanicError", err)
			return
		}
		reports = append(reports, pe.Op)
	}
	var gaveUp []string
	hook := func(_ context.Context, g observe.GiveUp) {
		gaveUp = append(gaveUp, fmt.Sprintf("%s %d %v %v", g.Attempt.JobID, g.Attempt.Number, g.Outcome, g.Err))
	}
	broken, _ := backoff.NewRule(panicPolicy{}, 3)
	r := newFixed(t, broken, WithErrorHandler(onError), WithGiveUp(hook), WithObserver(panicObserver{}),
		WithKey(func(*rivertype.JobRow) backoff.Source { panic("key bug") }))
	_, _, _ = attempt(r, &rivertype.JobRow{ID: 1, Attempt: 1}, errBoom)
	_, _, _ = attempt(r, &rivertype.JobRow{ID: 2, Attempt: 3}, errBoom)
	_, _, _ = attempt(r, &rivertype.JobRow{ID: 3, Attempt: 1}, backoff.Permanent(errBoom))
	_, _, _ = attempt(r, &rivertype.JobRow{ID: 4, Attempt: 1}, textPanics{})
	want := "observer key policy observer " + // job 1: started, key, policy, ended
		"observer key observer " + // job 2: exhausted, the policy is not asked
		"observer key observer " + // job 3: permanent, the policy is not asked
		"observer error text key policy observer" // job 4
	if got := strings.Join(reports, " "); got != want {
		t.Errorf("error handler told panics of\n %s\nwant\n %s", got, want)
	}
	if got := strings.Join(gaveUp, "; "); got != "2 3 exhausted boom; 3 1 permanent boom" {
		t.Errorf("give-up hook told %q, want job 2 exhausted at 3 and job 3 permanent at 1", got)
	}
}

// A Retrier installed twice, as a plugin and as middleware, works each
// attempt once.
func TestInstalledTwiceWorksOnce(t *testing.T) {
	o := &reboundtest.Recorder{}
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 3), WithObserver(o))
	job := &rivertype.JobRow{ID: 1, Attempt: 1}
	_ = r.Work(context.Background(), job, func(ctx context.Context) error {
		return r.Work(ctx, job, func(context.Context) error { return errBoom })
	})
	r.NextRetry(job)
	if len(started(o)) != 1 || len(ended(o)) != 1 {
		t.Fatalf("observer told %d starts and %d ends, want one of each", len(started(o)), len(ended(o)))
	}
}

func TestKindRule(t *testing.T) {
	slow := mustRule(t, backoff.Must(backoff.Fixed(time.Hour)), 10)
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 2), WithKindRule("slow", slow))
	job := &rivertype.JobRow{ID: 1, Attempt: 5, MaxAttempts: 25, Kind: "slow"}
	next, retried, _ := attempt(r, job, errBoom)
	if !retried || next.Sub(base) != time.Hour {
		t.Fatalf("kind rule: retried %v at +%v, want +1h", retried, next.Sub(base))
	}
	job = &rivertype.JobRow{ID: 2, Attempt: 2, MaxAttempts: 25, Kind: "other"}
	if _, retried, _ := attempt(r, job, errBoom); retried {
		t.Fatal("default rule: attempt 2 of 2 retried")
	}
	// WorkerNextRetry has no opinion about a job it did not capture.
	if got := r.WorkerNextRetry(&rivertype.JobRow{ID: 99, Attempt: 1}); !got.IsZero() {
		t.Fatalf("WorkerNextRetry without a capture = %v, want zero", got)
	}
}

func TestInsertMiddlewareSetsCap(t *testing.T) {
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 4),
		WithKindRule("big", mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 1<<20)))
	params := []*rivertype.JobInsertParams{{Kind: "a", MaxAttempts: 25}, {Kind: "big", MaxAttempts: 2}, nil}
	called := false
	_, err := r.InsertMany(context.Background(), params, func(context.Context) ([]*rivertype.JobInsertResult, error) {
		called = true
		return nil, nil
	})
	if err != nil || !called {
		t.Fatalf("InsertMany: %v, inner called %v", err, called)
	}
	if params[0].MaxAttempts != 4 || params[1].MaxAttempts != math.MaxInt16 {
		t.Fatalf("MaxAttempts = %d, %d; want 4 and 32767", params[0].MaxAttempts, params[1].MaxAttempts)
	}
}

// panicObserver is an observer with a bug.
type panicObserver struct{}

func (panicObserver) AttemptStarted(context.Context, observe.Attempt) context.Context {
	panic("observer bug")
}
func (panicObserver) AttemptEnded(context.Context, observe.Attempt, observe.Result) {
	panic("observer bug")
}

func TestObserverReports(t *testing.T) {
	o := &reboundtest.Recorder{}
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 3), WithObserver(o))
	job := &rivertype.JobRow{ID: 77, Attempt: 2, MaxAttempts: 25, Kind: "mail", Queue: "q1", Metadata: []byte(`{"a":"x","n":3}`)}
	_ = r.Work(context.Background(), job, func(ctx context.Context) error { return errBoom })
	if len(ended(o)) != 0 {
		t.Fatalf("a retry was reported before River asked for its time: %+v", ended(o))
	}
	next := r.NextRetry(job)
	a := started(o)[0]
	want := observe.Attempt{System: "river", Queue: "q1", JobID: "77", Kind: "mail", Number: 2, MaxAttempts: 3}
	a.Carrier, want.Carrier = nil, nil
	if a != want {
		t.Errorf("Attempt = %+v, want %+v", a, want)
	}
	if c := started(o)[0].Carrier; c.Get("a") != "x" || c.Get("n") != "3" || len(c.Keys()) != 2 {
		t.Errorf("Carrier reads a=%q n=%q keys=%v, want x, 3 and two keys", c.Get("a"), c.Get("n"), c.Keys())
	}
	res := ended(o)[0]
	if !errors.Is(res.Err, errBoom) || !res.Decision.Retry() || res.Decision.Delay != time.Second || !res.FireAt.Equal(base.Add(time.Second)) {
		t.Errorf("Result = %+v, want errBoom, retry after 1s at base+1s", res)
	}
	if p := o.Problems(); len(p) > 0 {
		t.Errorf("the recorder saw %v", p)
	}
	if !next.Equal(res.FireAt) {
		t.Errorf("NextRetry %v differs from the reported FireAt %v", next, res.FireAt)
	}

	// The last attempt reports exhausted, a permanent error permanent.
	job = &rivertype.JobRow{ID: 78, Attempt: 3, MaxAttempts: 25}
	_ = r.Work(context.Background(), job, func(context.Context) error { return errBoom })
	job = &rivertype.JobRow{ID: 79, Attempt: 1, MaxAttempts: 25}
	_ = r.Work(context.Background(), job, func(context.Context) error { return backoff.Permanent(errBoom) })
	job = &rivertype.JobRow{ID: 80, Attempt: 1, MaxAttempts: 25}
	_ = r.Work(context.Background(), job, func(context.Context) error { return nil })
	got := []string{ended(o)[1].Outcome(), ended(o)[2].Outcome(), ended(o)[3].Outcome()}
	if strings.Join(got, ",") != "exhausted,permanent,success" {
		t.Errorf("outcomes %v, want exhausted, permanent, success", got)
	}
}

// errRiverStop stands in for the unexported cause River cancels a job's
// context with when its client stops.
var errRiverStop = errors.New("stop initiated")

// A snooze and a run cut short by a stopping client are not attempts:
// they are reported as Counting, not as retries, and leave no entry.
// Cancellations River does count keep being decided by the rule.
func TestObserverReportsCounting(t *testing.T) {
	o := &reboundtest.Recorder{}
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 3), WithObserver(o))
	cancelled := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	timedOut, stop := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer stop()
	cases := []struct {
		name      string
		ctx       context.Context
		worker    func(ctx context.Context) error
		uncounted observe.Counting
		outcome   string
		fireAt    time.Time
		entry     bool // River will call NextRetry for it
	}{
		{"snooze", context.Background(), func(context.Context) error { return river.JobSnooze(time.Minute) },
			observe.Snoozed, "snoozed", base.Add(time.Minute), false},
		{"zero snooze", context.Background(), func(context.Context) error { return river.JobSnooze(0) },
			observe.Snoozed, "snoozed", base, false},
		{"client stopping, worker returns ctx.Err", cancelled(errRiverStop), func(ctx context.Context) error { return ctx.Err() },
			observe.Interrupted, "interrupted", base, false},
		{"client stopping, worker returns the cause", cancelled(errRiverStop), func(ctx context.Context) error { return fmt.Errorf("send: %w", context.Cause(ctx)) },
			observe.Interrupted, "interrupted", base, false},
		// River counts these: the worker's own error while stopping, a
		// plain cancellation of the client's start context, a timeout.
		{"client stopping, worker's own error", cancelled(errRiverStop), func(context.Context) error { return errBoom },
			observe.Counted, "retry", base.Add(time.Second), true},
		{"plain cancellation", cancelled(nil), func(ctx context.Context) error { return ctx.Err() },
			observe.Counted, "retry", base.Add(time.Second), true},
		{"timeout", timedOut, func(ctx context.Context) error { return ctx.Err() },
			observe.Counted, "retry", base.Add(time.Second), true},
		{"remote cancel", cancelled(rivertype.ErrJobCancelledRemotely), func(ctx context.Context) error { return ctx.Err() },
			observe.Counted, "permanent", time.Time{}, false},
	}
	for i, c := range cases {
		o.Reset()
		job := &rivertype.JobRow{ID: int64(100 + i), Attempt: 1, MaxAttempts: 3}
		returned := r.Work(c.ctx, job, c.worker)
		got := r.WorkerNextRetry(job)
		if len(ended(o)) != 1 {
			t.Fatalf("%s: %d results reported, want 1", c.name, len(ended(o)))
		}
		res := ended(o)[0]
		if res.Counting != c.uncounted || res.Outcome() != c.outcome || !res.FireAt.Equal(c.fireAt) {
			t.Errorf("%s: reported %v (%s) firing at %v, want %v (%s) at %v",
				c.name, res.Counting, res.Outcome(), res.FireAt, c.uncounted, c.outcome, c.fireAt)
		}
		if res.Err == nil || (c.uncounted != observe.Counted && res.Err != returned) {
			t.Errorf("%s: reported error %v, want the error handed to River (%v)", c.name, res.Err, returned)
		}
		if c.uncounted != observe.Counted && (!res.Decision.Retry() || !base.Add(res.Decision.Delay).Equal(c.fireAt)) {
			t.Errorf("%s: decision %+v, want River's rerun after the time until FireAt", c.name, res.Decision)
		}
		if got.IsZero() == c.entry || (c.entry && !got.Equal(res.FireAt)) {
			t.Errorf("%s: captured retry time %v, want one (%v) only when River calls NextRetry", c.name, got, c.entry)
		}
	}
	if r.Pending() != 0 {
		t.Fatalf("Pending = %d, want 0", r.Pending())
	}
}

func TestObserverPanicsAreRecovered(t *testing.T) {
	o := panicObserver{}
	r := newFixed(t, mustRule(t, backoff.Must(backoff.Fixed(time.Second)), 3), WithObserver(o))
	job := &rivertype.JobRow{ID: 1, Attempt: 1, MaxAttempts: 3}
	ran := false
	err := r.Work(context.Background(), job, func(context.Context) error { ran = true; return errBoom })
	if !ran || !errors.Is(err, errBoom) {
		t.Fatalf("with a panicking observer: worker ran %v, returned %v", ran, err)
	}
	if got := r.NextRetry(job).Sub(base); got != time.Second {
		t.Fatalf("NextRetry +%v, want +1s", got)
	}
}

// Set outside a work context, or on a reserved key, is ignored rather than
// reported as set.
func TestCarrierOutsideWorkContext(t *testing.T) {
	c := newMetadataCarrier(context.Background(), []byte(`not json`))
	c.Set("k", "v")
	if c.Get("k") != "" || len(c.Keys()) != 0 {
		t.Fatalf("carrier outside a work context kept %q, keys %v", c.Get("k"), c.Keys())
	}
}
