package reboundriver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/notify"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// System is the value of [observe.Attempt.System] for River jobs.
const System = "river"

// DefaultFallbackDelay is the retry delay used when a policy panics, unless
// [WithFallbackDelay] sets another.
const DefaultFallbackDelay = time.Minute

// maxStoredAttempts is the largest attempt number River's PostgreSQL schema
// can hold (attempt and max_attempts are smallint columns). River numbers a
// job's next run when it fetches it, so a job that failed its 32767th run
// must not be retried: its next fetch would fail with "smallint out of
// range", and with it every fetch of its queue.
const maxStoredAttempts = math.MaxInt16

// attemptsCap is the number of runs a job under rule gets: the rule's
// MaxAttempts, at most maxStoredAttempts.
func attemptsCap(rule backoff.Rule) int {
	return min(rule.MaxAttempts(), maxStoredAttempts)
}

// A Retrier applies a [backoff.Rule] to River jobs. Put the same value in
// river.Config as RetryPolicy and in Plugins: it is a
// river.ClientRetryPolicy, a rivertype.WorkerMiddleware that captures each
// attempt's outcome and enforces the attempts cap, a
// rivertype.JobInsertMiddleware that writes the cap into inserted jobs, and
// a rivertype.HookWorkEnd that counts an attempt outliving its timeout as
// a failure.
//
// A Retrier is safe for concurrent use by any number of clients and workers.
type Retrier struct {
	rule     backoff.Rule
	kinds    map[string]backoff.Rule
	key      func(*rivertype.JobRow) backoff.Source
	fallback time.Duration
	notify   notify.Notifier
	store    *store
	now      func() time.Time
}

// Compile-time checks that a Retrier plugs into River where documented.
var (
	_ river.ClientRetryPolicy       = (*Retrier)(nil)
	_ rivertype.WorkerMiddleware    = (*Retrier)(nil)
	_ rivertype.JobInsertMiddleware = (*Retrier)(nil)
	_ rivertype.HookWorkEnd         = (*Retrier)(nil)
	_ rivertype.Plugin              = (*Retrier)(nil)
)

// An Option configures a [Retrier].
type Option func(*Retrier) error

// WithKindRule applies rule, instead of the Retrier's default rule, to jobs of
// the given kind: their delays, their attempts cap and the max_attempts they
// are inserted with.
func WithKindRule(kind string, rule backoff.Rule) Option {
	return func(r *Retrier) error {
		if kind == "" {
			return errors.New("reboundriver: WithKindRule: kind is empty, want a River job kind")
		}
		if err := checkRule(rule); err != nil {
			return fmt.Errorf("reboundriver: WithKindRule(%q): %w", kind, err)
		}
		if r.kinds == nil {
			r.kinds = make(map[string]backoff.Rule)
		}
		r.kinds[kind] = rule
		return nil
	}
}

// WithKey sets the function that picks a job's jitter source. The default,
// also used when key is nil, is backoff.Key(strconv.FormatInt(job.ID, 10)),
// which makes one job's schedule reproducible and identical on every
// rebound adapter. A key function that panics is recovered: the default key
// is used and the panic reported as an [*observe.PanicError] with Op "key".
func WithKey(key func(job *rivertype.JobRow) backoff.Source) Option {
	return func(r *Retrier) error {
		r.key = key
		return nil
	}
}

// WithObserver reports every attempt the middleware sees to o (nil: none):
// AttemptStarted before the worker runs (its context is passed down to the
// worker) and AttemptEnded once River has been handed the decision: when
// the middleware returns, or for a retry when River asks NextRetry for its
// time (snoozes and runs cut short by a stopping client are reported with
// [observe.Result.Counting] set; see [Retrier.Work]). The attempt's Carrier
// reads the job's metadata and, until the worker returns, writes with
// river.MetadataSet, so values set during one attempt are read back by the
// next. A panic in o is recovered and reported.
func WithObserver(o observe.Observer) Option {
	return func(r *Retrier) error {
		r.notify.Observer = o
		return nil
	}
}

// WithGiveUp sets the hook told about every job the rule gives up on (nil:
// none): once per job that ends exhausted (River discards it) or permanent
// (River cancels it, including a job cancelled with river.JobCancel, by an
// ErrorHandler or with Client.JobCancel while it runs), after the observer
// was told the same attempt, never for a job that later succeeds. See
// [observe.GiveUpFunc].
func WithGiveUp(hook observe.GiveUpFunc) Option {
	return func(r *Retrier) error {
		r.notify.GiveUp = hook
		return nil
	}
}

// WithErrorHandler sets where internal errors go: recovered panics of user
// code (policy, key function, observer, give-up hook, an error's own
// methods), each an [*observe.PanicError]. nil, the default, logs them with
// slog.Default at level Error. A panic in handle is logged.
func WithErrorHandler(handle func(error)) Option {
	return func(r *Retrier) error {
		r.notify.OnError = handle
		return nil
	}
}

// WithFallbackDelay sets the retry delay used when the policy panics (a
// foreign backoff.Policy with a bug, or an error whose methods panic while
// the rule reads it). d must be positive; the default is
// [DefaultFallbackDelay].
func WithFallbackDelay(d time.Duration) Option {
	return func(r *Retrier) error {
		if d <= 0 {
			return fmt.Errorf("reboundriver: WithFallbackDelay: %v is not positive, want > 0", d)
		}
		r.fallback = d
		return nil
	}
}

// WithLogger sets where internal errors are logged when no
// [WithErrorHandler] is given; the default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(r *Retrier) error {
		if l == nil {
			return errors.New("reboundriver: WithLogger: logger is nil, want a *slog.Logger")
		}
		if r.notify.OnError == nil {
			r.notify.OnError = func(err error) { l.Error("reboundriver: internal error", slog.String("err", safe.Message(err))) }
		}
		return nil
	}
}

func checkRule(rule backoff.Rule) error {
	if rule.Policy() == nil || rule.MaxAttempts() < 1 {
		return errors.New("the rule is the zero backoff.Rule, want one built with backoff.NewRule")
	}
	return nil
}

// New returns a Retrier that applies rule to every job kind not given its own
// rule with [WithKindRule].
func New(rule backoff.Rule, opts ...Option) (*Retrier, error) {
	if err := checkRule(rule); err != nil {
		return nil, fmt.Errorf("reboundriver: %w", err)
	}
	r := &Retrier{
		rule:     rule,
		fallback: DefaultFallbackDelay,
		notify:   notify.Notifier{Prefix: "reboundriver"},
		now:      time.Now,
	}
	r.store = newStore(r.forgotten)
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Rule returns the rule applied to jobs of the given kind.
func (r *Retrier) Rule(kind string) backoff.Rule {
	if rule, ok := r.kinds[kind]; ok {
		return rule
	}
	return r.rule
}

// Pending returns how many captured retry decisions wait for River to call
// NextRetry. It stays near the number of jobs failing at this moment: River
// asks for a decision microseconds after the middleware takes it, and one
// River never asks for is forgotten within two seconds of River finishing
// with the attempt (five minutes when the attempt's context never ends).
func (r *Retrier) Pending() int { return r.store.len() }

// IsMiddleware marks a Retrier as River middleware.
func (r *Retrier) IsMiddleware() bool { return true }

// workingKey marks a context the Retrier's Work runs the job with; its value
// is the job.
type workingKey struct{}

// WorkEnd implements rivertype.HookWorkEnd (when the Retrier is installed
// in river.Config's Plugins): River calls it as the worker returns, with the
// attempt's context, which carries River's JobTimeout or the worker's
// Timeout. A worker that returns nil after that deadline has outlived its
// timeout: WorkEnd turns the nil into context.DeadlineExceeded, so the
// attempt is one failed attempt, decided by the rule, as it is on every
// rebound adapter (River on its own would record a success). Any other
// result passes through unchanged.
func (r *Retrier) WorkEnd(ctx context.Context, _ *rivertype.JobRow, err error) error {
	if err == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}

// IsHook marks a Retrier as a River hook.
func (r *Retrier) IsHook() bool { return true }

// IsPlugin marks a Retrier as a River plugin, installed in river.Config's
// Plugins as both middleware and hook.
func (r *Retrier) IsPlugin() bool { return true }

// InsertMany sets the max_attempts of every job being inserted to the
// attempts cap of its kind's rule, replacing whatever the insert options or
// the client's MaxAttempts said, so River's own bookkeeping (the job row,
// the UI, the rescuer) agrees with the rule. Caps above 32767, the most the
// PostgreSQL column holds, are stored as 32767, and such a job gives up
// after 32767 runs (see [Retrier.Work]).
func (r *Retrier) InsertMany(ctx context.Context, manyParams []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	for _, p := range manyParams {
		if p == nil {
			continue
		}
		kind := p.Kind
		if kind == "" && p.Args != nil {
			kind = p.Args.Kind()
		}
		p.MaxAttempts = attemptsCap(r.Rule(kind))
	}
	return doInner(ctx)
}

// Work runs one attempt of job and decides what follows a failure:
//
//   - a permanent error (backoff.Permanent) is returned as
//     river.JobCancel(err), so the job ends cancelled;
//   - an attempt at or past the cap ends the job: the running job's
//     MaxAttempts is lowered to its attempt number and River discards it;
//   - otherwise the retry time is recorded for NextRetry.
//
// Before the worker runs, job.MaxAttempts is set to the rule's cap, so the
// worker and River both see the cap the rule sets. A cap above 32767 is
// applied as 32767: PostgreSQL stores attempt numbers in a smallint, and a
// retry after the 32767th run would stop the job's queue. Snoozes and the worker's
// own river.JobCancel keep River's meaning. A panic in the worker is decided
// like an error and then re-raised.
//
// Two kinds of run are not attempts in River's eyes, and the observer hears
// them as such ([observe.Result.Counting]) rather than as failures: a
// snooze (river.JobSnooze, reported as [observe.Snoozed], firing when the
// snooze ends) and a run cut short by the client stopping (Stop's soft-stop
// timeout or StopAndCancel cancels the job's context and the worker returns
// the cancellation; reported as [observe.Interrupted], the job being put
// back to run at once). River reruns both without counting them or calling
// NextRetry.
func (r *Retrier) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) (err error) {
	if job == nil || ctx.Value(workingKey{}) == job {
		// Installed twice (as a plugin and as middleware): the outer
		// Work is already at it.
		return doInner(ctx)
	}
	rule := r.Rule(job.Kind)
	limit := attemptsCap(rule)
	job.MaxAttempts = limit
	carrier := newMetadataCarrier(ctx, job.Metadata)

	a := observe.Attempt{
		System:      System,
		Queue:       job.Queue,
		JobID:       strconv.FormatInt(job.ID, 10),
		Kind:        job.Kind,
		Number:      job.Attempt,
		MaxAttempts: limit,
		Carrier:     carrier,
	}
	octx := context.WithValue(r.notify.Started(ctx, a), workingKey{}, job)

	returned := false
	defer func() {
		if returned {
			return
		}
		carrier.seal()
		// The worker panicked (or called runtime.Goexit): decide as for an
		// error, report, and let the panic carry on to River, which records
		// it with its stack; a panic with an error marked permanent cancels
		// the job instead, which a panic cannot tell River.
		p := recover()
		var perr error
		if p != nil {
			perr = &observe.PanicError{Op: "handler", Value: p, Stack: debug.Stack()}
		} else {
			perr = errors.New("worker goroutine exited without returning")
		}
		if ret, permanent := r.settle(ctx, octx, job, rule, a, perr); permanent {
			if _, ok := ret.(*rivertype.JobCancelError); !ok {
				ret = river.JobCancel(ret)
			}
			err = ret
			return
		}
		if p != nil {
			panic(p)
		}
	}()
	err = doInner(octx)
	returned = true
	carrier.seal()
	err, _ = r.settle(ctx, octx, job, rule, a, err)
	return err
}

// settle turns an attempt's error into the error to hand back to River and
// reports the attempt: at once when River acts on the returned error alone,
// or, for a retry, when River asks NextRetry for its time (see
// [Retrier.NextRetry]). permanent says the job ends cancelled.
func (r *Retrier) settle(ctx, octx context.Context, job *rivertype.JobRow, rule backoff.Rule, a observe.Attempt, err error) (_ error, permanent bool) {
	res, err, retry := r.outcome(ctx, job, rule, err)
	if !retry {
		r.notify.Ended(octx, a, res)
		return err, res.Err != nil && res.Decision.Outcome == backoff.OutcomePermanent
	}
	r.store.put(job, &entry{id: job.ID, attempt: job.Attempt, fireAt: res.FireAt, ctx: ctx, octx: octx, a: a, res: res})
	return err, false
}

// outcome decides what follows an attempt that returned err: the result to
// report, the error to hand back to River, and whether River will ask
// NextRetry for a retry time.
func (r *Retrier) outcome(ctx context.Context, job *rivertype.JobRow, rule backoff.Rule, raw error) (observe.Result, error, bool) {
	if raw == nil {
		return observe.Result{}, nil, false
	}
	now := r.now()
	v, err := r.inspect(ctx, raw)

	if v.snooze != nil {
		// Not an attempt: River reruns the job after the snooze without
		// counting it, and does not call NextRetry.
		d := max(v.snooze.Duration, 0)
		return uncounted(err, observe.Snoozed, d, now), err, false
	}
	if v.cancelled || errors.Is(context.Cause(ctx), rivertype.ErrJobCancelledRemotely) {
		return observe.Result{Err: err, Decision: backoff.Decision{Outcome: backoff.OutcomePermanent}}, err, false
	}
	if v.stopping {
		// The client is stopping: River puts the job back as it was, to
		// run at once, without counting the attempt or calling NextRetry.
		return uncounted(err, observe.Interrupted, 0, now), err, false
	}

	d := r.decide(rule, job.Attempt, err, r.source(job))
	switch d.Outcome {
	case backoff.OutcomePermanent:
		return observe.Result{Err: err, Decision: d}, river.JobCancel(err), false
	case backoff.OutcomeRetry:
		return observe.Result{Err: err, Decision: d, FireAt: ceil(now.Add(d.Delay))}, err, true
	default:
		// Exhausted: River discards a job whose attempt has reached its
		// MaxAttempts, and this is the same *JobRow it checks.
		job.MaxAttempts = job.Attempt
		return observe.Result{Err: err, Decision: d}, err, false
	}
}

// forgotten reports an attempt whose retry River never asked for. River
// skips NextRetry for a failed attempt with attempts left only when it
// cancels the job instead: its ErrorHandler returned SetCancelled, or the
// job was cancelled remotely as the attempt ended. So the attempt is
// reported as permanent. (A middleware outside the Retrier that changes
// the attempt's error, or a worker whose NextRetry answers without
// WorkerNextRetry, also leaves River's choice unseen; it is reported the
// same way.)
func (r *Retrier) forgotten(e *entry) {
	res := e.res
	res.Decision, res.FireAt = backoff.Decision{Outcome: backoff.OutcomePermanent}, time.Time{}
	r.notify.Ended(e.octx, e.a, res)
}

// uncounted is the result of a run River does not count as an attempt: it
// runs the job again after d, as River's own decision rather than the
// rule's.
func uncounted(err error, why observe.Counting, d time.Duration, now time.Time) observe.Result {
	return observe.Result{
		Err:      err,
		Decision: backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: d},
		FireAt:   now.Add(d),
		Counting: why,
	}
}

// stopping reports whether River takes err as its client stopping, which it
// does when the job's context was cancelled with the cause River's Stop and
// StopAndCancel use and the worker returned context.Canceled or that cause.
// River's cause is an unexported value, so any cause other than the ones
// River uses for something else (a remote cancellation, a timeout) or a
// plain cancellation is taken as River's: a plain cancellation of the
// context the client was started with reaches jobs as context.Canceled, and
// River counts that run as a failed attempt.
func stopping(ctx context.Context, err error) bool {
	if ctx.Err() == nil {
		return false
	}
	switch cause := context.Cause(ctx); {
	case cause == nil,
		errors.Is(cause, context.Canceled),
		errors.Is(cause, context.DeadlineExceeded),
		errors.Is(cause, rivertype.ErrJobCancelledRemotely):
		return false
	default:
		return errors.Is(err, context.Canceled) || errors.Is(err, cause)
	}
}

// NextRetry implements river.ClientRetryPolicy. It returns the time the
// middleware decided for the attempt that just failed. For a job the
// middleware did not see (it is not installed, the job's row could not be
// decoded, or River's rescuer is retrying a stuck job) it applies the kind's
// rule to the attempt number without an error. The result is never zero and
// never before now.
func (r *Retrier) NextRetry(job *rivertype.JobRow) (t time.Time) {
	now := r.now()
	defer func() {
		if p := recover(); p != nil { // a bug of the Retrier's own: River must still get a time
			r.notify.Report(fmt.Errorf("reboundriver: NextRetry panicked, retrying after the fallback delay: %v", p))
			t = now.Add(r.fallback)
		}
	}()
	if job == nil {
		return now.Add(r.fallback)
	}
	if t := r.WorkerNextRetry(job); !t.IsZero() {
		return t
	}
	rule := r.Rule(job.Kind)
	src := r.source(job)
	d := r.decide(rule, job.Attempt, nil, src)
	delay := d.Delay
	if !d.Retry() {
		// River retries a job the rule calls exhausted only when the
		// middleware did not run; wait the policy's delay for the attempt.
		delay = r.delay(rule, job.Attempt, src)
	}
	return later(now.Add(delay), now)
}

// WorkerNextRetry returns the retry time the middleware decided for job's
// failed attempt, or the zero time ("no opinion") when it has none, so River
// goes on to the client's retry policy. Use it from a worker that overrides
// river.Worker's NextRetry, typically for a kind given its own rule with
// [WithKindRule]:
//
//	func (w *SyncWorker) NextRetry(job *river.Job[SyncArgs]) time.Time {
//		return w.retrier.WorkerNextRetry(job.JobRow)
//	}
//
// A non-zero result is never before now. Handing it out reports the
// attempt to the observer, with the time River is given.
func (r *Retrier) WorkerNextRetry(job *rivertype.JobRow) time.Time {
	if job == nil {
		return time.Time{}
	}
	e, ok := r.store.take(job)
	if !ok {
		return time.Time{}
	}
	res := e.res
	res.FireAt = later(e.fireAt, r.now())
	if errors.Is(context.Cause(e.ctx), rivertype.ErrJobCancelledRemotely) {
		// Cancelled remotely after the attempt ended: River stores the
		// job cancelled whatever time it is given.
		res.Decision, res.FireAt = backoff.Decision{Outcome: backoff.OutcomePermanent}, time.Time{}
		r.notify.Ended(e.octx, e.a, res)
		return later(e.fireAt, r.now())
	}
	r.notify.Ended(e.octx, e.a, res)
	return res.FireAt
}

// decide is rule.Decide with the attempts cap River can store, guarded: a
// panic (a foreign policy, or an error whose methods panic while the rule
// reads it) is reported as an *observe.PanicError with Op "policy", and the
// permanent mark and the cap still apply; otherwise the job retries after
// the fallback delay.
func (r *Retrier) decide(rule backoff.Rule, attempt int, err error, src backoff.Source) backoff.Decision {
	d, perr := safe.Value("policy", backoff.Decision{}, func() backoff.Decision { return rule.Decide(attempt, err, src) })
	if perr != nil {
		r.notify.Report(perr)
		d = r.fallbackDecision(rule, attempt, err)
	}
	if d.Retry() && attempt >= attemptsCap(rule) {
		d = backoff.Decision{Outcome: backoff.OutcomeExhausted}
	}
	return d
}

// fallbackDecision is the decision after the policy panicked.
func (r *Retrier) fallbackDecision(rule backoff.Rule, attempt int, err error) backoff.Decision {
	permanent, perr := safe.Value("error text", false, func() bool { return backoff.IsPermanent(err) })
	r.notify.Report(perr)
	switch {
	case permanent:
		return backoff.Decision{Outcome: backoff.OutcomePermanent}
	case attempt >= attemptsCap(rule):
		return backoff.Decision{Outcome: backoff.OutcomeExhausted}
	}
	return backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: r.fallback}
}

// delay is the policy's delay for attempt, or the fallback delay if it
// panics (reported as for decide).
func (r *Retrier) delay(rule backoff.Rule, attempt int, src backoff.Source) time.Duration {
	d, perr := safe.Value("policy", r.fallback, func() time.Duration { return backoff.Delay(rule.Policy(), attempt, src) })
	r.notify.Report(perr)
	return d
}

// source returns job's jitter source: WithKey's function, or
// backoff.Key(job ID) when there is none or it panics (reported as an
// *observe.PanicError with Op "key").
func (r *Retrier) source(job *rivertype.JobRow) backoff.Source {
	def := backoff.Key(strconv.FormatInt(job.ID, 10))
	if r.key == nil {
		return def
	}
	src, perr := safe.Value("key", def, func() backoff.Source { return r.key(job) })
	r.notify.Report(perr)
	return src
}

// Resolution is the precision of the fire times a Retrier hands River: they
// are rounded up to whole milliseconds, the coarsest precision River's
// drivers store (SQLite rounds to the nearest millisecond, PostgreSQL to
// the microsecond), so the stored time is never before the computed one.
const Resolution = time.Millisecond

// later returns t, or now when t is zero or before now, rounded up to a
// whole [Resolution].
func later(t, now time.Time) time.Time {
	if t.Before(now) {
		t = now
	}
	return ceil(t)
}

// ceil rounds t up to a whole Resolution.
func ceil(t time.Time) time.Time {
	r := t.Truncate(Resolution)
	if r.Before(t) {
		r = r.Add(Resolution)
	}
	return r
}
