package conformance

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A SynctestHarness is a [Harness] whose engine runs entirely on the
// standard library's clock and goroutines inside the test process (for
// example an in-memory scheduler, or an engine on miniredis dialled through
// an in-process pipe), so that it can run inside a testing/synctest bubble.
//
// When Synctest returns true, [Run] runs every check in its own bubble
// (synctest.Test), calling Start inside it: the engine's timers then run on
// fake time, long schedules take no real time, and measured lateness is
// exactly what the engine adds. Run itself must not be called inside a
// bubble, because it runs each check with t.Run, which a bubble forbids.
type SynctestHarness interface {
	Harness
	// Synctest reports whether every check should run in a bubble.
	Synctest() bool
}

// check is one named subtest of the suite.
type check struct {
	name string
	run  func(e *env)
	// skip, when not nil, returns why the check does not apply to the
	// harness ("" when it does), asked before the check starts.
	skip func(h Harness) string
}

// checks is the suite, in the order Run runs it.
var checks = []check{
	{name: "Schedule", run: checkSchedule},
	{name: "AttemptNumbering", run: checkAttemptNumbering},
	{name: "AttemptsCap", run: checkAttemptsCap},
	{name: "NeverEarlyBoundedLate", run: checkTiming},
	{name: "Permanent", run: checkPermanent},
	{name: "RetryAfter", run: checkRetryAfter},
	{name: "Panic", run: checkPanic},
	{name: "GiveUp", run: checkGiveUp},
	{name: "KindRules", run: checkKindRules},
	{name: "Timeout", run: checkTimeout},
	{name: "Cancel", run: checkCancel},
	{name: "CancelStory", run: checkCancelStory},
	{name: "EngineDecision", run: checkEngineDecision, skip: skipEngineDecision},
	{name: "Restart", run: checkRestart},
	{name: "Reclaim", run: checkReclaim},
	{name: "Concurrency", run: checkConcurrency},
	{name: "LookAlike", run: checkLookAlike},
	{name: "Bookkeeping", run: checkBookkeeping},
	{name: "Breaker", run: checkBreaker},
	{name: "Herd", run: checkHerd},
	// Last: an engine that fails these may take the whole test process
	// down (a panic on a worker goroutine), which loses what later checks
	// would have said.
	{name: "HostilePolicy", run: checkHostilePolicy},
	{name: "HostileErrors", run: checkHostileErrors},
	// The random mix holds hostile errors too.
	{name: "Mix", run: checkMix},
}

// Run runs the conformance suite against h, each check as a subtest of t
// named after it, and logs the lateness table of the adapter (see
// [Report]). It is what an adapter's own test calls:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, myHarness{...})
//	}
//
// Run must not be called inside a testing/synctest bubble; a harness that
// can run in one implements [SynctestHarness] instead.
func Run(t *testing.T, h Harness) {
	t.Helper()
	RunReport(t, h)
}

// RunReport is [Run] that also returns what the suite measured, for
// adapters that publish their lateness figures.
func RunReport(t *testing.T, h Harness) Report {
	t.Helper()
	lim := h.Limits()
	if lim.Resolution < 0 || lim.Lateness < 0 || lim.MaxDelay < 0 || lim.MaxAttempts < 0 || lim.MaxErrorBytes < 0 || lim.TimeoutResolution < 0 {
		t.Fatalf("conformance: harness %s declares negative limits (%+v), want every limit >= 0", h.Name(), lim)
	}
	var lacks map[Feature]string
	if lh, ok := h.(LackingHarness); ok {
		lacks = lh.Lacks()
		for f, reason := range lacks {
			if strings.TrimSpace(reason) == "" {
				t.Errorf("conformance: harness %s declares it lacks %s without a reason; say why the engine cannot offer it", h.Name(), f)
			}
		}
	}
	st := &stats{}
	began := time.Now()
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range runCheck(t, h, c, st) {
				t.Error(v)
			}
		})
	}
	r := st.report(h.Name(), lim)
	r.Lacks = lacks
	r.Elapsed = time.Since(began)
	t.Log(r.String())
	return r
}

// runCheck runs one check against h, in a bubble if h asks for one, and
// returns what it found wrong.
func runCheck(t *testing.T, h Harness, c check, st *stats) []string {
	t.Helper()
	if c.skip != nil {
		if why := c.skip(h); why != "" {
			t.Skip(why)
		}
	}
	var found []string
	var skipped string
	body := func(t *testing.T) {
		e := newEnv(t, h, st)
		c.run(e)
		found, skipped = e.found(), e.skipped
	}
	if sh, ok := h.(SynctestHarness); ok && sh.Synctest() {
		synctest.Test(t, body)
	} else {
		body(t)
	}
	if skipped != "" && len(found) == 0 {
		// Outside the bubble, so that the check itself reads as skipped.
		t.Skip(skipped)
	}
	return found
}
