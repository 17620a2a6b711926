package nativetest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/adapters/native/nativetest"
	"github.com/rebound-go/rebound/backoff"
)

// A test follows a job through its retries: after each attempt it asserts
// how the attempt ended and when the job runs again, then moves the clock
// there. Nothing sleeps: a two-minute schedule runs in milliseconds.
func Example() {
	t := &testing.T{} // in a test, the test's own t
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Exponential(30*time.Second, time.Hour)), 3))
	w := nativetest.NewWorker(t, rule, func(ctx context.Context, j *native.Job) error {
		return errors.New("smtp: 421 try again later")
	})
	defer w.Close()

	id := w.Enqueue([]byte("ada@example.com"), native.WithID("welcome-1"))
	for {
		ev := w.Next(id)
		fmt.Printf("attempt %d: %s", ev.Attempt.Number, ev.Result.Outcome())
		if !ev.Result.Decision.Retry() {
			fmt.Println()
			break
		}
		fmt.Printf(", runs again at +%s\n", ev.Result.FireAt.Sub(nativetest.Epoch()))
		w.AdvanceTo(ev.Result.FireAt)
	}
	fmt.Println(w.Job(id).State, len(w.Recorder.GiveUps()))
	// Output:
	// attempt 1: retry, runs again at +30s
	// attempt 2: retry, runs again at +1m30s
	// attempt 3: exhausted
	// failed 1
}
