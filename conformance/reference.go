package conformance

import (
	"testing"
	"time"

	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/memstore"
)

// ReferenceHarness is the reference [Harness]: an in-memory engine on the
// core, one goroutine per attempt and one time.Timer per scheduled retry.
// It passes the suite, and it is the example of how to write a harness:
// Start builds a worker around cfg (its rules, observer, give-up hook,
// error handler, fallback delay, timeout and key) and tears it down with
// t.Cleanup, HookDelay calls the very function the worker calls when an
// attempt fails, Limits states what the engine promises, and its engines
// implement every optional interface: [KindEngine], [ErrorEngine],
// [CancelEngine], [RestartEngine], [ReclaimEngine], [BookkeepingEngine];
// the harness is a [SharedHarness] and a [BreakerHarness] too.
//
// Build one with [Reference] or [ReferenceSynctest].
type ReferenceHarness struct {
	synctest bool
	// capped makes the engine declare and apply limits on delays,
	// attempts, error messages, timeouts and fire times, as a real engine
	// does, so that the suite's handling of declared limits is tested too.
	capped bool
	// reclaimCounts makes Reclaim count the reclaimed attempt as a failure
	// and end it for the observer at once, the other honest way an engine
	// can treat a reclaim.
	reclaimCounts bool
	// movesOn makes an attempt that outlives Config.Timeout end at its
	// deadline, counted as failed and followed up at once, while the
	// handler that ignores its context goes on running (its late return
	// dropped): the other honest way an engine can apply a timeout, the
	// native queue's.
	movesOn bool
	fault   fault // a deliberate defect, for the suite's own tests
}

// fault is a defect the suite's own tests plant in the reference engine to
// prove that the check meant to catch it does.
type fault int

const (
	faultNone               fault = iota
	faultAttemptOffBy1            // reports Job.Attempt 0-based
	faultCapPlusOne               // allows one run more than MaxAttempts
	faultEarly                    // fires retries at half their delay
	faultLate                     // fires retries well after their delay
	faultUnkeyed                  // keys every job's jitter by the same key
	faultRetryPermanent           // retries errors marked backoff.Permanent
	faultIgnoreHint               // ignores backoff.RetryAfter hints
	faultDropPanicked             // loses a job whose handler panicked
	faultMangle                   // hands the handler a changed payload
	faultSmear                    // spreads retries by itself, as a slow engine would
	faultNoObserver               // never tells Config.Observer anything
	faultToldAtOnce               // tells observers a retry fires at once
	faultFalseAlarm               // reports an internal error after every success
	faultPolicyPanicKills         // the worker dies when the policy panics
	faultHugeAtOnce               // a delay near the Duration limit overflows and fires at once
	faultErrorTextKills           // the worker dies reading a hostile error's text
	faultErrorRaw                 // stores error messages whole and unchecked
	faultTimeoutSuccess           // counts an overrun as a failure but tells observers the handler's success
	faultCancelRuns               // a cancelled waiting job still runs at its fire time
	faultTimeoutUncounted         // an attempt that outlived its timeout uses up no attempt: the next run has its number again
	faultInterruptCounted         // counts a run cut short by a restart as a failed attempt
	faultStaleApplied             // applies a reclaimed run's late success
	faultSharedByID               // engines sharing the adapter mix up decisions of jobs with the same ID
	faultLeak                     // keeps a bookkeeping entry for every job given up
	faultGiveUpTwice              // ends a given-up attempt twice: observer and hook told twice
	faultGiveUpOnSuccess          // calls the give-up hook for a job that succeeds after retries
	faultIgnoreKinds              // runs every kind under Config.Rule
	faultHookUnguarded            // HookDelay lets a policy's panic through
	faultOutcomeSwapped           // tells exhausted jobs permanent and permanent ones exhausted
	faultEndedOffContext          // ends attempts with a context other than the one AttemptStarted returned
	faultHandlerOffContext        // runs the handler without the context AttemptStarted returned
	faultBreakerSpends            // a run the breaker defers spends an attempt
	faultBreakerFlood             // asks the breaker about every run as a first run: the budget never holds the backlog back
	faultBreakerNeverCloses       // reports a success of a bound job as neutral: a probe's success never closes the breaker
	faultCancelUntyped            // tells the engine's cancel of a running attempt as a plain error, not an *observe.CancelledError
	faultMatchByPayload           // finds the run an ending attempt belongs to by its payload: look-alike jobs swap decisions and stories
	faultEngineToldOwn            // tells a retry the engine decided on its own as the adapter's permanent decision, and gives the job up
	faultRoundDownLate            // waits a kind's delay rounded down to 10 ms from its third retry on: only random mixes reach it
)

// Reference returns the reference harness on the real clock. It declares
// exact resolution and a lateness of 100 ms: Go timers fire within a
// millisecond on an idle machine, and the rest is room for a busy
// two-core CI runner under the race detector.
func Reference() *ReferenceHarness { return &ReferenceHarness{} }

// ReferenceSynctest returns the reference harness for testing/synctest:
// [Run] runs each check in its own bubble, where the engine's timers fire
// on fake time exactly when due, so it declares zero lateness and the
// whole suite takes next to no real time.
func ReferenceSynctest() *ReferenceHarness { return &ReferenceHarness{synctest: true} }

// Name returns "reference" or "reference/synctest" (with "/capped" for the
// variant that declares engine limits).
func (h *ReferenceHarness) Name() string {
	name := "reference"
	if h.synctest {
		name += "/synctest"
	}
	if h.capped {
		name += "/capped"
	}
	if h.movesOn {
		name += "/moves-on"
	}
	return name
}

// Synctest reports whether the harness runs in a testing/synctest bubble;
// see [SynctestHarness].
func (h *ReferenceHarness) Synctest() bool { return h.synctest }

// refMaxErrorBytes is the most bytes of an error message the reference
// engine stores.
const refMaxErrorBytes = 64 << 10

// Limits returns exact resolution, and a lateness of 100 ms on the real
// clock or 0 in a bubble. The engine keeps at most 64 KiB of an error
// message; it stores any delay and any attempts cap.
func (h *ReferenceHarness) Limits() Limits {
	lim := Limits{MaxErrorBytes: refMaxErrorBytes}
	if !h.synctest {
		lim.Lateness = 100 * time.Millisecond
	}
	if h.capped {
		lim.Resolution = 10 * time.Millisecond
		lim.MaxDelay = 100 * 365 * 24 * time.Hour
		lim.MaxAttempts = 32767
		lim.MaxErrorBytes = 1024
		lim.TimeoutResolution = 50 * time.Millisecond
	}
	return lim
}

// HookDelay returns what the engine's retry hook decides for the job after
// failed attempt number attempt.
func (h *ReferenceHarness) HookDelay(cfg Config, id string, attempt int, err error) (time.Duration, bool) {
	d, _ := newRefAdapter(h, cfg).decide(nil, id, "", attempt, err)
	return d.Delay, d.Retry()
}

// Start starts an in-memory worker for cfg. Every job runs at once in its
// own goroutine; a failed attempt that the hook retries is run again by a
// timer. t.Cleanup stops the timers and waits for running attempts.
func (h *ReferenceHarness) Start(t testing.TB, cfg Config) Engine {
	if cfg.Handler == nil {
		t.Fatalf("conformance: reference: Config.Handler is nil, want the job body")
	}
	return newRefEngine(t, newRefAdapter(h, cfg), cfg.Handler, "reference")
}

// StartShared starts one engine per Config, all on one adapter value built
// from cfgs[0]: its rules, observer, give-up hook and error handler, and
// what it keeps per job. Each engine numbers its jobs from 1.
func (h *ReferenceHarness) StartShared(t testing.TB, cfgs []Config) []Engine {
	if len(cfgs) == 0 {
		return nil
	}
	a := newRefAdapter(h, cfgs[0])
	out := make([]Engine, len(cfgs))
	for i, cfg := range cfgs {
		if cfg.Handler == nil {
			t.Fatalf("conformance: reference: Config.Handler %d is nil, want the job body", i)
		}
		out[i] = newRefEngine(t, a, cfg.Handler, "reference-"+string(rune('a'+i%26)))
	}
	return out
}

// BreakerStore returns an in-memory store (breaker/memstore) on the
// process's clock: the reference engine lives in one process.
func (h *ReferenceHarness) BreakerStore(_ testing.TB, rules breaker.Rules) breaker.Store {
	return memstore.New(rules, memstore.Options{})
}

var (
	_ SharedHarness   = (*ReferenceHarness)(nil)
	_ SynctestHarness = (*ReferenceHarness)(nil)
	_ BreakerHarness  = (*ReferenceHarness)(nil)
)
