package breaker_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
)

// breakers is a spread of rules the property tests run, the extreme ones
// included.
var breakers = []string{
	"breaker(failures=1, cooldown=fixed(1s))",
	"breaker(failures=3, cooldown=exponential(100ms, 10s), probes=3, close=2, lease=500ms)",
	"breaker(failures=2, rate=50%, min=4, window=2s, cooldown=jitter(exponential(200ms, 5s)), probes=2, close=3, lease=1s, budget=budget(10%, 5/s, 3))",
	"breaker(rate=0.0001%, min=1, window=10ms, cooldown=decorrelated(1ms, 1s), probes=1, close=1, lease=1ms, budget=budget(1000%, 0.001/s, 1))",
	"breaker(failures=9223372036854775807, rate=100%, min=9223372036854775807, window=2562047h47m16.854775807s, cooldown=fixed(2562047h47m16.854775807s), probes=9223372036854775807, close=9223372036854775807, lease=2562047h47m16.854775807s, budget=budget(0%, 1000000/s, 1000000000))",
	"breaker(failures=1, cooldown=exponential(1ns, 2562047h47m16.854775807s), probes=2, lease=2562047h47m16.854775807s, budget=budget(0.0001%, 0.001/s, 1000000000))",
}

// event is one step of a random run: an Allow, or the report of a run an
// earlier Allow let through, at a time.
type event struct {
	allow   bool
	kind    breaker.Kind
	outcome breaker.Outcome
	pick    int // which outstanding run reports; -1: an unadmitted report
	advance time.Duration
}

func randomEvents(r *rand.Rand, n int) []event {
	steps := []time.Duration{0, 0, time.Millisecond, 7 * time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, time.Minute}
	evs := make([]event, n)
	for i := range evs {
		e := event{
			allow:   r.IntN(2) == 0,
			kind:    breaker.Kind(r.IntN(2)),
			outcome: breaker.Outcome(1 + r.IntN(3)),
			pick:    r.IntN(8) - 1,
			advance: steps[r.IntN(len(steps))],
		}
		if r.IntN(4) == 0 {
			e.outcome = breaker.Failure
		}
		evs[i] = e
	}
	return evs
}

type grant struct {
	t  breaker.Ticket
	at time.Time
}

// TestPropertyProbes: a half-open breaker never has more probes out than
// its setting, counting as out every probe that has neither reported nor
// outlived its lease; and every deferral names a time after the question.
func TestPropertyProbes(t *testing.T) {
	for _, text := range breakers {
		b := breaker.Must(breaker.Parse(text))
		conf := b.Config()
		for seed := range uint64(200) {
			r := rand.New(rand.NewPCG(seed, 1))
			var c breaker.Circuit
			now := time0
			var out []grant
			for i, e := range randomEvents(r, 300) {
				now = now.Add(e.advance)
				if e.allow {
					v := b.Allow(&c, now, e.kind)
					if !v.Runs() && !v.Until.After(now) {
						t.Fatalf("%s seed %d step %d: %s until %v, not after now %v", text, seed, i, v.Decision, v.Until, now)
					}
					if v.Runs() {
						out = append(out, grant{v.Ticket, now})
					}
					if v.Decision == breaker.Probe {
						n := 0
						for _, g := range out {
							if g.t.Probe && g.t.Gen == c.Gen && now.Sub(g.at) < conf.Lease {
								n++
							}
						}
						if n > conf.Probes {
							t.Fatalf("%s seed %d step %d: %d probes out, want at most %d", text, seed, i, n, conf.Probes)
						}
					}
					continue
				}
				var tk breaker.Ticket
				if e.pick >= 0 && len(out) > 0 {
					j := e.pick % len(out)
					tk = out[j].t
					out = append(out[:j], out[j+1:]...)
				}
				b.Record(&c, "dep", now, tk, e.outcome)
				if c.Probes < 0 || c.Probes > int64(conf.Probes) {
					t.Fatalf("%s seed %d step %d: circuit holds %d probes, want 0..%d", text, seed, i, c.Probes, conf.Probes)
				}
			}
		}
	}
}

// TestPropertyCooldown: every trip opens the breaker for exactly the
// cool-down policy's delay at the number of consecutive trips, keyed by
// the dependency, and the count of trips goes back to 0 when it closes.
func TestPropertyCooldown(t *testing.T) {
	for _, text := range breakers {
		b := breaker.Must(breaker.Parse(text))
		pol := b.Config().Cooldown
		for seed := range uint64(100) {
			r := rand.New(rand.NewPCG(seed, 2))
			var c breaker.Circuit
			now := time0
			var out []breaker.Ticket
			for i, e := range randomEvents(r, 300) {
				now = now.Add(e.advance)
				if e.allow {
					if v := b.Allow(&c, now, e.kind); v.Runs() {
						out = append(out, v.Ticket)
					}
					continue
				}
				var tk breaker.Ticket
				if e.pick >= 0 && len(out) > 0 {
					j := e.pick % len(out)
					tk = out[j]
					out = append(out[:j], out[j+1:]...)
				}
				trips := c.Trips
				tr := b.Record(&c, "payments", now, tk, e.outcome)
				switch {
				case tr.To == breaker.Open && tr.Changed():
					if c.Trips != trips+1 {
						t.Fatalf("%s seed %d step %d: trips %d after %d, want one more", text, seed, i, c.Trips, trips)
					}
					d := backoff.Delay(pol, int(c.Trips), backoff.Key("payments"))
					want := (d + time.Millisecond - 1) / time.Millisecond
					until := time.UnixMilli(c.Until)
					if got := until.Sub(now.Truncate(time.Millisecond)) / time.Millisecond; got != want && until.UnixMilli() != breaker.MaxCount {
						t.Fatalf("%s seed %d step %d: trip %d open for %dms, want the policy's %dms", text, seed, i, c.Trips, got, want)
					}
				case tr.To == breaker.Closed && tr.Changed():
					if c.Trips != 0 {
						t.Fatalf("%s seed %d step %d: closed with trips %d, want 0", text, seed, i, c.Trips)
					}
				}
			}
		}
	}
}

// TestPropertyBudgetRate: between any two moments, a budget lets through
// no more retries than the tokens it can hold plus what the floor rate
// and the successes in between earned.
func TestPropertyBudgetRate(t *testing.T) {
	for _, text := range []string{"budget(10%, 5/s, 20)", "budget(0%, 0.001/s, 1)", "budget(1000%, 1000000/s, 3)", "budget(33.3333%, 2.5/s, 7)"} {
		bud := breaker.MustBudget(breaker.ParseBudget(text))
		for seed := range uint64(50) {
			r := rand.New(rand.NewPCG(seed, 3))
			var tk breaker.Tokens
			now := time0
			type step struct {
				at      time.Time
				granted bool
				deposit bool
			}
			var steps []step
			for range 400 {
				now = now.Add(time.Duration(r.IntN(400)) * time.Millisecond)
				if r.IntN(3) == 0 {
					bud.Deposit(&tk, now)
					steps = append(steps, step{at: now, deposit: true})
					continue
				}
				ok, next := bud.Take(&tk, now)
				if !ok && !next.After(now) {
					t.Fatalf("%s: denied at %v with next %v, want a later time", text, now, next)
				}
				steps = append(steps, step{at: now, granted: ok})
			}
			for i := range steps {
				grants, deposits := 0, 0
				for j := i; j < len(steps); j++ {
					if steps[j].granted {
						grants++
					}
					if steps[j].deposit {
						deposits++
					}
					elapsed := steps[j].at.Sub(steps[i].at).Seconds()
					limit := float64(bud.Burst()) + bud.Floor()*elapsed + bud.Ratio()*float64(deposits) + 1e-9
					if float64(grants) > limit {
						t.Fatalf("%s seed %d: %d retries in %.3fs with %d successes, above the budget's %.3f", text, seed, grants, elapsed, deposits, limit)
					}
				}
			}
		}
	}
}

// TestExtremes: the largest durations and counts, times at both ends of
// the range and corrupt circuits give answers in range, never a panic.
func TestExtremes(t *testing.T) {
	times := []time.Time{
		time.Unix(0, 0), time.Unix(-1e12, 0), time.Time{}, time0,
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.UnixMilli(breaker.MaxCount), time.UnixMilli(math.MaxInt64),
	}
	corrupt := []breaker.Circuit{
		{},
		{State: 7, Gen: -5, Trips: -1, Failures: math.MaxInt64, Until: -1, Probes: math.MaxInt64, Lease: math.MaxInt64},
		{State: breaker.HalfOpen, Probes: -3, Successes: math.MaxInt64, Budget: breaker.Tokens{Units: math.MinInt64 / 2, At: math.MaxInt64}},
		{State: breaker.Open, Until: math.MaxInt64, Trips: breaker.MaxCount, Gen: breaker.MaxCount},
		{Window: [breaker.Buckets]breaker.Bucket{{Epoch: -1, Successes: -1, Failures: breaker.MaxCount}}},
	}
	for _, text := range append(breakers, "") {
		var b breaker.Breaker
		if text != "" {
			b = breaker.Must(breaker.Parse(text))
		}
		for _, c0 := range corrupt {
			for _, now := range times {
				for _, o := range []breaker.Outcome{0, breaker.Success, breaker.Failure, breaker.Neutral, 99} {
					c := c0
					v := b.Allow(&c, now, breaker.Kind(o%3))
					if !v.Runs() && v.Until.Before(now.Truncate(time.Millisecond)) && now.UnixMilli() >= 0 && now.UnixMilli() < breaker.MaxCount {
						t.Errorf("%s %+v at %v: %s until %v, before now", text, c0, now, v.Decision, v.Until)
					}
					b.Record(&c, "x", now, v.Ticket, o)
					b.Record(&c, "x", now, breaker.Ticket{Gen: math.MinInt64, Probe: true, Admitted: true}, o)
					b.Record(&c, "x", now, breaker.Ticket{}, breaker.Failure)
					if c.Until < 0 && c0.Until >= 0 || c.Until > breaker.MaxCount && c0.Until <= breaker.MaxCount {
						t.Errorf("%s %+v at %v: Until %d out of range", text, c0, now, c.Until)
					}
					_ = b.Status("x", c, now)
				}
			}
		}
	}
	b := breaker.Must(breaker.Parse(breakers[4]))
	if d := b.Cooldown("x", math.MaxInt64); d <= 0 {
		t.Errorf("cool-down at trip MaxInt64 = %v, want the policy's maximum", d)
	}
}

// TestNewErrors: every bad setting is refused with an error that names it
// and what was wanted, never a panic.
func TestNewErrors(t *testing.T) {
	exp := backoff.Must(backoff.Exponential(time.Second, time.Minute))
	for _, tc := range []struct {
		c    breaker.Config
		want string
	}{
		{breaker.Config{Cooldown: exp}, "breaker: no trip condition, want failures >= 1 or a rate"},
		{breaker.Config{Failures: -1, Cooldown: exp}, "breaker: failures -1 is negative, want >= 1 (or 0 for no consecutive-failure trip)"},
		{breaker.Config{Failures: 1}, "breaker: no cooldown policy, want one such as exponential(5s, 5m)"},
		{breaker.Config{Failures: 1, Cooldown: backoff.Spec{}}, "breaker: no cooldown policy, want one such as exponential(5s, 5m)"},
		{breaker.Config{Rate: math.NaN(), Cooldown: exp}, "breaker: rate NaN is outside [0, 1], want a share of failed calls such as 0.5"},
		{breaker.Config{Rate: 1.5, Cooldown: exp}, "breaker: rate 1.5 is outside [0, 1], want a share of failed calls such as 0.5"},
		{breaker.Config{Rate: 1e-9, MinCalls: 1, Window: time.Second, Cooldown: exp}, "breaker: rate 1e-09 is below 0.0001%, want 0 (off) or at least 0.000001"},
		{breaker.Config{Rate: 0.5, Window: time.Second, Cooldown: exp}, "breaker: min calls 0 is below 1, want how many calls the window must hold before the rate is judged"},
		{breaker.Config{Rate: 0.5, MinCalls: 3, Window: 9 * time.Millisecond, Cooldown: exp}, "breaker: window 9ms is below 10ms, want how far back the rate looks"},
		{breaker.Config{Failures: 1, MinCalls: 3, Cooldown: exp}, "breaker: min calls 3 and window 0s are set without a rate, want a rate too (or neither)"},
		{breaker.Config{Failures: 1, Probes: -1, Cooldown: exp}, "breaker: probes -1 is negative, want >= 1"},
		{breaker.Config{Failures: 1, Successes: -2, Cooldown: exp}, "breaker: successes -2 is negative, want >= 1"},
		{breaker.Config{Failures: 1, Lease: time.Microsecond, Cooldown: exp}, "breaker: lease 1us is below 1ms, want how long a probe may run"},
	} {
		_, err := breaker.New(tc.c)
		if err == nil || err.Error() != tc.want {
			t.Errorf("New(%+v) = %v, want %q", tc.c, err, tc.want)
		}
	}
	for _, tc := range []struct {
		ratio, floor float64
		burst        int
		want         string
	}{
		{-0.1, 5, 1, "breaker: budget ratio -0.1 is outside [0, 10], want the tokens one success earns, such as 0.1"},
		{0.1, 0, 1, "breaker: budget floor 0/s is outside [0.001, 1e+06], want tokens a second such as 5"},
		{0.1, math.Inf(1), 1, "breaker: budget floor +Inf/s is outside [0.001, 1e+06], want tokens a second such as 5"},
		{0.1, 5, 0, "breaker: budget burst 0 is outside [1, 1000000000], want the most tokens the budget holds"},
		{0.1, 5, math.MaxInt32, "breaker: budget burst 2147483647 is outside [1, 1000000000], want the most tokens the budget holds"},
	} {
		_, err := breaker.NewBudget(tc.ratio, tc.floor, tc.burst)
		if err == nil || err.Error() != tc.want {
			t.Errorf("NewBudget(%v, %v, %d) = %v, want %q", tc.ratio, tc.floor, tc.burst, err, tc.want)
		}
	}
}

// time0 is where the property tests start: a real date, so that times
// stay in range in both directions.
var time0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
