package reboundriver

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// textPanics is an error whose Error method panics.
type textPanics struct{}

func (textPanics) Error() string { panic("no text for you") }

// ptrErr is an error whose Error method dereferences its receiver, so a
// typed nil (var e *ptrErr; return e) panics when River prints it.
type ptrErr struct{ msg string }

func (e *ptrErr) Error() string { return e.msg }

// unwrapPanics is an error whose Unwrap panics, so walking its chain with
// errors.Is or errors.As does.
type unwrapPanics struct{}

func (unwrapPanics) Error() string { return "unwrap panics" }
func (unwrapPanics) Unwrap() error { panic("no chain for you") }

// hostileArgs jobs fail with the error their Mode names.
type hostileArgs struct {
	Mode string `json:"mode"`
}

func (hostileArgs) Kind() string { return "rebound_hostile" }

type hostileWorker struct {
	river.WorkerDefaults[hostileArgs]
}

func (w *hostileWorker) Work(ctx context.Context, job *river.Job[hostileArgs]) error {
	switch job.Args.Mode {
	case "text-panics":
		return textPanics{}
	case "typed-nil":
		var e *ptrErr
		return e
	case "unwrap-panics":
		return unwrapPanics{}
	case "huge":
		return errors.New(strings.Repeat("é", 1<<19)) // 1 MiB of two-byte runes
	case "nul":
		return errors.New("before\x00after")
	case "invalid-utf8":
		return errors.New("bad \xff\xfe bytes")
	case "permanent-text-panics":
		return backoff.Permanent(textPanics{})
	case "cancel-text-panics":
		return river.JobCancel(textPanics{})
	case "panic-permanent":
		panic(backoff.Permanent(errScripted))
	case "max-hint":
		return backoff.RetryAfter(errScripted, math.MaxInt64)
	case "timeout":
		<-ctx.Done()
		return ctx.Err()
	case "timeout-ignored":
		time.Sleep(100 * time.Millisecond)
		return nil
	}
	return errScripted
}

// hostileRun works one job of the given mode through River's executor with
// r plugged in, failing t (rather than the test binary) if River's
// executor panics.
func hostileRun[TTx any](t *testing.T, e rtEnv[TTx], r *Retrier, cfg func(*river.Config), mode string) *rivertest.WorkResult {
	t.Helper()
	config := &river.Config{
		Logger:      watchRetryWarnings(t),
		Plugins:     []rivertype.Plugin{r},
		RetryPolicy: r,
		Schema:      e.schema,
	}
	if cfg != nil {
		cfg(config)
	}
	w := rivertest.NewWorker(t, e.driver, config, river.Worker[hostileArgs](&hostileWorker{}))
	var res *rivertest.WorkResult
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("%s: River's executor panicked: %v", mode, p)
			}
		}()
		res, _ = w.Work(context.Background(), t, e.tx(t), hostileArgs{Mode: mode}, nil)
	}()
	return res
}

// hostileCases checks what hostile handler errors and extreme delays do to
// a job, through River's real executor.
func hostileCases[TTx any](t *testing.T, e rtEnv[TTx]) {
	rule := mustRule(t, backoff.Must(backoff.Fixed(time.Hour)), 3)

	// Each error still makes one failed, retried attempt, River stores a
	// readable message, and the observer is told the message River stored.
	for _, c := range []struct {
		mode string
		want string // what the stored message contains
	}{
		{"text-panics", "textPanics (its Error method panicked: no text for you)"},
		{"typed-nil", "(*reboundriver.ptrErr)(nil)"},
		{"unwrap-panics", "unwrap panics"},
		{"huge", "bytes truncated]"},
		{"nul", "before\uFFFDafter"},
		{"invalid-utf8", "bad \uFFFD"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			o := &reboundtest.Recorder{}
			r, _ := New(rule, quietErrors, WithObserver(o))
			before := time.Now()
			res := hostileRun(t, e, r, nil, c.mode)
			if res.Job.State != rivertype.JobStateRetryable || len(res.Job.Errors) != 1 {
				t.Fatalf("state %s with %d errors, want retryable with one", res.Job.State, len(res.Job.Errors))
			}
			if d := res.Job.ScheduledAt.Sub(before); d < time.Hour || d > time.Hour+time.Minute {
				t.Fatalf("scheduled %v ahead, want the rule's hour", d)
			}
			stored := res.Job.Errors[0].Error
			if !strings.Contains(stored, c.want) || !utf8.ValidString(stored) || len(stored) > MaxErrorBytes {
				t.Fatalf("stored message %.80q... (%d bytes), want valid UTF-8 of at most %d bytes containing %q", stored, len(stored), MaxErrorBytes, c.want)
			}
			if len(ended(o)) != 1 || ended(o)[0].Outcome() != "retry" || ended(o)[0].Err == nil || ended(o)[0].Err.Error() != stored {
				t.Fatalf("observer heard %d endings (%+v), want one retry with the stored message", len(ended(o)), ended(o))
			}
			if r.Pending() != 0 {
				t.Fatalf("Pending = %d, want 0", r.Pending())
			}
		})
	}

	// A permanent or cancelling error with a hostile text still cancels.
	for _, mode := range []string{"permanent-text-panics", "cancel-text-panics"} {
		t.Run(mode, func(t *testing.T) {
			o := &reboundtest.Recorder{}
			r, _ := New(rule, quietErrors, WithObserver(o))
			res := hostileRun(t, e, r, nil, mode)
			if res.Job.State != rivertype.JobStateCancelled || len(res.Job.Errors) != 1 || !strings.Contains(res.Job.Errors[0].Error, "panicked") {
				t.Fatalf("state %s, errors %+v; want cancelled with a readable message", res.Job.State, res.Job.Errors)
			}
			if len(ended(o)) != 1 || ended(o)[0].Outcome() != "permanent" {
				t.Fatalf("observer heard %+v, want one permanent", ended(o))
			}
		})
	}

	// A panic whose value is an error marked permanent cancels the job, as
	// the observer is told, rather than being retried.
	t.Run("PanicPermanent", func(t *testing.T) {
		o := &reboundtest.Recorder{}
		r, _ := New(rule, quietErrors, WithObserver(o))
		res := hostileRun(t, e, r, nil, "panic-permanent")
		var pe *observe.PanicError
		if res.Job.State != rivertype.JobStateCancelled || len(ended(o)) != 1 || ended(o)[0].Outcome() != "permanent" || !errors.As(ended(o)[0].Err, &pe) {
			t.Fatalf("state %s, observer heard %+v; want cancelled, told permanent with the panic", res.Job.State, ended(o))
		}
		if got := res.Job.Errors[0].Error; got != "JobCancelError: rebound: handler panicked: scripted failure" {
			t.Fatalf("stored message %q, want the panic under one JobCancelError", got)
		}
	})

	// The longest delays a policy or a hint can ask for are stored as
	// they are (River stores times up to year 294276 on PostgreSQL and
	// 9999 on SQLite; now + math.MaxInt64 is in 2318): never clamped into
	// the past, never run at once.
	t.Run("MaxDelay", func(t *testing.T) {
		huge, err := backoff.NewRule(fixedPolicy(math.MaxInt64), 3)
		if err != nil {
			t.Fatal(err)
		}
		for name, c := range map[string]struct {
			rule backoff.Rule
			mode string
		}{
			"policy": {huge, "fail"},
			"hint":   {rule, "max-hint"},
		} {
			t.Run(name, func(t *testing.T) {
				o := &reboundtest.Recorder{}
				r, _ := New(c.rule, quietErrors, WithObserver(o))
				before := time.Now()
				res := hostileRun(t, e, r, nil, c.mode)
				want := before.Add(math.MaxInt64)
				if res.Job.State != rivertype.JobStateRetryable || res.Job.ScheduledAt.Before(want) || res.Job.ScheduledAt.After(want.Add(time.Minute)) {
					t.Fatalf("state %s scheduled at %v, want retryable at about %v", res.Job.State, res.Job.ScheduledAt, want)
				}
				if len(ended(o)) != 1 || !ended(o)[0].FireAt.Equal(res.Job.ScheduledAt) {
					t.Fatalf("observer heard %+v, want the stored fire time %v", ended(o), res.Job.ScheduledAt)
				}
			})
		}
	})

	// A handler that outlives River's JobTimeout is one failed, counted
	// attempt, whatever it returns.
	timeout := func(c *river.Config) { c.JobTimeout = 20 * time.Millisecond }
	t.Run("Timeout", func(t *testing.T) {
		o := &reboundtest.Recorder{}
		r, _ := New(rule, quietErrors, WithObserver(o))
		res := hostileRun(t, e, r, timeout, "timeout")
		if res.Job.State != rivertype.JobStateRetryable || len(ended(o)) != 1 || ended(o)[0].Outcome() != "retry" ||
			!errors.Is(ended(o)[0].Err, context.DeadlineExceeded) || !ended(o)[0].FireAt.Equal(res.Job.ScheduledAt) {
			t.Fatalf("state %s, observer heard %+v; want a retry of context.DeadlineExceeded at the stored %v", res.Job.State, ended(o), res.Job.ScheduledAt)
		}
	})
	t.Run("TimeoutIgnored", func(t *testing.T) {
		o := &reboundtest.Recorder{}
		r, _ := New(rule, quietErrors, WithObserver(o))
		res := hostileRun(t, e, r, timeout, "timeout-ignored")
		if res.Job.State != rivertype.JobStateRetryable || len(res.Job.Errors) != 1 || res.Job.Errors[0].Error != context.DeadlineExceeded.Error() ||
			len(ended(o)) != 1 || ended(o)[0].Outcome() != "retry" || !errors.Is(ended(o)[0].Err, context.DeadlineExceeded) {
			t.Fatalf("state %s, errors %+v, observer heard %+v; want a retry of context.DeadlineExceeded, counted", res.Job.State, res.Job.Errors, ended(o))
		}
	})
}

// fixedPolicy is a foreign Policy that always asks for its own duration.
type fixedPolicy time.Duration

func (p fixedPolicy) Delay(int, backoff.Source) time.Duration { return time.Duration(p) }
func (p fixedPolicy) Max() time.Duration                      { return time.Duration(p) }
func (p fixedPolicy) String() string                          { return "fixedPolicy" }

func TestHostile(t *testing.T) {
	forBackends(t, hostileCases[pgxTx], hostileCases[sqlTx])
}
