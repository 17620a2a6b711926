package breaker_test

import (
	"math"
	"testing"
	"time"

	"github.com/rebound-go/rebound/breaker"
)

// TestCooldownSameOnEveryArch: a breaker's cool-down after any number of
// consecutive trips is the same on every GOARCH. A trip count past the
// largest int32 asks the policy with breaker.MaxCooldownTrip, on 64-bit
// builds too (it was clamped to the largest int, so 386 asked with
// 2^31-1 where amd64 asked with the count itself, and a keyed jitter drew
// another value). The values are pinned literally, so that running this
// test with GOARCH=386 compares the two builds.
func TestCooldownSameOnEveryArch(t *testing.T) {
	rules := map[string]string{
		"jitter":       "breaker(failures=1, cooldown=jitter(exponential(1s, 1h)))",
		"decorrelated": "breaker(failures=1, cooldown=decorrelated(1s, 1h))",
		"proportional": "breaker(failures=1, cooldown=proportional(0.5, linear(1s, 1s, 1h)))",
	}
	const ms = time.Millisecond
	want := map[string][]time.Duration{
		"jitter":       {19 * ms, 61529 * ms, 557493 * ms, 2393758 * ms},
		"decorrelated": {1038 * ms, 8644 * ms, 187987 * ms, 375331 * ms},
		"proportional": {519 * ms, 10230 * ms, 2078747 * ms, 2996879 * ms},
	}
	trips := []int64{1, 7, math.MaxInt32 - 1, math.MaxInt32, math.MaxInt32 + 1, 1 << 40, breaker.MaxCount, math.MaxInt64}
	for name, text := range rules {
		b := breaker.Must(breaker.Parse(text))
		var got []time.Duration
		for _, n := range trips {
			got = append(got, b.Cooldown("payments", n))
		}
		t.Logf("%s: %v", name, got)
		for i, n := range trips {
			if n > math.MaxInt32 && got[i] != b.Cooldown("payments", math.MaxInt32) {
				t.Errorf("%s: cool-down at trip %d = %v, want the one at trip 2^31-1, %v", name, n, got[i], b.Cooldown("payments", math.MaxInt32))
			}
		}
		if w, ok := want[name]; ok {
			for i := range w { // the trips up to 2^31-1; those past it equal that one
				if got[i] != w[i] {
					t.Errorf("%s: cool-down at trip %d = %v on this GOARCH, want %v", name, trips[i], got[i], w[i])
				}
			}
		}
	}
}
