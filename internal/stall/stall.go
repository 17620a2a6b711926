// Package stall measures how late this process's own timers fire, so that a
// test's lateness bound can follow what the machine really did.
//
// A test that checks a retry started "at most L after its computed time"
// fails on a busy machine (a laptop building something else, a shared CI
// runner) for reasons that are not the code's: the engine's timer, its
// round trips and its goroutines all wait for a core. A [Witness] is a
// goroutine that sleeps in short steps beside the code under test, in the
// same process and at the same time, and records how much later than asked
// each step woke. [Witness.Lag] is how far behind that chain of timers fell
// over an interval: the bound to allow is the declared lateness plus that
// lag. A stalled machine widens the bound by what it stalled; an engine that
// is late by itself is still late by the same amount, and still fails.
//
// Never-early checks take nothing from a witness: a timer that fired before
// its time is wrong whatever the load.
package stall

import (
	"sort"
	"sync"
	"time"
)

// DefaultStep is the sleep of each of a witness's timers: short enough that
// its chain crosses every interval a test measures many times, long enough
// that the witness costs nothing measurable.
const DefaultStep = 5 * time.Millisecond

// keep is how long a witness keeps its samples: longer than any interval a
// test asks about.
const keep = 30 * time.Minute

// A Witness is a chain of short timers whose lateness it records. Its
// methods are safe for concurrent use, and on a nil *Witness (Lag and Max
// return 0, Stop does nothing): a test on fake time passes nil.
type Witness struct {
	step  time.Duration
	probe func() // after each timer, when not nil: a round trip to a server the measured code uses
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	samples []sample  // woken steps that were late, in order of start
	pending time.Time // start of the step now asleep
	max     time.Duration
	once    sync.Once
}

// sample is one step of the chain: it slept from start and woke late after
// start+step.
type sample struct {
	start, end time.Time
	late       time.Duration
}

// Start starts a witness whose timers sleep step each (DefaultStep when
// step <= 0). Stop it when the measured code is done.
func Start(step time.Duration) *Witness { return StartProbing(step, nil) }

// StartProbing starts a witness that, after each of its timers, makes a
// round trip with probe (a Redis PING, a SELECT 1) to a server the measured
// code depends on. A server held up, by the machine's load or by another
// client of a shared server, delays the probe as it delays the code, and
// the witness counts the probe's whole round trip as lateness: on an idle
// machine that is a fraction of a millisecond per step, a few percent of
// the interval at most. probe must return within a bounded time (give it
// a timeout).
func StartProbing(step time.Duration, probe func()) *Witness {
	if step <= 0 {
		step = DefaultStep
	}
	w := &Witness{step: step, probe: probe, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *Witness) run() {
	defer close(w.done)
	t := time.NewTimer(w.step)
	defer t.Stop()
	start := time.Now()
	w.mu.Lock()
	w.pending = start
	w.mu.Unlock()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		late := now.Sub(start) - w.step
		if w.probe != nil {
			w.probe()
			took := time.Since(now)
			now = now.Add(took)
			late += took
		}
		w.mu.Lock()
		if late > 0 {
			w.samples = append(w.samples, sample{start: start, end: now, late: late})
			w.max = max(w.max, late)
			if old := now.Add(-keep); len(w.samples) > 1024 && w.samples[0].end.Before(old) {
				i := sort.Search(len(w.samples), func(i int) bool { return !w.samples[i].end.Before(old) })
				w.samples = append(w.samples[:0], w.samples[i:]...)
			}
		}
		start = now
		w.pending = now
		w.mu.Unlock()
		t.Reset(w.step)
	}
}

// Stop stops the witness's timers; what it recorded stays readable.
func (w *Witness) Stop() {
	if w == nil {
		return
	}
	w.once.Do(func() { close(w.stop) })
	<-w.done
	w.mu.Lock()
	w.pending = time.Time{}
	w.mu.Unlock()
}

// Lag returns how far behind the witness's chain of timers fell between
// from and to: the summed lateness of every step asleep at some moment of
// that interval, including the step asleep now if it is already overdue.
// It is the time a goroutine of this process waited for a core, beyond
// what it asked to wait, while the measured code ran.
func (w *Witness) Lag(from, to time.Time) time.Duration {
	if w == nil || to.Before(from) {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Samples are in order of start and do not overlap, so those ending
	// at or after from are a suffix.
	i := sort.Search(len(w.samples), func(i int) bool { return !w.samples[i].end.Before(from) })
	var lag time.Duration
	for _, s := range w.samples[i:] {
		if s.start.After(to) {
			break
		}
		lag += s.late
	}
	if !w.pending.IsZero() && !w.pending.After(to) {
		if over := time.Since(w.pending) - w.step; over > 0 {
			lag += over
		}
	}
	return lag
}

// Max returns the lateness of the latest single step the witness has seen.
func (w *Witness) Max() time.Duration {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}

// Watch starts a witness beside test t and stops it when t ends; probes,
// when given, are made after each of its timers (see [StartProbing]).
func Watch(t interface{ Cleanup(func()) }, probes ...func()) *Witness {
	var probe func()
	if len(probes) > 0 {
		probe = func() {
			for _, p := range probes {
				p()
			}
		}
	}
	w := StartProbing(0, probe)
	t.Cleanup(w.Stop)
	return w
}

// Allow returns the lateness to allow for an interval from..to: declared,
// what the code promises on an idle machine, plus the witness's [Witness.Lag]
// over the interval.
func (w *Witness) Allow(declared time.Duration, from, to time.Time) time.Duration {
	return declared + w.Lag(from, to)
}
