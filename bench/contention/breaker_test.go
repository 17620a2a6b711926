package contention

import (
	"testing"

	"github.com/rebound-go/rebound/breaker"
)

func TestSimulateBreakerInvariants(t *testing.T) {
	s := BreakerStrategy()
	for _, n := range []int{1, 2, 10, 57} {
		for run := range 3 {
			r, err := SimulateBreaker(s.Policy, s.Breaker, n, StudyNetwork, 7, run)
			if err != nil {
				t.Fatalf("%d clients: %v", n, err)
			}
			if r.Version != n || r.Calls-r.Failures != n || r.Reads != r.Calls {
				t.Errorf("%d clients: version %d, %d calls, %d failures, %d reads; want one success per client, a read per write", n, r.Version, r.Calls, r.Failures, r.Reads)
			}
			if n == 1 && (r.Calls != 1 || r.Deferrals != 0) {
				t.Errorf("a lone client made %d calls and was deferred %d times, want 1 and 0", r.Calls, r.Deferrals)
			}
		}
	}
	again, _ := SimulateBreaker(s.Policy, s.Breaker, 40, StudyNetwork, 3, 9)
	if r, _ := SimulateBreaker(s.Policy, s.Breaker, 40, StudyNetwork, 3, 9); r != again {
		t.Errorf("same arguments gave %+v then %+v", again, r)
	}
	if _, err := SimulateBreaker(s.Policy, breaker.Breaker{}, 10, StudyNetwork, 1, 0); err == nil {
		t.Error("the zero Breaker simulated, want an error")
	}
}

// Against 100 contending clients, the breaker holds the herd back: a
// fraction of full jitter's calls.
func TestBreakerCutsContention(t *testing.T) {
	pts, err := Sweep([]Strategy{StudyStrategies()[1], BreakerStrategy()}, Config{Clients: []int{100}, Runs: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	full, guarded := pts[0], pts[1]
	if guarded.Calls > full.Calls/2 {
		t.Errorf("with the breaker %.0f calls, full jitter alone %.0f: want at most half", guarded.Calls, full.Calls)
	}
}
