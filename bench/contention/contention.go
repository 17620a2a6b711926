// Package contention is a discrete-event simulation of many clients retrying
// against one contended resource, in the spirit of the AWS Architecture Blog
// study "Exponential Backoff And Jitter".
//
// # The model
//
// One server holds one row with a version number (optimistic concurrency
// control). Each client wants to update the row exactly once: it reads the
// version, then writes with that version. The write succeeds only if no other
// client's write landed in between; otherwise the client backs off for the
// policy's delay and starts over with a fresh read. Every message crosses a
// network whose one-way delay is |Normal(10, 2)| time units. All clients
// start at time 0. A run ends when every client has written once.
//
// Time is virtual: one unit is one millisecond of [time.Duration] so that
// rebound's policies, which return durations, plug in unchanged; nothing
// sleeps. Runs are deterministic: the network draws from a PCG seeded by
// (seed, clients, run), and each client's jitter from a [backoff.Source]
// keyed by (seed, clients, run, client), so every strategy faces the same
// network (common random numbers) and a run replays exactly.
//
// The simulation counts the writes the server handled (the study's "calls",
// the work the contention caused) and the virtual time at which the last
// client succeeded (the study's "completion time").
package contention

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
)

// Unit is the virtual time unit of the simulation: the study's delays (base
// 5, cap 2000, network mean 10) are read as this many units.
const Unit = time.Millisecond

// A Strategy is a named retry policy under comparison.
type Strategy struct {
	// Name is a short label such as "full jitter".
	Name string
	// Policy computes the wait after each failed write.
	Policy backoff.Policy
	// Breaker, when not the zero Breaker, guards the row's server: every
	// client asks it before each attempt (see [SimulateBreaker]).
	Breaker breaker.Breaker
}

// Strategies returns the four strategies of the study built from rebound's
// own policies, with first and cap in [Unit]s: exponential backoff with no
// jitter, full jitter and equal jitter around exponential(first, cap), and
// decorrelated jitter with base first.
//
// rebound's exponential waits its base after the first failure
// (base*2^(n-1)), so exponential(5, 2000) starts at 5. To replay the study
// itself use [StudyStrategies].
func Strategies(first, cap float64) ([]Strategy, error) {
	return strategies(first, first, cap)
}

// StudyStrategies returns the study's own curves for its "base 5, cap 2000",
// expressed with rebound's policies. The study's simulator waits
// base*2^n after failure n, so its first wait is 10: that is rebound's
// exponential(10, 2000). Its decorrelated jitter starts from sleep = base,
// which is rebound's decorrelated(5, 2000) exactly.
func StudyStrategies() []Strategy {
	s, err := strategies(10, 5, 2000)
	if err != nil { // constant, valid arguments
		panic(err)
	}
	return s
}

func strategies(first, decorBase, cap float64) ([]Strategy, error) {
	c := units(cap)
	exp, err := backoff.Exponential(units(first), c)
	if err != nil {
		return nil, err
	}
	full, err := backoff.Jitter(exp)
	if err != nil {
		return nil, err
	}
	equal, err := backoff.EqualJitter(exp)
	if err != nil {
		return nil, err
	}
	decor, err := backoff.Decorrelated(units(decorBase), c)
	if err != nil {
		return nil, err
	}
	return []Strategy{
		{Name: NoJitter, Policy: exp},
		{Name: FullJitter, Policy: full},
		{Name: EqualJitter, Policy: equal},
		{Name: Decorrelated, Policy: decor},
	}, nil
}

// The names of the four strategies.
const (
	NoJitter     = "no jitter"
	FullJitter   = "full jitter"
	EqualJitter  = "equal jitter"
	Decorrelated = "decorrelated"
)

func units(u float64) time.Duration { return time.Duration(math.Round(u * float64(Unit))) }

// Network is the one-way delay of every message: |Normal(Mean, SD)| units.
type Network struct {
	Mean, SD float64
}

// StudyNetwork is the network of the AWS study: mean 10, standard deviation 2.
var StudyNetwork = Network{Mean: 10, SD: 2}

// Run is the outcome of one simulated run.
type Run struct {
	// Clients is the number of contending clients.
	Clients int
	// Calls is the number of writes the server handled.
	Calls int
	// Failures is the number of writes refused for a stale version.
	Failures int
	// Reads is the number of reads the server handled.
	Reads int
	// Completion is when the last client learned its write succeeded.
	Completion time.Duration
	// MaxBackoff is the longest backoff any client waited.
	MaxBackoff time.Duration
	// MaxAttempts is the most writes any one client needed.
	MaxAttempts int
	// Version is the row's final version: one per successful write.
	Version int
	// Deferrals is the attempts a circuit breaker held back (only with
	// SimulateBreaker).
	Deferrals int
}

// ErrRunaway is returned when a run exceeds its event budget, which only a
// policy that never lets clients through can cause.
var ErrRunaway = errors.New("contention: run exceeded its event budget")

type kind uint8

const (
	readAtServer kind = iota
	readReplyAtClient
	writeAtServer
	writeReplyAtClient
	// startAtClient is a client about to start an attempt, in a run with a
	// gate (a circuit breaker) to ask first.
	startAtClient
)

type event struct {
	at      time.Duration
	seq     uint64 // breaks ties in arrival order, keeping runs deterministic
	kind    kind
	client  int
	version int  // carried by a read reply and a write request
	ok      bool // carried by a write reply
}

type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// Simulate runs one simulation of clients contending under policy p over
// network net. seed and run select the random draws: the same arguments give
// the same Run. It returns an error for fewer than one client, a negative
// network, or a run that does not finish within its event budget.
func Simulate(p backoff.Policy, clients int, net Network, seed uint64, run int) (Run, error) {
	return simulate(p, nil, clients, net, seed, run)
}

// A gate is what clients ask before each attempt and tell after: a
// circuit breaker (see SimulateBreaker). now is the virtual time.
type gate interface {
	// ask says whether client may start an attempt at now (rerun: not its
	// first), and if not, how long to wait before asking again.
	ask(now time.Duration, client int, rerun bool) (wait time.Duration, ok bool)
	// done reports how the attempt ask let through ended.
	done(now time.Duration, client int, ok bool)
}

// simulate is Simulate with an optional gate.
func simulate(p backoff.Policy, g gate, clients int, net Network, seed uint64, run int) (Run, error) {
	if p == nil {
		return Run{}, errors.New("contention: policy is nil, want a backoff.Policy")
	}
	if clients < 1 {
		return Run{}, fmt.Errorf("contention: %d clients, want at least 1", clients)
	}
	if !(net.Mean >= 0 && net.SD >= 0) {
		return Run{}, fmt.Errorf("contention: network mean %v and sd %v must not be negative", net.Mean, net.SD)
	}
	stream := mix(seed, uint64(clients), uint64(run))
	rng := rand.New(rand.NewPCG(stream, 0x5851f42d4c957f2d))
	delay := func() time.Duration {
		return units(math.Abs(rng.NormFloat64()*net.SD + net.Mean))
	}
	keys := make([]backoff.Source, clients)
	attempts := make([]int, clients)
	for c := range keys {
		keys[c] = backoff.KeyUint64(mix(stream, uint64(c), 0x9e3779b97f4a7c15))
	}

	var (
		q       queue
		seq     uint64
		res     = Run{Clients: clients}
		version int
		now     time.Duration
		done    int
	)
	push := func(e event) {
		seq++
		e.seq = seq
		heap.Push(&q, e)
	}
	asked := make([]bool, clients) // the client has asked the gate before
	for c := range clients {
		if g != nil {
			push(event{at: 0, kind: startAtClient, client: c})
			continue
		}
		push(event{at: delay(), kind: readAtServer, client: c})
	}
	// Each attempt is four events; no sane policy needs a million attempts
	// per client, and a policy that starves clients must not hang the run.
	budget := 4 * 1_000_000 * clients
	for q.Len() > 0 {
		if budget--; budget < 0 {
			return res, ErrRunaway
		}
		e := heap.Pop(&q).(event)
		now = e.at
		switch e.kind {
		case startAtClient:
			c := e.client
			wait, ok := g.ask(now, c, attempts[c] > 0 || asked[c])
			asked[c] = true
			if !ok {
				res.Deferrals++
				push(event{at: now + max(wait, 1), kind: startAtClient, client: c})
				continue
			}
			push(event{at: now + delay(), kind: readAtServer, client: c})
		case readAtServer:
			res.Reads++
			push(event{at: now + delay(), kind: readReplyAtClient, client: e.client, version: version})
		case readReplyAtClient:
			push(event{at: now + delay(), kind: writeAtServer, client: e.client, version: e.version})
		case writeAtServer:
			res.Calls++
			ok := e.version == version
			if ok {
				version++
			} else {
				res.Failures++
			}
			push(event{at: now + delay(), kind: writeReplyAtClient, client: e.client, ok: ok})
		case writeReplyAtClient:
			c := e.client
			attempts[c]++
			res.MaxAttempts = max(res.MaxAttempts, attempts[c])
			if g != nil {
				g.done(now, c, e.ok)
			}
			if e.ok {
				done++
				res.Completion = now
				continue
			}
			wait := backoff.Delay(p, attempts[c], keys[c])
			res.MaxBackoff = max(res.MaxBackoff, wait)
			if g != nil {
				push(event{at: now + wait, kind: startAtClient, client: c})
				continue
			}
			push(event{at: now + delay() + wait, kind: readAtServer, client: c})
		}
	}
	res.Version = version
	if done != clients {
		return res, fmt.Errorf("contention: %d of %d clients finished", done, clients)
	}
	return res, nil
}

// mix folds words into one well-spread 64-bit value (splitmix64 steps).
func mix(words ...uint64) uint64 {
	h := uint64(0x243f6a8885a308d3)
	for _, w := range words {
		h ^= w
		h += 0x9e3779b97f4a7c15
		h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
		h = (h ^ h>>27) * 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

// Point is the mean of many runs of one strategy at one client count.
type Point struct {
	// Strategy is the strategy's name.
	Strategy string
	// Clients is the number of contending clients.
	Clients int
	// Runs is how many runs were averaged.
	Runs int
	// Calls is the mean number of writes per run.
	Calls float64
	// Time is the mean completion time, in [Unit]s.
	Time float64
}

// Config sets up a sweep over client counts.
type Config struct {
	// Clients lists the client counts to simulate.
	Clients []int
	// Runs is the number of runs averaged per point (the study used 100).
	Runs int
	// Seed selects the random draws.
	Seed uint64
	// Network is the message delay; the zero value means [StudyNetwork].
	Network Network
}

// Sweep simulates every strategy at every client count and returns the
// points, ordered by client count, then by strategy in the given order.
func Sweep(strategies []Strategy, cfg Config) ([]Point, error) {
	if cfg.Runs < 1 {
		return nil, fmt.Errorf("contention: %d runs per point, want at least 1", cfg.Runs)
	}
	net := cfg.Network
	if net == (Network{}) {
		net = StudyNetwork
	}
	var pts []Point
	for _, n := range cfg.Clients {
		for _, s := range strategies {
			var calls, tm float64
			for r := range cfg.Runs {
				var res Run
				var err error
				if s.Breaker.IsZero() {
					res, err = Simulate(s.Policy, n, net, cfg.Seed, r)
				} else {
					res, err = SimulateBreaker(s.Policy, s.Breaker, n, net, cfg.Seed, r)
				}
				if err != nil {
					return nil, fmt.Errorf("%s, %d clients, run %d: %w", s.Name, n, r, err)
				}
				calls += float64(res.Calls)
				tm += float64(res.Completion) / float64(Unit)
			}
			pts = append(pts, Point{
				Strategy: s.Name, Clients: n, Runs: cfg.Runs,
				Calls: calls / float64(cfg.Runs), Time: tm / float64(cfg.Runs),
			})
		}
	}
	return pts, nil
}

// Ranked returns the points at the given client count, ordered from the
// least to the most of the measure by (such as calls or completion time);
// ties keep the strategies' order.
func Ranked(pts []Point, clients int, by func(Point) float64) []Point {
	var out []Point
	for _, p := range pts {
		if p.Clients == clients {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b Point) int { return cmp.Compare(by(a), by(b)) })
	return out
}
