// Command quickstart shows a rebound retry policy's schedule.
//
//	go run ./examples/quickstart
package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/rebound-go/rebound/backoff"
)

func main() {
	policy, err := backoff.Parse("jitter(exponential(100ms, 2s))")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	rule := backoff.Must(backoff.NewRule(policy, 5))
	fmt.Printf("policy %s, MaxAttempts %d, job key %q\n\n", policy, rule.MaxAttempts(), "job-42")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "attempt\tdelay\tfires after\t")
	for _, s := range backoff.Schedule(policy, backoff.Key("job-42"), rule.MaxAttempts()-1) {
		fmt.Fprintf(tw, "%d\t%s\t%s\t\n", s.Attempt, s.Delay, s.Total)
	}
	_ = tw.Flush()
}
