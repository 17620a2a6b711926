package stall

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func at(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }

// TestLagSumsTheStepsOverTheInterval pins the arithmetic: every late step
// asleep at some moment of the interval counts, whole; others do not.
func TestLagSumsTheStepsOverTheInterval(t *testing.T) {
	w := &Witness{step: 5 * time.Millisecond, samples: []sample{
		{start: at(0), end: at(6), late: 1 * time.Millisecond},
		{start: at(6), end: at(111), late: 100 * time.Millisecond},
		{start: at(111), end: at(120), late: 4 * time.Millisecond},
		{start: at(200), end: at(210), late: 5 * time.Millisecond},
	}}
	for _, c := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 5, 1 * time.Millisecond},
		{7, 8, 100 * time.Millisecond},
		{6, 111, 105 * time.Millisecond}, // touches the first step's end and the third's start
		{112, 199, 4 * time.Millisecond},
		{121, 199, 0},
		{0, 300, 110 * time.Millisecond},
		{300, 400, 0},
		{50, 40, 0}, // backwards
	} {
		if got := w.Lag(at(c.from), at(c.to)); got != c.want {
			t.Errorf("Lag(%dms, %dms) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
	if got := w.Allow(100*time.Millisecond, at(7), at(8)); got != 200*time.Millisecond {
		t.Errorf("Allow(100ms) over the long step = %v, want 200ms", got)
	}
}

// TestNilWitness is what a test on fake time passes: no lag, no panic.
func TestNilWitness(t *testing.T) {
	var w *Witness
	w.Stop()
	if w.Lag(at(0), at(1000)) != 0 || w.Max() != 0 || w.Allow(time.Second, at(0), at(1)) != time.Second {
		t.Error("a nil witness must report no lag")
	}
}

// TestStoppedProcessIsSeen stops the whole process for 300 ms (SIGSTOP, as
// a machine too busy to schedule it would): the witness must see the stall,
// and no more than the time that really passed.
func TestStoppedProcessIsSeen(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("stops the process with SIGSTOP through sh and kill")
	}
	w := Watch(t)
	time.Sleep(20 * time.Millisecond)
	from := time.Now()
	pid := strconv.Itoa(os.Getpid())
	cmd := exec.Command("sh", "-c", "kill -STOP "+pid+"; sleep 0.3; kill -CONT "+pid)
	if err := cmd.Run(); err != nil {
		t.Fatalf("stop and continue the process: %v", err)
	}
	time.Sleep(20 * time.Millisecond)
	to := time.Now()
	w.Stop()
	w.Stop() // twice is fine
	lag := w.Lag(from, to)
	if lag < 250*time.Millisecond || lag > to.Sub(from) {
		t.Errorf("the process was stopped 300 ms of the %v interval; the witness saw a lag of %v, want at least 250ms and at most the interval", to.Sub(from), lag)
	}
	if w.Max() < 250*time.Millisecond {
		t.Errorf("Max() = %v after a 300 ms stop, want at least 250ms", w.Max())
	}
}

// TestProbeDelayIsSeen: a probe held up (a server busy with another
// client) is lateness.
func TestProbeDelayIsSeen(t *testing.T) {
	hold := make(chan time.Duration, 1)
	w := Watch(t, func() {
		time.Sleep(2 * time.Millisecond) // the round trip's idle cost
		select {
		case d := <-hold:
			time.Sleep(d)
		default:
		}
	})
	time.Sleep(50 * time.Millisecond)
	from := time.Now()
	hold <- 300 * time.Millisecond
	time.Sleep(400 * time.Millisecond)
	to := time.Now()
	if lag := w.Lag(from, to); lag < 290*time.Millisecond || lag > to.Sub(from) {
		t.Errorf("a probe held 300 ms within %v read as %v of lag, want at least 290ms and at most the interval", to.Sub(from), lag)
	}
}
