package conformance

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
)

// The flags of the Mix check, read by every test binary that runs the
// suite: go test -run 'TestConformance/Mix$' ./adapters/native/
// -conformance.seed=N replays one mix, -conformance.mix=200 runs a bigger
// one.
var (
	mixSeed = flag.Uint64("conformance.seed", 0, "seed of the conformance suite's Mix check; 0 draws a new one each run, and the check logs it")
	mixSize = flag.Int("conformance.mix", 0, fmt.Sprintf("number of jobs in the conformance suite's Mix check; 0 means %d", mixDefaultJobs))
)

// mixDefaultJobs is the size of a mix by default: enough to put several
// look-alike jobs of one kind, every cap and most steps together, small
// enough that asynq's whole seconds finish it within about ten seconds.
const mixDefaultJobs = 24

// mixKinds are the named kinds of a mix, each under a random rule of its
// own (Config.KindRules); the harness's default kind has one too.
var mixKinds = []string{"mix_a", "mix_b", "mix_c"}

// checkMix runs a seeded random mix of jobs at once on one worker: rules
// drawn from the text forms (every policy, jitter wrappers, caps from 1 to
// 6, one rule per kind), each job a random sequence of runs (plain
// failures, retry-after hints, permanent errors, handler panics, hostile
// errors: typed nil, an Error method that panics, a 1 MB text, invalid
// UTF-8, at most one run outliving Config.Timeout) ending in a success
// unless the cap or a permanent error ends it first, some jobs look-alike
// (one kind, empty payloads). Every job's story is checked against the model, as in every check (runs, numbering,
// gaps never early and bounded late, one terminal outcome, what the
// observer and the give-up hook were told), and each failed attempt's
// told decision against the rule's for that job and attempt. The seed is
// logged, and a failing mix names it with the command that replays it
// alone (-conformance.seed); -conformance.mix sets the number of jobs.
func checkMix(e *env) {
	seed := *mixSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	n := *mixSize
	if n <= 0 {
		n = mixDefaultJobs
	}
	replay := replayCommand(e.t.Name(), seed)
	if n != mixDefaultJobs {
		replay += fmt.Sprintf(" -conformance.mix=%d", n)
	}
	e.t.Logf("conformance: Mix seed %d, %d jobs; replay: %s", seed, n, replay)
	m := newMix(seed, e.lim)
	w := e.start(fmt.Sprintf("mix seed %d", seed), m.rules[""], func(c *Config) {
		c.Timeout = m.timeout
		c.KindRules = map[string]backoff.Rule{}
		for _, k := range mixKinds {
			c.KindRules[k] = m.rules[k]
		}
	})
	_, hasKinds := w.eng.(KindEngine)
	if !e.need(FeatureKinds, hasKinds, "EnqueueKind enqueues a job of a named kind") {
		hasKinds = false
	}
	panics := 0
	type planned struct {
		kind  string
		alike bool
		s     script
	}
	plan := make([]planned, n)
	for i := range plan {
		kind := ""
		if hasKinds {
			kind = m.kind()
		}
		s := m.script(e.effCap(m.rules[kind]))
		for _, st := range s.Steps {
			if st.Do == stepPanic {
				panics++
			}
		}
		plan[i] = planned{kind: kind, alike: m.rng.IntN(3) == 0, s: s}
	}
	w.allow = w.allowUpTo(panics, func(err error) bool {
		pe := panicError(err)
		return pe != nil && pe.Op == "handler"
	})
	handler := w.allow
	w.allow = func(err error) bool {
		// An adapter may report the panic of an Error method it called.
		return strings.Contains(safe.Message(err), hostileErrorPanic) || handler(err)
	}
	for _, p := range plan {
		if p.alike {
			w.enqueueAlike(p.kind, p.s)
		} else {
			w.enqueueKind(p.kind, p.s)
		}
	}
	states := w.settle()
	w.drain(states)
	w.verifyToldDecisions()
	w.verify(states)
	if len(e.found()) > 0 {
		e.errorf("conformance: the Mix of seed %d (%d jobs) failed; replay it alone with: %s", seed, n, replay)
	}
}

// mix draws the rules and scripts of one Mix check from its seed.
type mix struct {
	rng   *rand.Rand
	rules map[string]backoff.Rule // by kind, "" for the default
	unit  time.Duration           // the smallest delay drawn
	// timeout is the worker's Config.Timeout; overrun how long a run that
	// outlives it runs.
	timeout, overrun time.Duration
}

func newMix(seed uint64, lim Limits) *mix {
	m := &mix{rng: rand.New(rand.NewPCG(seed, 0x5eed)), rules: map[string]backoff.Rule{}, unit: max(unit/4, time.Millisecond)}
	m.timeout, m.overrun = mixTimeouts(lim)
	// Every cap from 1 on is drawn; the named kinds always hold a cap of 1
	// and one of at least 4, so a mix has jobs that never retry and jobs
	// retried three times and more.
	caps := []int{1, 4 + m.rng.IntN(3), 1 + m.rng.IntN(6)}
	m.rng.Shuffle(len(caps), func(i, j int) { caps[i], caps[j] = caps[j], caps[i] })
	for i, k := range mixKinds {
		m.rules[k] = m.rule(caps[i])
	}
	m.rules[""] = m.rule(1 + m.rng.IntN(6))
	return m
}

// mixTimeouts returns the Mix's Config.Timeout and how long a run that
// outlives it runs: the Timeout check's, but with room for a stall of
// twice the declared Lateness (at most half a second) above the longest
// run a script means to end in time (a hold of three mix units, plus the
// Timeout check's 80 ms): a mix runs many handlers
// at once for seconds, and on a loaded machine under the race detector a
// run held up past an 80 ms deadline by accident is counted a failure the
// script never asked for (seen on the reference engine on the real clock:
// a success counted as a timeout, a retry-after hint decided as a plain
// timeout).
func mixTimeouts(lim Limits) (timeout, overrun time.Duration) {
	timeout, overrun = timeouts(lim)
	if t := 3*max(unit/4, time.Millisecond) + min(2*lim.Lateness, 500*time.Millisecond) + 4*unit; t > timeout {
		timeout, overrun = t, t+max(t/2, 2*unit)
	}
	return timeout, overrun
}

// rule draws a rule in the text form and parses it, as a user's
// configuration would be read.
func (m *mix) rule(maxAttempts int) backoff.Rule {
	text := fmt.Sprintf("%s x %d", m.policy(0), maxAttempts)
	r, err := backoff.ParseRule(text)
	if err != nil {
		panic(fmt.Sprintf("conformance: the Mix drew rule %q, which does not parse: %v", text, err))
	}
	return r
}

// dur draws a delay of about units units, in whole milliseconds, an odd
// number not divisible by five: neither it nor its multiples by 2 to 5
// (the caps and doublings policy draws) lie on a 10 ms grid, so an engine
// that rounds a delay down to a coarser unit is seen early.
func (m *mix) dur(units int) time.Duration {
	ms := int64((m.unit*time.Duration(units))/time.Millisecond) + m.rng.Int64N(int64(m.unit/time.Millisecond)+1)
	if ms%2 == 0 {
		ms++
	}
	if ms%5 == 0 {
		ms += 2
	}
	return time.Duration(ms) * time.Millisecond
}

// policy draws a policy's text: a schedule, wrapped in jitter at most
// twice.
func (m *mix) policy(depth int) string {
	if depth < 2 && m.rng.IntN(2) == 0 {
		switch m.rng.IntN(3) {
		case 0:
			return "jitter(" + m.policy(depth+1) + ")"
		case 1:
			return "equal(" + m.policy(depth+1) + ")"
		default:
			return fmt.Sprintf("proportional(0.%d, %s)", 1+m.rng.IntN(9), m.policy(depth+1))
		}
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%dms", d/time.Millisecond) }
	base := m.dur(1 + m.rng.IntN(4))
	switch m.rng.IntN(4) {
	case 0:
		return "fixed(" + ms(base) + ")"
	case 1:
		return fmt.Sprintf("exponential(%s, %s)", ms(base), ms(base*time.Duration(2+m.rng.IntN(4))))
	case 2:
		return fmt.Sprintf("linear(%s, %s, %s)", ms(base), ms(m.dur(1)), ms(base*time.Duration(2+m.rng.IntN(4))))
	}
	return fmt.Sprintf("decorrelated(%s, %s)", ms(base), ms(base*time.Duration(2+m.rng.IntN(4))))
}

// kind draws a job's kind, the default one included.
func (m *mix) kind() string {
	if i := m.rng.IntN(len(mixKinds) + 1); i < len(mixKinds) {
		return mixKinds[i]
	}
	return ""
}

// script draws the runs of one job under a cap: up to cap+1 failing steps
// of every kind, after which it succeeds, and a short hold per run so that
// runs of jobs started together overlap.
func (m *mix) script(maxAttempts int) script {
	s := script{Hold: time.Duration(m.rng.IntN(4)) * m.unit}
	// Half the jobs fail up to the cap and past it (exhausted, unless a
	// permanent error ends them first), half stop anywhere before.
	steps := maxAttempts + 1
	if m.rng.IntN(2) == 0 {
		steps = m.rng.IntN(maxAttempts + 1)
	}
	overran := false
	for range steps {
		var st step
		switch r := m.rng.IntN(100); {
		case r < 5 && !overran:
			// At most one run of a job outlives its timeout: on an engine
			// whose timeouts are whole seconds each costs seconds.
			overran = true
			st = step{Do: stepOverrunFail, Overrun: m.overrun}
			if m.rng.IntN(2) == 0 {
				st.Do = stepOverrun
			}
		case r < 45:
			st.Do = stepFail
		case r < 57:
			st = step{Do: stepFail, After: m.dur(2 + m.rng.IntN(6))}
		case r < 65:
			st.Do = stepPermanent
		case r < 80:
			st.Do = stepPanic
		default:
			st = step{Do: stepHostile, Hostile: hostileOrder[m.rng.IntN(len(hostileOrder))]}
		}
		s.Steps = append(s.Steps, st)
		if st.Do == stepPermanent {
			break
		}
	}
	if len(s.Steps) == 0 {
		s.Steps = []step{{Do: stepOK}}
	}
	return s
}

// replayCommand is the command that runs the check named name (a test
// name, with its parents) alone with the given seed, from the module's
// root.
func replayCommand(name string, seed uint64) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("go test -race -count=1 -run '%s' %s -conformance.seed=%d", strings.Join(parts, "/"), packageDir(), seed)
}

// packageDir names the package under test relative to its module's root
// ("./adapters/native/"), or "." when it cannot tell.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel) + "/"
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}
