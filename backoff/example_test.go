package backoff_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// The seeds' curve: 100ms doubling to a 10s cap. Attempt 20 would be
// 52428.8s unclamped.
func ExampleExponential() {
	p, err := backoff.Exponential(100*time.Millisecond, 10*time.Second)
	if err != nil {
		panic(err)
	}
	fmt.Println(delays(p, backoff.Source{}, 5))
	fmt.Println("attempt 3:", backoff.Delay(p, 3, backoff.Source{}))
	fmt.Println("attempt 20:", backoff.Delay(p, 20, backoff.Source{}))
	fmt.Println("attempt MaxInt:", backoff.Delay(p, int(^uint(0)>>1), backoff.Source{}))
	// Output:
	// 100ms 200ms 400ms 800ms 1.6s
	// attempt 3: 400ms
	// attempt 20: 10s
	// attempt MaxInt: 10s
}

// With a one-second base the retries land 1s, 2s, 4s, 8s and 16s out.
func ExampleExponential_oneSecond() {
	p := backoff.Must(backoff.Exponential(time.Second, time.Hour))
	fmt.Println(delays(p, backoff.Source{}, 5))
	// Output:
	// 1s 2s 4s 8s 16s
}

func ExampleExponential_error() {
	_, err := backoff.Exponential(100*time.Millisecond, 50*time.Millisecond)
	fmt.Println(err)
	// Output:
	// backoff: cap 50ms is below base 100ms, want a cap of at least the base
}

func ExampleFixed() {
	p := backoff.Must(backoff.Fixed(30 * time.Second))
	fmt.Println(delays(p, backoff.Source{}, 5))
	fmt.Println("attempt 100:", backoff.Delay(p, 100, backoff.Source{}))
	// Output:
	// 30s 30s 30s 30s 30s
	// attempt 100: 30s
}

func ExampleLinear() {
	p := backoff.Must(backoff.Linear(100*time.Millisecond, 100*time.Millisecond, 450*time.Millisecond))
	fmt.Println(delays(p, backoff.Source{}, 6))
	// Output:
	// 100ms 200ms 300ms 400ms 450ms 450ms
}

// Full jitter at attempt 3 of exponential(100ms, 10s) lands anywhere in
// [0, 400ms]. Keyed by the job, it is the same value in every run and every
// process.
func ExampleJitter() {
	p := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))))
	d := backoff.Delay(p, 3, backoff.Source{})
	fmt.Println("unkeyed in [0, 400ms]:", d >= 0 && d <= 400*time.Millisecond)
	fmt.Println("job-42:", backoff.Delay(p, 3, backoff.Key("job-42")))
	fmt.Println("job-42 again:", backoff.Delay(p, 3, backoff.Key("job-42")))
	fmt.Println("job-43:", backoff.Delay(p, 3, backoff.Key("job-43")))
	fmt.Println(delays(p, backoff.Key("job-42"), 8))
	// Output:
	// unkeyed in [0, 400ms]: true
	// job-42: 210.891521ms
	// job-42 again: 210.891521ms
	// job-43: 104.236332ms
	// 55ms 199ms 211ms 189ms 545ms 1.422s 6.308s 7.834s
}

// Proportional jitter of 0.2 around a 4s delay lands in [3.2s, 4.8s].
func ExampleProportional() {
	p := backoff.Must(backoff.Proportional(0.2, backoff.Must(backoff.Exponential(time.Second, time.Minute))))
	d := backoff.Delay(p, 3, backoff.Source{}) // the inner delay is 4s
	fmt.Println("unkeyed in [3.2s, 4.8s]:", d >= 3200*time.Millisecond && d <= 4800*time.Millisecond)
	fmt.Println("job-42:", backoff.Delay(p, 3, backoff.Key("job-42")))
	fmt.Println(delays(p, backoff.Key("job-42"), 8))
	// Near the cap the window is clipped: never above the inner maximum.
	fmt.Println("max:", p.Max(), "attempt 30:", backoff.Delay(p, 30, backoff.Key("job-42")) <= time.Minute)
	// Output:
	// unkeyed in [3.2s, 4.8s]: true
	// job-42: 4.043566083s
	// 1.022s 2.394s 4.044s 7.155s 14.979s 31.29s 59.827s 57.401s
	// max: 1m0s attempt 30: true
}

func ExampleEqualJitter() {
	p := backoff.Must(backoff.EqualJitter(backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))))
	fmt.Println(delays(p, backoff.Key("job-42"), 8))
	// Output:
	// 78ms 199ms 305ms 494ms 1.072s 2.311s 6.354s 8.917s
}

// Decorrelated jitter is computed from the attempt number alone, so it works
// where an engine hands the policy nothing but a count.
func ExampleDecorrelated() {
	p := backoff.Must(backoff.Decorrelated(100*time.Millisecond, 10*time.Second))
	fmt.Println(delays(p, backoff.Key("job-42"), 8))
	// Output:
	// 211ms 629ms 1.042s 813ms 897ms 1.252s 3.702s 8.722s
}

func ExampleRule_Decide() {
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Exponential(time.Second, time.Minute)), 4))
	src := backoff.Key("job-42")
	failed := errors.New("smtp: 421 try later")

	fmt.Println(rule.Decide(1, failed, src))
	fmt.Println(rule.Decide(2, backoff.RetryAfter(failed, 30*time.Second), src))
	fmt.Println(rule.Decide(3, failed, src))
	fmt.Println(rule.Decide(4, failed, src))
	fmt.Println(rule.Decide(1, fmt.Errorf("send: %w", backoff.Permanent(errors.New("no such user"))), src))
	// Output:
	// {retry 1s}
	// {retry 30s}
	// {retry 4s}
	// {exhausted 0s}
	// {permanent 0s}
}

func ExampleParse() {
	p, err := backoff.Parse("proportional(0.2, exponential(1s, 1m))")
	if err != nil {
		panic(err)
	}
	fmt.Println(p)
	fmt.Println(p.Max())

	_, err = backoff.Parse("jitter(exponential(1s 1m))")
	fmt.Println(err)
	_, err = backoff.Parse("jitter(exponential(1m, 1s))")
	fmt.Println(err)
	// Output:
	// proportional(0.2, exponential(1s, 1m))
	// 1m0s
	// backoff: parse "jitter(exponential(1s 1m))": at offset 22: expected ",", found "1m"
	// backoff: parse "jitter(exponential(1m, 1s))": at offset 7: cap 1s is below base 1m, want a cap of at least the base
}

// A Spec loads a policy from a command-line flag (or JSON, or an environment
// variable through UnmarshalText).
func ExampleSpec() {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	retry := backoff.Spec{Policy: backoff.Must(backoff.Exponential(time.Second, time.Minute))}
	fs.Var(&retry, "retry", "retry policy")

	if err := fs.Parse([]string{"-retry", "jitter(exponential(100ms, 10s))"}); err != nil {
		panic(err)
	}
	fmt.Println(retry)
	fmt.Println(backoff.Delay(retry, 3, backoff.Key("job-42")))
	// Output:
	// jitter(exponential(100ms, 10s))
	// 210.891521ms
}

func ExampleSchedule() {
	p := backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))
	for _, s := range backoff.Schedule(p, backoff.Key("job-42"), 9) {
		fmt.Printf("attempt %d: wait %v, fires %v after the first failure\n", s.Attempt, s.Delay, s.Total)
	}
	// Output:
	// attempt 1: wait 100ms, fires 100ms after the first failure
	// attempt 2: wait 200ms, fires 300ms after the first failure
	// attempt 3: wait 400ms, fires 700ms after the first failure
	// attempt 4: wait 800ms, fires 1.5s after the first failure
	// attempt 5: wait 1.6s, fires 3.1s after the first failure
	// attempt 6: wait 3.2s, fires 6.3s after the first failure
	// attempt 7: wait 6.4s, fires 12.7s after the first failure
	// attempt 8: wait 10s, fires 22.7s after the first failure
	// attempt 9: wait 10s, fires 32.7s after the first failure
}

// delays formats the first n delays of p for src, rounded to the
// millisecond for reading.
func delays(p backoff.Policy, src backoff.Source, n int) string {
	var out []string
	for _, s := range backoff.Schedule(p, src, n) {
		out = append(out, s.Delay.Round(time.Millisecond).String())
	}
	return strings.Join(out, " ")
}

// A rule is a policy and an attempts cap in one string.
func ExampleParseRule() {
	rule, err := backoff.ParseRule("jitter(exponential(100ms, 10s)) x 5")
	if err != nil {
		panic(err)
	}
	fmt.Println(rule)
	fmt.Println(rule.Policy(), "/", rule.MaxAttempts(), "runs")
	fmt.Println(rule.Decide(3, errors.New("timeout"), backoff.Key("job-42")))
	fmt.Println(rule.Decide(5, errors.New("timeout"), backoff.Key("job-42")))

	_, err = backoff.ParseRule("jitter(exponential(100ms, 10s))")
	fmt.Println(err)
	_, err = backoff.ParseRule("jitter(exponential(100ms, 10s)) x 0")
	fmt.Println(err)
	// Output:
	// jitter(exponential(100ms, 10s)) x 5
	// jitter(exponential(100ms, 10s)) / 5 runs
	// {retry 210.891521ms}
	// {exhausted 0s}
	// backoff: parse "jitter(exponential(100ms, 10s))": at offset 31: expected "x" and MaxAttempts, as in "jitter(exponential(100ms, 10s)) x 5", found end of input
	// backoff: parse "jitter(exponential(100ms, 10s)) x 0": at offset 34: MaxAttempts 0 is below 1, want the total number of runs (>= 1)
}

// A rule loads from a command-line flag: *Rule is a flag.Value. The same
// text loads from an environment variable through Set or UnmarshalText.
func ExampleRule_flag() {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Exponential(time.Second, time.Minute)), 3))
	fs.Var(&rule, "retry", "retry rule, e.g. 'jitter(exponential(100ms, 10s)) x 5'")
	fmt.Println("default:", fs.Lookup("retry").DefValue)

	if err := fs.Parse([]string{"-retry", "equal(exponential(100ms, 10s)) x 8"}); err != nil {
		panic(err)
	}
	fmt.Println("set:", rule)
	fmt.Println(rule.Decide(3, errors.New("timeout"), backoff.Key("job-42")))
	// Output:
	// default: exponential(1s, 1m) x 3
	// set: equal(exponential(100ms, 10s)) x 8
	// {retry 305.44576ms}
}

// A rule loads from JSON (or YAML) as a string: Rule is a TextMarshaler
// and *Rule a TextUnmarshaler.
func ExampleRule_json() {
	var config struct {
		Retry backoff.Rule `json:"retry"`
	}
	if err := json.Unmarshal([]byte(`{"retry": "proportional(0.2, exponential(1s, 1m)) x 10"}`), &config); err != nil {
		panic(err)
	}
	fmt.Println(config.Retry.Policy().Max(), config.Retry.MaxAttempts())

	out, err := json.Marshal(config)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))

	err = json.Unmarshal([]byte(`{"retry": "proportional(2, exponential(1s, 1m)) x 10"}`), &config)
	fmt.Println(err)
	// Output:
	// 1m0s 10
	// {"retry":"proportional(0.2, exponential(1s, 1m)) x 10"}
	// backoff: parse "proportional(2, exponential(1s, 1m)) x 10": at offset 13: expected a fraction in (0, 1], found "2"
}
