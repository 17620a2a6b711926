package conformance

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// stallingHarness is the reference harness on the real clock, whose
// process is stopped (SIGSTOP) for stallFor right after the first failed
// attempt: the machine, not the engine, makes the retries late.
type stallingHarness struct {
	*ReferenceHarness
	once sync.Once
}

const stallFor = 400 * time.Millisecond

func (h *stallingHarness) Start(t testing.TB, cfg Config) Engine {
	handle := cfg.Handler
	cfg.Handler = func(ctx context.Context, j Job) error {
		err := handle(ctx, j)
		if err != nil {
			h.once.Do(func() { stopProcess(t, stallFor) })
		}
		return err
	}
	return h.ReferenceHarness.Start(t, cfg)
}

// stopProcess has a shell stop this process and continue it after d.
func stopProcess(t testing.TB, d time.Duration) {
	pid := strconv.Itoa(os.Getpid())
	sec := strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	if err := exec.Command("sh", "-c", "kill -STOP "+pid+"; sleep "+sec+"; kill -CONT "+pid).Start(); err != nil {
		t.Errorf("start the shell that stops the process: %v", err)
	}
}

// TestStalledMachineWidensTheBound stops the whole test process for 400 ms
// while the reference engine's retries wait: every timer of the process,
// the engine's and the witness's, fires late by the stall, far past the
// declared 100 ms. The witness saw the stall, so the bound widens by it and
// the check passes; the "retry fires late" engine still fails on the same
// clock (TestBrokenHarnessesRealClock).
func TestStalledMachineWidensTheBound(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("stops the process with SIGSTOP through sh and kill")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to send SIGSTOP with")
	}
	h := &stallingHarness{ReferenceHarness: Reference()}
	began := time.Now()
	if got := findings(t, h, "NeverEarlyBoundedLate"); len(got) > 0 {
		t.Errorf("a stall of the whole process failed the check, want the witness to widen the bound by it:\n%s", strings.Join(got, "\n"))
	}
	if el := time.Since(began); el < stallFor {
		t.Errorf("the check took %v, less than the %v stall: the process was not stopped, so this test shows nothing", el, stallFor)
	}
}
