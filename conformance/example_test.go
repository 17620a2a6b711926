package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/conformance"
)

// The reference harness's hook returns the core's keyed delays: the
// schedule job 42 follows on every engine that passes the suite.
func Example() {
	policy := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(100*time.Millisecond, 10*time.Second))))
	rule, err := backoff.NewRule(policy, 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := conformance.Config{
		Rule:    rule,
		Handler: func(context.Context, conformance.Job) error { return nil },
	}
	h := conformance.Reference()
	fail := errors.New("upstream unavailable")
	for attempt := 1; attempt <= 4; attempt++ {
		d, retry := h.HookDelay(cfg, "42", attempt, fail)
		core := rule.Decide(attempt, fail, backoff.Key("42"))
		fmt.Printf("attempt %d failed: retry=%t after %v (same as the core: %t)\n",
			attempt, retry, d, retry == core.Retry() && d == core.Delay)
	}
	// Output:
	// attempt 1 failed: retry=true after 39.368601ms (same as the core: true)
	// attempt 2 failed: retry=true after 72.069261ms (same as the core: true)
	// attempt 3 failed: retry=true after 99.792746ms (same as the core: true)
	// attempt 4 failed: retry=false after 0s (same as the core: true)
}
