package breaker_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
)

// t0 is the moment the examples start at.
var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// at prints a time as its offset from t0.
func at(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return "t0+" + t.Sub(t0).String()
}

// A breaker in one process: three failures in a row trip it, the first
// cool-down is 5s, and after it one probe decides.
func Example() {
	b, err := breaker.Parse("breaker(failures=3, cooldown=exponential(5s, 5m))")
	if err != nil {
		panic(err)
	}
	var c breaker.Circuit // the payments API's state; a Store keeps it for a fleet
	now := t0
	for i := 1; i <= 3; i++ {
		v := b.Allow(&c, now, breaker.Fresh)
		tr := b.Record(&c, "payments", now, v.Ticket, breaker.Failure)
		fmt.Printf("failure %d: %s\n", i, tr)
	}
	v := b.Allow(&c, now.Add(time.Second), breaker.Fresh)
	fmt.Println("1s later:", v.Decision, "until", at(v.Until))
	v = b.Allow(&c, t0.Add(5*time.Second), breaker.Fresh)
	fmt.Println("5s later:", v.Decision, v.Transition)
	tr := b.Record(&c, "payments", t0.Add(5*time.Second), v.Ticket, breaker.Success)
	fmt.Println("probe succeeded:", tr)
	// Output:
	// failure 1: closed
	// failure 2: closed
	// failure 3: closed -> open
	// 1s later: defer-open until t0+5s
	// 5s later: probe open -> half-open
	// probe succeeded: half-open -> closed
}

// The cool-down backs off per consecutive trip: each failed probe re-opens
// the breaker for the policy's next delay, and closing starts the curve
// over.
func ExampleBreaker_Cooldown() {
	b := breaker.Must(breaker.Parse("breaker(failures=1, cooldown=exponential(5s, 1m))"))
	var c breaker.Circuit
	now := t0
	v := b.Allow(&c, now, breaker.Fresh)
	b.Record(&c, "payments", now, v.Ticket, breaker.Failure)
	for range 6 {
		fmt.Printf("trip %d: open for %s\n", c.Trips, time.UnixMilli(c.Until).Sub(now))
		now = time.UnixMilli(c.Until)
		v = b.Allow(&c, now, breaker.Fresh) // the probe
		b.Record(&c, "payments", now, v.Ticket, breaker.Failure)
	}
	v = b.Allow(&c, time.UnixMilli(c.Until), breaker.Fresh)
	b.Record(&c, "payments", time.UnixMilli(c.Until), v.Ticket, breaker.Success)
	fmt.Println("closed; trips:", c.Trips, "next cool-down:", b.Cooldown("payments", c.Trips+1))
	// Output:
	// trip 1: open for 5s
	// trip 2: open for 10s
	// trip 3: open for 20s
	// trip 4: open for 40s
	// trip 5: open for 1m0s
	// trip 6: open for 1m0s
	// closed; trips: 0 next cool-down: 5s
}

// Half-open, the breaker lets its probes through and defers the rest until
// a probe slot is sure to be free; two successes close it.
func ExampleBreaker_Allow_halfOpen() {
	b := breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(10s), probes=2, close=2, lease=30s)"))
	var c breaker.Circuit
	v := b.Allow(&c, t0, breaker.Fresh)
	b.Record(&c, "search", t0, v.Ticket, breaker.Failure)

	now := t0.Add(10 * time.Second)
	var probes []breaker.Ticket
	for i := 1; i <= 3; i++ {
		v := b.Allow(&c, now, breaker.Fresh)
		fmt.Printf("run %d: %s %s\n", i, v.Decision, at(v.Until))
		if v.Runs() {
			probes = append(probes, v.Ticket)
		}
	}
	for _, t := range probes {
		fmt.Println("probe succeeded:", b.Record(&c, "search", now.Add(time.Second), t, breaker.Success))
	}
	// Output:
	// run 1: probe -
	// run 2: probe -
	// run 3: defer-open t0+40s
	// probe succeeded: half-open
	// probe succeeded: half-open -> closed
}

// After recovery the budget releases a backlog of 20 deferred retries at
// its floor rate plus 50% of their successes (r = 2/s + r/2, so 4 a
// second), not all at once: the budget is empty when the breaker closes.
func ExampleBudget() {
	b := breaker.Must(breaker.Parse("breaker(failures=1, cooldown=fixed(1s), budget=budget(50%, 2/s, 5))"))
	var c breaker.Circuit
	v := b.Allow(&c, t0, breaker.Fresh)
	b.Record(&c, "mail", t0, v.Ticket, breaker.Failure) // the outage
	now := t0.Add(time.Second)
	v = b.Allow(&c, now, breaker.Retry)
	b.Record(&c, "mail", now, v.Ticket, breaker.Success) // recovered

	backlog := 20
	perSecond := map[int]int{}
	for backlog > 0 {
		now = now.Add(100 * time.Millisecond)
		for backlog > 0 {
			v := b.Allow(&c, now, breaker.Retry)
			if !v.Runs() {
				break
			}
			backlog--
			perSecond[int(now.Sub(t0)/time.Second)]++
			b.Record(&c, "mail", now, v.Ticket, breaker.Success)
		}
	}
	for s := 1; s <= 6; s++ {
		fmt.Printf("second %d: %d retries\n", s, perSecond[s])
	}
	fmt.Println("backlog empty at", at(now))
	// Output:
	// second 1: 2 retries
	// second 2: 4 retries
	// second 3: 4 retries
	// second 4: 4 retries
	// second 5: 4 retries
	// second 6: 2 retries
	// backlog empty at t0+6.3s
}

// A failure rate trips the breaker once the window holds enough calls.
func ExampleBreaker_Record_rate() {
	b := breaker.Must(breaker.Parse("breaker(rate=50%, min=10, window=10s, cooldown=fixed(30s))"))
	var c breaker.Circuit
	now := t0
	for i := 1; i <= 10; i++ {
		o := breaker.Success
		if i%2 == 0 {
			o = breaker.Failure
		}
		v := b.Allow(&c, now, breaker.Fresh)
		if tr := b.Record(&c, "geo", now, v.Ticket, o); tr.Changed() {
			fmt.Printf("call %d (%s): %s\n", i, o, tr)
		}
		now = now.Add(100 * time.Millisecond)
	}
	// Output:
	// call 10 (failure): closed -> open
}

func ExampleParse() {
	b, err := breaker.Parse("breaker(failures=5, cooldown=jitter(exponential(5s, 5m)), budget=budget(10%, 5/s, 20))")
	if err != nil {
		panic(err)
	}
	fmt.Println(b)
	_, err = breaker.Parse("breaker(failures=5, cooldown=exponential(5s, 1s))")
	fmt.Println(err)
	_, err = breaker.Parse("breaker(failures=five)")
	fmt.Println(err)
	// Output:
	// breaker(failures=5, cooldown=jitter(exponential(5s, 5m)), probes=1, close=1, lease=1m, budget=budget(10%, 5/s, 20))
	// breaker: parse "breaker(failures=5, cooldown=exponential(5s, 1s))": at offset 29: cooldown: cap 1s is below base 5s, want a cap of at least the base
	// breaker: parse "breaker(failures=five)": at offset 17: expected a whole number >= 1, found "five"
}

func ExampleDependency() {
	err := fmt.Errorf("charge order 42: %w", breaker.Dependency(errors.New("503 Service Unavailable"), "payments"))
	name, ok := breaker.DependencyOf(err)
	fmt.Println(err)
	fmt.Println(name, ok)
	// Output:
	// charge order 42: 503 Service Unavailable
	// payments true
}

// Config shows what a parsed breaker holds, defaults filled in.
func ExampleBreaker_Config() {
	b := breaker.Must(breaker.New(breaker.Config{
		Failures: 5,
		Cooldown: backoff.Must(backoff.Exponential(5*time.Second, 5*time.Minute)),
	}))
	c := b.Config()
	fmt.Println(c.Failures, c.Probes, c.Successes, c.Lease)
	// Output:
	// 5 1 1 1m0s
}
