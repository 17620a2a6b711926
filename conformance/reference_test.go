package conformance_test

import (
	"testing"

	"github.com/rebound-go/rebound/conformance"
)

func TestReference(t *testing.T) {
	conformance.Run(t, conformance.Reference())
}

func TestReferenceSynctest(t *testing.T) {
	conformance.Run(t, conformance.ReferenceSynctest())
}
