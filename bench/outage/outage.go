// Package outage measures what a circuit breaker does for a fleet of
// workers when the dependency their jobs need goes down: issue 16's
// "Measure". A dependency (a small HTTP server in the measuring process)
// answers errors for a while, then recovers; jobs run from several worker
// processes per engine (the measuring binary run again as workers), with
// and without rebound's breaker, and every call into the dependency is
// recorded.
//
// For each engine and mode it reports the calls into the dependency while
// it was down, the jobs the outage exhausted, the time from its recovery
// to an empty backlog, the peak call rate after recovery against the
// breaker's budget, and the jobs lost.
package outage

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
)

// Dependency is the name jobs bind the dependency by.
const Dependency = "payments"

// Kind is the job kind (asynq task type, River kind, native name) bound to
// the dependency.
const Kind = "charge"

// Scenario is one measurement's setup, the same for every engine and mode.
type Scenario struct {
	// Jobs is how many jobs are enqueued before the workers start.
	Jobs int
	// Workers is how many worker processes run them, Concurrency the
	// handlers each runs at once.
	Workers, Concurrency int
	// Outage is how long the dependency answers errors, from the moment
	// the workers start.
	Outage time.Duration
	// Rule is the jobs' retry rule: its whole schedule must be longer than
	// the outage, so that a job that spends no attempt on the outage
	// survives it.
	Rule backoff.Rule
	// Breaker guards the dependency in breaker mode.
	Breaker breaker.Breaker
	// Deadline bounds a run after the outage.
	Deadline time.Duration
}

// Default is issue 16's scenario: 10,000 jobs from 4 worker processes,
// a 30 s outage. The rule's schedule adds up to at most 47 s (full jitter
// makes it 23.5 s on average, shorter than the outage); the breaker trips
// after 5 failures in a row, cools down 2 s, 4 s, 8 s, then 10 s, probes
// once, and releases the backlog at 200 tokens a second plus 10% of the
// successes (222 a second).
func Default() Scenario {
	return Scenario{
		Jobs: 10_000, Workers: 4, Concurrency: 50, Outage: 30 * time.Second,
		Rule:     backoff.Must(backoff.ParseRule("jitter(exponential(1s, 16s)) x 7")),
		Breaker:  breaker.Must(breaker.Parse("breaker(failures=5, cooldown=exponential(2s, 10s), lease=5s, budget=budget(10%, 200/s, 20))")),
		Deadline: 4 * time.Minute,
	}
}

// ScheduleTotal is the longest the rule's retries can take in all: for
// every retry, the policy's delay without its jitter (the largest a full
// jitter draws).
func (s Scenario) ScheduleTotal() time.Duration {
	p := s.Rule.Policy()
	if j, ok := p.(backoff.FullJitterPolicy); ok {
		p = j.Inner()
	}
	var total time.Duration
	for n := 1; n < s.Rule.MaxAttempts(); n++ {
		total += backoff.Delay(p, n, backoff.Source{})
	}
	return total
}

// BudgetRate is the rate, in calls a second, at which the breaker's budget
// releases a backlog whose retries succeed: floor / (1 - ratio).
func (s Scenario) BudgetRate() float64 {
	b := s.Breaker.Budget()
	if b.IsZero() {
		return 0
	}
	return b.Floor() / max(1-b.Ratio(), 0.1)
}

// Rules guards the dependency with the scenario's breaker.
func (s Scenario) Rules() breaker.Rules {
	return breaker.Rules{Named: map[string]breaker.Breaker{Dependency: s.Breaker}}
}

// Call is one call into the dependency: when, after the outage began, and
// whether it was answered with success.
type Call struct {
	At time.Duration
	OK bool
}

// Server is the dependency: an HTTP server that answers 503 until the
// outage is over and 200 after, and records every call.
type Server struct {
	URL string

	srv *http.Server
	ln  net.Listener

	mu    sync.Mutex
	start time.Time
	until time.Time
	calls []Call
}

// NewServer starts a dependency on a free local port, healthy until Down.
func NewServer() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, URL: "http://" + ln.Addr().String() + "/charge"}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Down starts an outage of d from now, and forgets the calls before it.
func (s *Server) Down(d time.Duration) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start = time.Now()
	s.until = s.start.Add(d)
	s.calls = s.calls[:0]
	return s.start
}

func (s *Server) serve(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	now := time.Now()
	ok := !now.Before(s.until)
	if !s.start.IsZero() {
		s.calls = append(s.calls, Call{At: now.Sub(s.start), OK: ok})
	}
	s.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// Calls returns the calls recorded since the outage began, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Call(nil), s.calls...)
	sort.Slice(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Result is what one engine did in one mode.
type Result struct {
	Engine string `json:"engine"`
	Mode   string `json:"mode"` // "plain" or "breaker"
	Jobs   int    `json:"jobs"`
	// OutageCalls is the calls into the dependency while it was down.
	OutageCalls int `json:"outage_calls"`
	// TotalCalls is every call of the run.
	TotalCalls int `json:"total_calls"`
	// Completed and Exhausted count the jobs that ended so.
	Completed int `json:"completed"`
	Exhausted int `json:"exhausted"`
	// Lost is the jobs neither completed nor exhausted when the run ended.
	Lost int `json:"lost"`
	// Drain is the time from the dependency's recovery to the last job's
	// end (an empty backlog); negative if the backlog emptied before.
	Drain time.Duration `json:"drain_ns"`
	// Peak is the most calls in any one second after the recovery, until
	// the backlog emptied; PeakAt when that second began, after recovery.
	Peak   int           `json:"peak_per_s"`
	PeakAt time.Duration `json:"peak_at_ns"`
	// PerSecond counts the calls in each second from the recovery until
	// the backlog emptied: how steadily it was released.
	PerSecond []int `json:"per_second_after_recovery"`
	// BudgetRate is the breaker budget's rate (breaker mode only).
	BudgetRate float64 `json:"budget_rate,omitempty"`
	// TimedOut reports a run that hit its deadline.
	TimedOut bool   `json:"timed_out,omitempty"`
	Err      string `json:"error,omitempty"`
}

// measure fills r's call figures from calls, for an outage of outage and
// a backlog that emptied done after the outage began.
func (r *Result) measure(calls []Call, outage, done time.Duration) {
	r.TotalCalls = len(calls)
	for _, c := range calls {
		if c.At < outage {
			r.OutageCalls++
		}
	}
	r.Drain = done - outage
	for _, c := range calls {
		if c.At < outage || c.At > max(done, outage) {
			continue
		}
		sec := int((c.At - outage) / time.Second)
		for len(r.PerSecond) <= sec {
			r.PerSecond = append(r.PerSecond, 0)
		}
		r.PerSecond[sec]++
	}
	// Sliding one-second windows, in 10ms steps, from the recovery until
	// the backlog emptied.
	i := sort.Search(len(calls), func(i int) bool { return calls[i].At >= outage })
	j := i
	for start := outage; start <= max(done, outage); start += 10 * time.Millisecond {
		for i < len(calls) && calls[i].At < start {
			i++
		}
		for j < len(calls) && calls[j].At < start+time.Second {
			j++
		}
		if n := j - i; n > r.Peak {
			r.Peak, r.PeakAt = n, start-outage
		}
	}
}

// String is one line for logs.
func (r Result) String() string {
	return fmt.Sprintf("%s/%s: %d outage calls, %d exhausted, %d lost, drained %v after recovery, peak %d/s",
		r.Engine, r.Mode, r.OutageCalls, r.Exhausted, r.Lost, r.Drain.Round(10*time.Millisecond), r.Peak)
}

// An Engine is one job engine the scenario runs on.
type Engine interface {
	// Name is "native", "asynq" or "river".
	Name() string
	// Setup prepares an isolated queue (prefix, queue name, schema) for one
	// run and enqueues the scenario's jobs, none of which runs yet. It
	// returns where a worker process finds them (the Spec's engine
	// fields).
	Setup(ctx context.Context, s Scenario, mode string) (Spec, error)
	// Ended returns how many jobs completed and how many were exhausted.
	Ended(ctx context.Context) (completed, exhausted int, err error)
	// Teardown removes what Setup created.
	Teardown(ctx context.Context)
}
