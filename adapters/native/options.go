package native

import (
	"errors"
	"fmt"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/option"
	"github.com/rebound-go/rebound/observe"
)

// A WorkerOption configures a [Worker].
type WorkerOption func(*Worker) error

// WithConcurrency sets how many handlers run at once (default 10).
func WithConcurrency(n int) WorkerOption {
	return func(w *Worker) error {
		if n < 1 {
			return fmt.Errorf("native: WithConcurrency: %d is below 1, want the number of handlers run at once", n)
		}
		w.concurrency = n
		return nil
	}
}

// WithPrefetch sets how many jobs the worker reserves ahead of its free
// handlers (default: as many as its concurrency, at most 100; 0 reserves
// only for a free handler). A prefetched job holds its lease, renewed
// like a running job's, and starts as soon as a handler frees up, without
// waiting for a round trip to Redis, while its lease as last renewed has a
// tenth of it left (at least 5ms) on the worker's clock; a job held longer
// (the process was stopped, Redis unreachable) starts only after a renewal
// of its lease showed it is still this worker's. It counts its attempt
// only when it was reserved, as every job does. Shutdown does not run the prefetched
// jobs: it puts them back at once, uncounted (their attempt given back),
// at the front of the queue in their order, for other workers (no observer
// hears of them); only the running ones finish within its deadline.
// More prefetch keeps handlers busier when round trips are slow (a loaded
// machine), at the price of jobs waiting on this worker that an idle
// worker could have run. For jobs that run for seconds or more, where a
// round trip is nothing beside the job, use WithPrefetch(0): a job
// reserved ahead would wait for a handler of this worker to finish while
// another worker sits idle.
func WithPrefetch(n int) WorkerOption {
	return func(w *Worker) error {
		if n < 0 {
			return fmt.Errorf("native: WithPrefetch: %d is negative, want >= 0 jobs reserved ahead", n)
		}
		w.prefetch = n
		return nil
	}
}

// WithLease sets how long a reserved job stays with its worker without a
// renewal (default 30s). The worker renews every third of it; a job whose
// worker stops renewing is reclaimed once it expires, and that attempt
// counts. d must be at least 50ms.
func WithLease(d time.Duration) WorkerOption {
	return func(w *Worker) error {
		if d < 50*time.Millisecond {
			return fmt.Errorf("native: WithLease: %s is below 50ms, want a duration well above one Redis round trip", d)
		}
		w.lease = d
		return nil
	}
}

// WithReclaimInterval sets how often the worker looks for expired leases
// (default: half the lease, at most 5s).
func WithReclaimInterval(d time.Duration) WorkerOption {
	return func(w *Worker) error {
		if d <= 0 {
			return fmt.Errorf("native: WithReclaimInterval: %s is not positive, want > 0", d)
		}
		w.reclaim = d
		return nil
	}
}

// WithShutdownTimeout sets how long [Worker.Run] lets running handlers
// finish once its context ends (default 10s); the jobs of handlers still
// running then go back to the queue uncounted (see [Worker.Shutdown]).
func WithShutdownTimeout(d time.Duration) WorkerOption {
	return func(w *Worker) error {
		if d < 0 {
			return fmt.Errorf("native: WithShutdownTimeout: %s is negative, want >= 0", d)
		}
		w.shutdown = d
		return nil
	}
}

// WithReconnectPolicy sets the backoff the worker waits between tries when
// Redis fails. nil, the default, is jitter(exponential(10ms, 2s)).
func WithReconnectPolicy(p backoff.Policy) WorkerOption {
	return func(w *Worker) error {
		if p == nil {
			p = defaultReconnect
		}
		w.reconnect = p
		return nil
	}
}

// defaultReconnect is the worker's reconnect backoff unless
// WithReconnectPolicy sets another.
var defaultReconnect = backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(10*time.Millisecond, 2*time.Second))))

// WithObserver reports every attempt to o: AttemptStarted before the
// handler runs (its context is the handler's), AttemptEnded once the
// attempt's outcome is stored. Observer panics are recovered and reported
// to the error handler. nil, the default, reports to no observer.
func WithObserver(o observe.Observer) WorkerOption {
	return func(w *Worker) error { w.notify.Observer = o; return nil }
}

// WithGiveUp sets the function told of every job the worker gives up: its
// last attempt failed and the rule decided it is exhausted (it ran its
// MaxAttempts) or permanent ([backoff.Permanent]), and the fail script
// moved it to the failed set. It is called once per such job, after the
// observer is told of the attempt, with the attempt's context; a job given
// up by a reclaim (its workers died) is told of by the worker that
// reclaimed it. The call is at least once across crashes: the fail
// script records in Redis that it is owed, and the record is cleared once
// f returned; if the worker dies in between, another worker with a hook
// makes the call once the dead one's lease on it (the lease length,
// [WithLease]) has run out, with the context.Background(), the job's name
// and metadata as stored and its error as the stored text (errors.Is still
// finds ErrLeaseExpired, ErrTimeout and ErrCancelled). An f that runs
// longer than the lease may be called again by another worker. nil, the
// default, is none.
func WithGiveUp(f observe.GiveUpFunc) WorkerOption {
	return func(w *Worker) error { w.notify.GiveUp = f; return nil }
}

// WithErrorHandler sets the function told of every error the worker meets
// outside a handler: Redis unreachable (the worker keeps retrying with its
// reconnect backoff), a lease lost to a reclaim, a panic of user code it
// recovered (an observer, key function or policy; an *observe.PanicError).
// It is called from the worker's goroutines and must be safe for concurrent
// use. nil, the default, logs each error with slog.Default at level Error.
func WithErrorHandler(f func(error)) WorkerOption {
	return func(w *Worker) error { w.notify.OnError = f; return nil }
}

// WithKey sets the function that picks a job's jitter source. The default is
// backoff.Key(job.ID), which makes one job's schedule reproducible and
// identical on every rebound adapter; key by a business ID carried in the
// payload or metadata to give one logical job the same schedule on every
// engine. The function sees the attempt that failed (for a job reclaimed
// from a dead worker, the job as stored, with the attempt that was lost)
// and must not change it. A key function that panics is recovered,
// reported to the error handler as an *observe.PanicError with Op "key",
// and the default key used. nil is the default.
func WithKey(f func(job *Job) backoff.Source) WorkerOption {
	return func(w *Worker) error { w.key = f; return nil }
}

// WithFallbackDelay sets the retry delay used when deciding a failed
// attempt panics: a policy whose Delay panics, or an error whose own
// methods panic while the rule looks for [backoff.Permanent] or a
// [backoff.RetryAfter] hint in it. The attempt is then still decided: a
// permanent error stays permanent when that can be told, an attempt at the
// job's cap is exhausted, and any other is retried after d. The panic is
// reported to the error handler as an *observe.PanicError with Op
// "policy". d must be positive; the default is [DefaultFallbackDelay].
func WithFallbackDelay(d time.Duration) WorkerOption {
	return func(w *Worker) error {
		switch {
		case d < 0:
			return fmt.Errorf("native: WithFallbackDelay: %s is negative, want > 0", d)
		case d == 0:
			return errors.New("native: WithFallbackDelay: 0s is zero, want > 0")
		}
		w.fallback = d
		return nil
	}
}

// WithTimeout gives every attempt a deadline d after it starts (default:
// none). The handler's context ends at the deadline, with cause
// [ErrTimeout]. An attempt whose handler has not returned by then has
// failed: the worker ends it at once with ErrTimeout (stored, decided by
// the rule and reported like any failure), frees its slot for the next
// job and keeps nothing the handler does or returns afterwards. A handler
// that returns at or past its deadline has failed the same way, whatever
// it returns, even when the deadline's timer has not fired yet (a process
// stopped or starved across the deadline): the return is checked against
// the deadline on the monotonic clock. A handler
// that ignores its context keeps running in its goroutine (Go cannot stop
// it) while its job moves on, so it must not touch the Job after its
// deadline. d must not be negative; 0 means no timeout.
func WithTimeout(d time.Duration) WorkerOption {
	return func(w *Worker) error {
		if d < 0 {
			return fmt.Errorf("native: WithTimeout: %s is negative, want > 0 (or 0 for none)", d)
		}
		w.timeout = d
		return nil
	}
}

// WithKindRule applies rule, instead of the worker's, to jobs named kind
// (see [WithName]): their delays and their attempts cap (unless a job was
// enqueued with its own, [WithMaxAttempts]).
func WithKindRule(kind string, rule backoff.Rule) WorkerOption {
	return func(w *Worker) error {
		if kind == "" {
			return errors.New("native: WithKindRule: kind is empty, want a job name")
		}
		if err := option.CheckRule(rule); err != nil {
			return fmt.Errorf("native: WithKindRule(%q): %w", kind, err)
		}
		if w.kinds == nil {
			w.kinds = make(map[string]backoff.Rule)
		}
		w.kinds[kind] = rule
		return nil
	}
}
