package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// checkNamed returns the suite's check with the given name.
func checkNamed(t *testing.T, name string) check {
	t.Helper()
	for _, c := range checks {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no check named %q", name)
	return check{}
}

// findings runs one check against h in a subtest and returns its
// violations.
func findings(t *testing.T, h Harness, name string) []string {
	t.Helper()
	var found []string
	t.Run(name, func(t *testing.T) {
		found = runCheck(t, h, checkNamed(t, name), nil)
	})
	return found
}

// A broken harness is the reference engine with one planted defect. Each
// must fail the check written to catch it, with a message that names the
// defect, and must still pass a check the defect does not touch (so the
// failure is for the right reason, not because the harness is broken in
// general).
var brokenCases = []struct {
	name  string
	fault fault
	// fails maps each check the defect must fail to a phrase that must
	// appear in one of its violations.
	fails map[string]string
	// passes is a check the defect must not fail.
	passes string
	// passesAll says the defect must fail no check but those of fails:
	// every other check of the suite is run and must pass.
	passesAll bool
}{
	{
		name:   "attempt numbering off by one",
		fault:  faultAttemptOffBy1,
		fails:  map[string]string{"AttemptNumbering": "was reported as Job.Attempt 0, want 1 (attempts are 1-based"},
		passes: "Schedule",
	},
	{
		name:  "cap one too high",
		fault: faultCapPlusOne,
		fails: map[string]string{
			"AttemptsCap": "ran 2 times, want 1 (MaxAttempts 1 counts every run",
			"Schedule":    "the hook retries, want it to give up (exhausted)",
		},
		passes: "Permanent",
	},
	{
		name:   "retry fires early",
		fault:  faultEarly,
		fails:  map[string]string{"NeverEarlyBoundedLate": "retry fired early"},
		passes: "Schedule",
	},
	{
		name:   "retry fires late",
		fault:  faultLate,
		fails:  map[string]string{"NeverEarlyBoundedLate": "retry fired late"},
		passes: "Schedule",
	},
	{
		name:  "jitter ignores the key",
		fault: faultUnkeyed,
		fails: map[string]string{
			"Schedule": "jitter ignores the job key",
			"Herd":     "full jitter did not spread the cohort",
		},
		passes: "AttemptsCap",
	},
	{
		name:  "permanent error retried",
		fault: faultRetryPermanent,
		fails: map[string]string{
			"Permanent": "ran 5 times, want 1",
			"Schedule":  "failing with a permanent error: the hook retries, want it to give up (permanent)",
		},
		passes: "AttemptsCap",
	},
	{
		name:  "retry-after hint ignored",
		fault: faultIgnoreHint,
		fails: map[string]string{
			"RetryAfter": "retry-after hint ignored",
			"Schedule":   "a hook may round up, never down",
		},
		passes: "AttemptsCap",
	},
	{
		name:   "panicked job lost",
		fault:  faultDropPanicked,
		fails:  map[string]string{"Panic": "is still pending"},
		passes: "AttemptsCap",
	},
	{
		name:   "engine spreads retries by itself",
		fault:  faultSmear,
		fails:  map[string]string{"Herd": "the unjittered cohort did not re-fire together"},
		passes: "Schedule",
	},
	{
		name:   "payload changed",
		fault:  faultMangle,
		fails:  map[string]string{"AttemptNumbering": "is not the one the suite enqueued"},
		passes: "Schedule",
	},
	{
		name:   "observer not wired",
		fault:  faultNoObserver,
		fails:  map[string]string{"AttemptNumbering": "the observer was told about none of the"},
		passes: "Schedule",
	},
	{
		name:   "observer told a retry fires at once",
		fault:  faultToldAtOnce,
		fails:  map[string]string{"NeverEarlyBoundedLate": "the observer was told an earlier time than the engine applied"},
		passes: "Schedule",
	},
	{
		name:   "false alarm",
		fault:  faultFalseAlarm,
		fails:  map[string]string{"AttemptNumbering": "a false alarm"},
		passes: "Schedule",
	},
	{
		name:  "worker dies of a policy panic",
		fault: faultPolicyPanicKills,
		fails: map[string]string{"HostilePolicy": "is still pending"},
		// The panic is in the hook too, but HookDelay recovers it.
		passes: "AttemptsCap",
	},
	{
		name:   "huge delay overflows and fires at once",
		fault:  faultHugeAtOnce,
		fails:  map[string]string{"HostilePolicy": "a delay near the Duration limit fired at once"},
		passes: "AttemptsCap",
	},
	{
		name:   "worker dies of an error's text",
		fault:  faultErrorTextKills,
		fails:  map[string]string{"HostileErrors": "is still pending"},
		passes: "AttemptsCap",
	},
	{
		name:  "error message stored unchecked",
		fault: faultErrorRaw,
		fails: map[string]string{
			"HostileErrors": "is not valid UTF-8",
		},
		passes: "AttemptsCap",
	},
	{
		name:   "timed-out attempt told as a success",
		fault:  faultTimeoutSuccess,
		fails:  map[string]string{"Timeout": "the engine counts that as a failure, but the observer was told success"},
		passes: "AttemptsCap",
	},
	{
		name:   "timed-out attempt not counted",
		fault:  faultTimeoutUncounted,
		fails:  map[string]string{"Timeout": "was reported as Job.Attempt 1, want 2"},
		passes: "AttemptsCap",
	},
	{
		name:   "cancelled job runs anyway",
		fault:  faultCancelRuns,
		fails:  map[string]string{"Cancel": "a job never runs again once terminal"},
		passes: "AttemptsCap",
	},
	{
		name:   "interruption counted as a failure",
		fault:  faultInterruptCounted,
		fails:  map[string]string{"Restart": "was cut short by a restart; the observer was told retry, want interrupted"},
		passes: "AttemptsCap",
	},
	{
		name:   "stale worker's outcome applied",
		fault:  faultStaleApplied,
		fails:  map[string]string{"Reclaim": "its late success must not be applied"},
		passes: "AttemptsCap",
	},
	{
		name:   "decision applied to another engine's job with the same ID",
		fault:  faultSharedByID,
		fails:  map[string]string{"Concurrency": "was another engine's decision for a job with the same ID applied?"},
		passes: "AttemptsCap",
	},
	{
		name:   "bookkeeping leaks",
		fault:  faultLeak,
		fails:  map[string]string{"Bookkeeping": "bookkeeping leaks"},
		passes: "Schedule",
	},
	{
		name:   "give-up hook called twice",
		fault:  faultGiveUpTwice,
		fails:  map[string]string{"GiveUp": "the give-up hook was called 2 times for it; want exactly once"},
		passes: "Schedule",
	},
	{
		name:   "give-up hook called for a success",
		fault:  faultGiveUpOnSuccess,
		fails:  map[string]string{"GiveUp": "yet the give-up hook was called 1 times for it"},
		passes: "Permanent",
	},
	{
		name:   "hook lets a policy's panic through",
		fault:  faultHookUnguarded,
		fails:  map[string]string{"HostilePolicy": "panicked: conformance: hostile policy panics at attempt 2; the adapter's hook must recover"},
		passes: "AttemptsCap",
	},
	{
		name:  "exhausted and permanent told the other way round",
		fault: faultOutcomeSwapped,
		fails: map[string]string{"GiveUp": "the observer was told exhausted at attempt 1, below the cap 3"},
		// The hook is told what the observer is: both are wrong the same
		// way, so only the outcomes themselves show it.
		passes: "Schedule",
	},
	{
		name:   "attempts ended without their context",
		fault:  faultEndedOffContext,
		fails:  map[string]string{"AttemptNumbering": "came without the context AttemptStarted returned"},
		passes: "Schedule",
	},
	{
		name:   "handler run without the observer's context",
		fault:  faultHandlerOffContext,
		fails:  map[string]string{"AttemptNumbering": "the handler never got the context Observer.AttemptStarted returned"},
		passes: "Schedule",
	},
	{
		name:   "a breaker that spends attempts",
		fault:  faultBreakerSpends,
		fails:  map[string]string{"Breaker": "runs the breaker deferred spent an attempt"},
		passes: "AttemptsCap",
	},
	{
		name:   "a breaker that releases the backlog at once",
		fault:  faultBreakerFlood,
		fails:  map[string]string{"Breaker": "the backlog was released at once, not at the budget's rate"},
		passes: "AttemptsCap",
	},
	{
		name:   "a breaker that never closes",
		fault:  faultBreakerNeverCloses,
		fails:  map[string]string{"Breaker": "want closed: a probe's success must close it"},
		passes: "AttemptsCap",
	},
	{
		name:   "kind rules ignored",
		fault:  faultIgnoreKinds,
		fails:  map[string]string{"KindRules": "ran 3 times, want 2"},
		passes: "AttemptsCap",
	},
	{
		name:  "look-alike jobs matched by payload",
		fault: faultMatchByPayload,
		fails: map[string]string{
			"LookAlike": "was another job's delay told?",
			"Mix":       "replay it alone with: go test",
		},
		passes:    "AttemptsCap",
		passesAll: true,
	},
	{
		name:      "the engine's own retry told as the adapter's give-up",
		fault:     faultEngineToldOwn,
		fails:     map[string]string{"EngineDecision": "want the engine's decision, outcome \"engine\""},
		passes:    "AttemptsCap",
		passesAll: true,
	},
	{
		name:      "a delay rounded down from a kind's third retry on",
		fault:     faultRoundDownLate,
		fails:     map[string]string{"Mix": "the engine ran it earlier than it said"},
		passes:    "KindRules",
		passesAll: true,
	},
	{
		name:   "engine's cancel told as a plain error",
		fault:  faultCancelUntyped,
		fails:  map[string]string{"CancelStory": "want an *observe.CancelledError"},
		passes: "AttemptsCap",
	},
}

// TestBrokenHarnesses runs every broken harness in a synctest bubble,
// where timing is exact and the outcome deterministic, and checks that
// every check of the suite is failed by at least one of them: a check
// that cannot fail is a defect.
func TestBrokenHarnesses(t *testing.T) {
	fixMixSeed(t, brokenMixSeed)
	failed := map[string]bool{}
	for _, bc := range brokenCases {
		t.Run(bc.name, func(t *testing.T) {
			h := &ReferenceHarness{synctest: true, fault: bc.fault}
			for name, phrase := range bc.fails {
				got := findings(t, h, name)
				for _, v := range got[:min(len(got), 2)] {
					t.Logf("%s caught: %s", name, v)
				}
				if !containsPhrase(got, phrase) {
					t.Errorf("%s: %s passed or failed for another reason; want a violation containing %q, got %d:\n%s",
						bc.name, name, phrase, len(got), strings.Join(got, "\n"))
					continue
				}
				failed[name] = true
			}
			passes := []string{bc.passes}
			if bc.passesAll {
				passes = nil
				for _, c := range checks {
					if _, caught := bc.fails[c.name]; !caught {
						passes = append(passes, c.name)
					}
				}
			}
			for _, name := range passes {
				if got := findings(t, h, name); len(got) > 0 {
					t.Errorf("%s: %s failed, want it to pass (the defect does not touch it):\n%s", bc.name, name, strings.Join(got, "\n"))
				}
			}
		})
	}
	for _, c := range checks {
		if !failed[c.name] {
			t.Errorf("no broken harness fails check %s: a check that cannot fail is a defect", c.name)
		}
	}
}

// brokenMixSeed is the seed of the Mix check in the broken-harness tests,
// unless -conformance.seed gives one: their outcome must not depend on
// the draw.
const brokenMixSeed = 1

// fixMixSeed sets the Mix check's seed for the test, unless the flag set
// one.
func fixMixSeed(t *testing.T, seed uint64) {
	t.Helper()
	if *mixSeed != 0 {
		return
	}
	*mixSeed = seed
	t.Cleanup(func() { *mixSeed = 0 })
}

// TestMixSeeds runs the Mix check for several seeds on the reference
// engine, which must pass each, and on the engine that rounds a kind's
// delays down from its third retry on, which every seed must catch: the
// mix's draw always holds a kind retried three times and more.
func TestMixSeeds(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		*mixSeed = seed
		if got := findings(t, ReferenceSynctest(), "Mix"); len(got) > 0 {
			t.Errorf("seed %d: the reference engine failed the Mix:\n%s", seed, strings.Join(got, "\n"))
		}
		if got := findings(t, &ReferenceHarness{synctest: true, fault: faultRoundDownLate}, "Mix"); !containsPhrase(got, "the engine ran it earlier than it said") ||
			!containsPhrase(got, fmt.Sprintf("-conformance.seed=%d", seed)) {
			t.Errorf("seed %d: the Mix did not catch the delay rounded down, or did not name its seed; got:\n%s", seed, strings.Join(got, "\n"))
		}
	}
	*mixSeed = 0
}

// TestMixReplays checks that a seed draws the same mix every time, so the
// command a failing mix prints replays it.
func TestMixReplays(t *testing.T) {
	draw := func(seed uint64) string {
		m := newMix(seed, Limits{})
		var b strings.Builder
		for _, k := range append([]string{""}, mixKinds...) {
			fmt.Fprintf(&b, "%s=%s;", k, m.rules[k])
		}
		for range 10 {
			fmt.Fprintf(&b, "%s %+v;", m.kind(), m.script(4))
		}
		return b.String()
	}
	if a, b := draw(42), draw(42); a != b {
		t.Errorf("seed 42 drew two mixes:\n%s\n%s", a, b)
	}
	if a, b := draw(42), draw(43); a == b {
		t.Errorf("seeds 42 and 43 drew the same mix:\n%s", a)
	}
	if got, want := replayCommand("TestConformanceRedis/Mix", 7), "go test -race -count=1 -run '^TestConformanceRedis$/^Mix$' ./conformance/ -conformance.seed=7"; got != want {
		t.Errorf("replayCommand = %q, want %q", got, want)
	}
}

// TestBrokenHarnessesRealClock repeats the timing defects, and those of
// the lifecycle and hostile checks that depend on timing, on the real
// clock, where lateness is measured rather than exact.
func TestBrokenHarnessesRealClock(t *testing.T) {
	fixMixSeed(t, brokenMixSeed)
	for _, f := range []struct {
		fault  fault
		check  string
		phrase string
	}{
		{faultEarly, "NeverEarlyBoundedLate", "retry fired early"},
		{faultLate, "NeverEarlyBoundedLate", "retry fired late"},
		{faultToldAtOnce, "NeverEarlyBoundedLate", "they disagree: want FireAt at the decision plus the delay"},
		{faultHugeAtOnce, "HostilePolicy", "a delay near the Duration limit fired at once"},
		{faultTimeoutSuccess, "Timeout", "the engine counts that as a failure, but the observer was told success"},
		{faultInterruptCounted, "Restart", "want interrupted"},
		{faultSharedByID, "Concurrency", "was another engine's decision for a job with the same ID applied?"},
		{faultBreakerFlood, "Breaker", "the backlog was released at once, not at the budget's rate"},
		{faultBreakerSpends, "Breaker", "runs the breaker deferred spent an attempt"},
		{faultMatchByPayload, "LookAlike", "was another job's delay told?"},
		{faultEngineToldOwn, "EngineDecision", "want the engine's decision, outcome \"engine\""},
		{faultRoundDownLate, "Mix", "the engine ran it earlier than it said"},
	} {
		// On the real clock a timing fault shows only if the machine lets
		// it: a retry fired at half its delay is not early once a stall
		// has held the timer past the whole delay. The fault must show in
		// one of three runs; each run that hid it is logged.
		var got []string
		for try := 1; try <= 3; try++ {
			h := &ReferenceHarness{fault: f.fault}
			if got = findings(t, h, f.check); containsPhrase(got, f.phrase) {
				break
			}
			t.Logf("fault %d: %s: run %d of 3 hid the fault (the machine's stalls can): %s", f.fault, f.check, try, strings.Join(got, "; "))
		}
		if !containsPhrase(got, f.phrase) {
			t.Errorf("fault %d: %s: want a violation containing %q in one of 3 runs, got:\n%s", f.fault, f.check, f.phrase, strings.Join(got, "\n"))
		}
	}
}

// bareHarness is the reference harness with none of the optional
// interfaces: its engines are plain Engines, and it cannot share an
// adapter value. lacks, when set, is what it declares it lacks.
type bareHarness struct {
	ref   *ReferenceHarness
	lacks map[Feature]string
}

func (b bareHarness) Name() string   { return "bare" }
func (b bareHarness) Limits() Limits { return b.ref.Limits() }
func (b bareHarness) Synctest() bool { return b.ref.Synctest() }
func (b bareHarness) Start(t testing.TB, cfg Config) Engine {
	return struct{ Engine }{b.ref.Start(t, cfg)}
}
func (b bareHarness) HookDelay(cfg Config, id string, attempt int, err error) (time.Duration, bool) {
	return b.ref.HookDelay(cfg, id, attempt, err)
}

// lackingHarness is a bareHarness that declares what it lacks.
type lackingHarness struct{ bareHarness }

func (l lackingHarness) Lacks() map[Feature]string { return l.lacks }

// featureChecks maps each feature every adapter is expected to offer to
// the check that needs it.
var featureChecks = map[Feature]string{
	FeatureKinds:       "KindRules",
	FeatureErrors:      "HostileErrors",
	FeatureCancel:      "Cancel",
	FeatureRestart:     "Restart",
	FeatureBookkeeping: "Bookkeeping",
	FeatureShared:      "Concurrency",
	FeatureBreaker:     "Breaker",
}

// TestMissingFeatures checks that a harness without an expected feature
// fails the check that needs it, saying what to implement, and that one
// that declares the lack is skipped with the reason logged. A missing
// ReclaimEngine, which is optional, is no violation.
func TestMissingFeatures(t *testing.T) {
	bare := bareHarness{ref: ReferenceSynctest()}
	for f, name := range featureChecks {
		want := "the harness does not offer " + string(f)
		if got := findings(t, bare, name); !containsPhrase(got, want) {
			t.Errorf("%s without %s: want a violation containing %q, got:\n%s", name, f, want, strings.Join(got, "\n"))
		}
	}
	if got := findings(t, bare, "Reclaim"); len(got) > 0 {
		t.Errorf("Reclaim without ReclaimEngine (optional): want it skipped, got:\n%s", strings.Join(got, "\n"))
	}
	lacks := map[Feature]string{}
	for f := range featureChecks {
		lacks[f] = "the engine has no such tool"
	}
	declared := lackingHarness{bareHarness{ref: ReferenceSynctest(), lacks: lacks}}
	for f, name := range featureChecks {
		if got := findings(t, declared, name); len(got) > 0 {
			t.Errorf("%s, declared lacking %s: want it skipped, got:\n%s", name, f, strings.Join(got, "\n"))
		}
	}
}

// TestLacksReported checks that RunReport carries the declared lacks and
// prints them.
func TestLacksReported(t *testing.T) {
	lacks := map[Feature]string{}
	for f := range featureChecks {
		lacks[f] = "the engine has no such tool"
	}
	lacks[FeatureRestart] = "the engine cannot be restarted in a test"
	var r Report
	t.Run("run", func(t *testing.T) {
		r = RunReport(t, lackingHarness{bareHarness{ref: ReferenceSynctest(), lacks: lacks}})
	})
	if r.Lacks[FeatureRestart] != lacks[FeatureRestart] || !strings.Contains(r.String(), "lacks RestartEngine: the engine cannot be restarted in a test") {
		t.Errorf("report lacks %v, table:\n%s\nwant the declared lack and its reason", r.Lacks, r)
	}
}

// TestReferenceCapped runs the suite on the reference engine with declared
// limits (a 10 ms resolution, a longest delay, an attempts cap, a limit on
// stored error messages and a timeout resolution), which it applies as a
// real engine would: the suite's handling of declared limits must let an
// honest engine pass.
func TestReferenceCapped(t *testing.T) {
	Run(t, &ReferenceHarness{synctest: true, capped: true})
}

func containsPhrase(found []string, phrase string) bool {
	return slices.ContainsFunc(found, func(s string) bool { return strings.Contains(s, phrase) })
}

// TestReferencePassesEachCheck guards the broken-harness test from the
// other side: with no fault planted, every check passes.
func TestReferencePassesEachCheck(t *testing.T) {
	h := ReferenceSynctest()
	for _, c := range checks {
		if got := findings(t, h, c.name); len(got) > 0 {
			t.Errorf("%s failed on the reference harness:\n%s", c.name, strings.Join(got, "\n"))
		}
	}
}

func TestHerdWindow(t *testing.T) {
	for _, tc := range []struct {
		lim    Limits
		window time.Duration
		slice  time.Duration
		bound  float64
	}{
		{Limits{}, 200 * time.Millisecond, 20 * time.Millisecond, 0.25},
		{Limits{Lateness: 100 * time.Millisecond}, time.Second, 100 * time.Millisecond, 0.25},
		{Limits{Resolution: time.Second, Lateness: 250 * time.Millisecond}, 5 * time.Second, 1250 * time.Millisecond, 0.625},
		{Limits{Resolution: time.Second, Lateness: 2 * time.Second}, 12 * time.Second, 3 * time.Second, 0.625},
	} {
		w, s, b := herdWindow(tc.lim)
		if w != tc.window || s != tc.slice || b != tc.bound {
			t.Errorf("herdWindow(%+v) = %v, %v, %v; want %v, %v, %v", tc.lim, w, s, b, tc.window, tc.slice, tc.bound)
		}
	}
}

func TestSummarize(t *testing.T) {
	var late []time.Duration
	for i := 100; i >= 1; i-- { // 1ms..100ms, shuffled order must not matter
		late = append(late, time.Duration(i)*time.Millisecond)
	}
	late = append(late, -3*time.Millisecond)
	l := summarize(late)
	want := Lateness{Retries: 101, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond, Early: 1}
	if l != want {
		t.Errorf("summarize = %+v, want %+v", l, want)
	}
	if z := summarize(nil); z != (Lateness{}) {
		t.Errorf("summarize(nil) = %+v, want zero", z)
	}
}

func TestScriptExpect(t *testing.T) {
	for _, tc := range []struct {
		s     script
		max   int
		runs  int
		final State
	}{
		{script{}, 3, 1, StateCompleted},
		{script{Fail: 2}, 3, 3, StateCompleted},
		{script{Fail: 3}, 3, 3, StateFailed},
		{script{Always: true}, 5, 5, StateFailed},
		{script{Permanent: true}, 5, 1, StateFailed},
		{script{Always: true, Panic: true}, 2, 2, StateFailed},
	} {
		runs, final := tc.s.expect(tc.max)
		if runs != tc.runs || final != tc.final {
			t.Errorf("%+v.expect(%d) = %d, %v; want %d, %v", tc.s, tc.max, runs, final, tc.runs, tc.final)
		}
		// The script's own outcomes must agree with expect.
		n := 1
		for ; n <= tc.max; n++ {
			if !tc.s.fails(n) || tc.s.Permanent {
				break
			}
		}
		if got := min(n, tc.max); got != tc.runs {
			t.Errorf("%+v under cap %d: outcomes give %d runs, expect says %d", tc.s, tc.max, got, tc.runs)
		}
	}
}

// TestReclaimCounted runs the Reclaim check on the reference engine whose
// reclaim counts the attempt as a failure and ends it for the observer
// before the stale handler returns: an honest design the check must pass,
// on fake time and on the real clock.
func TestReclaimCounted(t *testing.T) {
	for _, h := range []*ReferenceHarness{{synctest: true, reclaimCounts: true}, {reclaimCounts: true}} {
		if got := findings(t, h, "Reclaim"); len(got) > 0 {
			t.Errorf("%s: Reclaim failed:\n%s", h.Name(), strings.Join(got, "\n"))
		}
	}
}

// TestEngineDecisionSkips checks that the EngineDecision check is skipped,
// not failed, for a harness that declares its engine has no decision of
// its own, and for one whose engine does not implement EngineDecider, and
// that the reference engine, which does, runs it.
func TestEngineDecisionSkips(t *testing.T) {
	for _, tc := range []struct {
		h    Harness
		skip bool
	}{
		{lackingHarness{bareHarness{ref: ReferenceSynctest(), lacks: map[Feature]string{FeatureEngineDecisions: "rebound is the engine"}}}, true},
		{bareHarness{ref: ReferenceSynctest()}, true},
		{bareHarness{ref: Reference()}, true},
		{ReferenceSynctest(), false},
	} {
		var skipped bool
		var found []string
		t.Run(tc.h.Name(), func(t *testing.T) {
			t.Cleanup(func() { skipped = t.Skipped() })
			found = runCheck(t, tc.h, checkNamed(t, "EngineDecision"), nil)
		})
		if skipped != tc.skip || len(found) > 0 {
			t.Errorf("%s: EngineDecision skipped %v with %d violations, want skipped %v and none:\n%s", tc.h.Name(), skipped, len(found), tc.skip, strings.Join(found, "\n"))
		}
	}
}

// TestTimeoutMovesOn runs the Timeout and Mix checks on the reference
// engine that ends an attempt at its timeout's deadline and runs the job
// again while the handler that ignores its context still runs, as the
// native queue does (docs/native.md: the worker moves on at the deadline):
// an honest design both checks must pass, on fake time and on the real
// clock, the Mix at the seed the native queue failed on a Cluster before
// the suite waited for such a run to return. The defects the Timeout check
// is written for must still fail it on that engine.
func TestTimeoutMovesOn(t *testing.T) {
	fixMixSeed(t, 18263050993340071839)
	for _, h := range []*ReferenceHarness{{synctest: true, movesOn: true}, {movesOn: true}} {
		for _, name := range []string{"Timeout", "Mix"} {
			if got := findings(t, h, name); len(got) > 0 {
				t.Errorf("%s: %s failed:\n%s", h.Name(), name, strings.Join(got, "\n"))
			}
		}
	}
	for _, tc := range []struct {
		fault  fault
		phrase string
	}{
		{faultTimeoutSuccess, "the engine counts that as a failure, but the observer was told success"},
		{faultTimeoutUncounted, "was reported as Job.Attempt 1, want 2"},
	} {
		h := &ReferenceHarness{synctest: true, movesOn: true, fault: tc.fault}
		if got := findings(t, h, "Timeout"); !containsPhrase(got, tc.phrase) {
			t.Errorf("%s with fault %d: Timeout did not catch it; want a violation containing %q, got:\n%s", h.Name(), tc.fault, tc.phrase, strings.Join(got, "\n"))
		}
	}
}
