package backoff_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStandardLibraryOnly: package backoff imports the standard library only,
// so every adapter and every user can take the core without pulling in a
// framework. The test asks the go command for the package's dependencies,
// all the way down: the one package of this module it may build on is the
// text scanner it shares with package breaker, and that one's own
// dependencies are in the same list, so they are held to the standard
// library too.
func TestStandardLibraryOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, path := range strings.Fields(string(out)) {
		switch path {
		case "github.com/rebound-go/rebound/backoff", "github.com/rebound-go/rebound/internal/textscan":
		default:
			t.Errorf("backoff depends on %s, want the standard library only", path)
		}
	}
}
