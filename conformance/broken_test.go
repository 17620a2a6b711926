package conformance

import (
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
}

// TestBrokenHarnesses runs every broken harness in a synctest bubble,
// where timing is exact and the outcome deterministic, and checks that
// every check of the suite is failed by at least one of them: a check
// that cannot fail is a defect.
func TestBrokenHarnesses(t *testing.T) {
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
			if got := findings(t, h, bc.passes); len(got) > 0 {
				t.Errorf("%s: %s failed, want it to pass (the defect does not touch it):\n%s", bc.name, bc.passes, strings.Join(got, "\n"))
			}
		})
	}
	for _, c := range checks {
		if !failed[c.name] {
			t.Errorf("no broken harness fails check %s: a check that cannot fail is a defect", c.name)
		}
	}
}

// TestBrokenHarnessesRealClock repeats the timing defects on the real
// clock, where lateness is measured rather than exact.
func TestBrokenHarnessesRealClock(t *testing.T) {
	for _, f := range []struct {
		fault  fault
		phrase string
	}{
		{faultEarly, "retry fired early"},
		{faultLate, "retry fired late"},
	} {
		h := &ReferenceHarness{fault: f.fault}
		if got := findings(t, h, "NeverEarlyBoundedLate"); !containsPhrase(got, f.phrase) {
			t.Errorf("fault %d: want a violation containing %q, got:\n%s", f.fault, f.phrase, strings.Join(got, "\n"))
		}
	}
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
