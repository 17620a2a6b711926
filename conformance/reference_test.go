package conformance_test

import (
	"strings"
	"testing"

	"github.com/rebound-go/rebound/conformance"
)

func TestReference(t *testing.T) {
	conformance.Run(t, conformance.Reference())
}

func TestReferenceSynctest(t *testing.T) {
	conformance.Run(t, conformance.ReferenceSynctest())
}

func TestRunReport(t *testing.T) {
	r := conformance.RunReport(t, conformance.ReferenceSynctest())
	if want := (conformance.Limits{MaxErrorBytes: 64 << 10}); r.Harness != "reference/synctest" || r.Limits != want {
		t.Errorf("report names %q with limits %+v, want reference/synctest with limits %+v", r.Harness, r.Limits, want)
	}
	// In a bubble the reference engine is exact: every retry starts at its
	// computed time, no earlier and no later.
	for name, l := range map[string]conformance.Lateness{"idle": r.Idle, "herd": r.Herd} {
		if l.Retries == 0 || l.Early != 0 || l.P50 != 0 || l.P99 != 0 || l.Max != 0 {
			t.Errorf("%s lateness %+v, want some retries, all exactly on time", name, l)
		}
	}
	if r.Herd.Retries != 400 {
		t.Errorf("herd measured %d retries, want 400 (two cohorts of 200, one retry each)", r.Herd.Retries)
	}
	for _, want := range []string{"reference/synctest", "idle", "herd", "p99", "early"} {
		if !strings.Contains(r.String(), want) {
			t.Errorf("table %q does not mention %q", r.String(), want)
		}
	}
}
