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
	once  sync.Once
	after time.Duration // how long after the first failure the stall starts
}

const stallFor = 400 * time.Millisecond

func (h *stallingHarness) Start(t testing.TB, cfg Config) Engine {
	handle := cfg.Handler
	cfg.Handler = func(ctx context.Context, j Job) error {
		err := handle(ctx, j)
		if err != nil {
			h.once.Do(func() { time.AfterFunc(h.after, func() { stopProcess(t, stallFor) }) })
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

// heldServerHarness is the reference harness with a "server" between the
// engine and each run: a run starts only once it holds the server, which
// the test keeps busy for heldFor after the first failed attempt, as a
// shared Redis busy with another client's script would be. Its Probe
// needs the server too.
type heldServerHarness struct {
	*ReferenceHarness
	server chan struct{} // holds one token while the server is free
	once   sync.Once
}

// roundTrip waits until the server is free.
func (h *heldServerHarness) roundTrip() {
	h.server <- struct{}{}
	<-h.server
}

func newHeldServer() *heldServerHarness {
	return &heldServerHarness{ReferenceHarness: Reference(), server: make(chan struct{}, 1)}
}

// heldFor is long against the declared 100 ms, so that without a probe
// the hold stays beyond the bound even on a loaded machine, whose timers
// lag too.
const heldFor = 1500 * time.Millisecond

func (h *heldServerHarness) Start(t testing.TB, cfg Config) Engine {
	handle := cfg.Handler
	cfg.Handler = func(ctx context.Context, j Job) error {
		h.roundTrip()
		err := handle(ctx, j)
		if err != nil {
			h.once.Do(func() {
				h.server <- struct{}{} // busy with another client's work
				time.AfterFunc(heldFor, func() { <-h.server })
			})
		}
		return err
	}
	return h.ReferenceHarness.Start(t, cfg)
}

// probingHeldServer is heldServerHarness that lets the witness probe it.
type probingHeldServer struct{ *heldServerHarness }

func (h probingHeldServer) Probe(ctx context.Context) error {
	h.roundTrip()
	return nil
}

// TestHeldServerWidensTheBound: when the engine's server is held up, the
// probe of a ProbingHarness is held up as long, and the bound widens by
// it; without a probe the same delay fails the check, since the process's
// own timers were on time.
func TestHeldServerWidensTheBound(t *testing.T) {
	probing := probingHeldServer{newHeldServer()}
	if got := findings(t, probing, "NeverEarlyBoundedLate"); len(got) > 0 {
		t.Errorf("a server held %v failed the check although the harness's probe saw it:\n%s", heldFor, strings.Join(got, "\n"))
	}
	plain := newHeldServer()
	if got := findings(t, plain, "NeverEarlyBoundedLate"); !containsPhrase(got, "retry fired late") {
		t.Errorf("a server held %v with no probe to see it passed the check, want \"retry fired late\":\n%s", heldFor, strings.Join(got, "\n"))
	}
}

// TestStalledHerdStillSpreads stops the process for 400 ms in the middle of
// the Herd check's window: the jittered retries due during the stall all
// start when it ends, in one slice. The stall, not the jitter, piled them up; the
// witness saw it, so the check still passes.
func TestStalledHerdStillSpreads(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("stops the process with SIGSTOP through sh and kill")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to send SIGSTOP with")
	}
	h := &stallingHarness{ReferenceHarness: Reference(), after: 300 * time.Millisecond}
	if got := findings(t, h, "Herd"); len(got) > 0 {
		t.Errorf("a stall of the whole process failed the Herd check, want the witness to allow for the retries it piled up:\n%s", strings.Join(got, "\n"))
	}
}
