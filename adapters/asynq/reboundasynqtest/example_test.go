package reboundasynqtest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	reboundasynq "github.com/rebound-go/rebound/adapters/asynq"
	"github.com/rebound-go/rebound/adapters/asynq/reboundasynqtest"
	"github.com/rebound-go/rebound/backoff"
)

// sendWelcome fails twice, then sends.
func sendWelcome(ctx context.Context, _ *asynq.Task) error {
	if n, _ := asynq.GetRetryCount(ctx); n < 2 {
		return errors.New("smtp: 421 try again later")
	}
	return nil
}

// A test of a handler's retry story: each attempt runs through a real asynq
// server, and the story is what the Retrier reported. In a real test, t
// comes from the test function, and wrapping the body in synctest.Test
// makes the server run on fake time, so retries of any length take no real
// time. Here, on the real clock, precise mode keeps the retries short.
func Example() {
	t := &testing.T{} // your test's *testing.T
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Exponential(100*time.Millisecond, time.Second)), 5))
	s := reboundasynqtest.NewServer(t, nil, asynq.HandlerFunc(sendWelcome), rule, reboundasynq.WithPrecise())

	id := s.Enqueue(t, "email:welcome", []byte("ada@example.com"))
	for n := 1; n <= 3; n++ {
		ev := s.Attempt(t, id, n)
		fmt.Printf("attempt %d: %s", n, ev.Result.Outcome())
		if ev.Result.Decision.Retry() {
			fmt.Printf(", next run %v after it", ev.Result.Decision.Delay)
			if next := s.Attempt(t, id, n+1); next.StartedAt.Before(ev.Result.FireAt) {
				fmt.Print(" (ran early!)")
			}
		}
		fmt.Println()
	}
	fmt.Println(s.WaitState(t, id, asynq.TaskStateCompleted).State)
	// Output:
	// attempt 1: retry, next run 100ms after it
	// attempt 2: retry, next run 200ms after it
	// attempt 3: success
	// completed
}
