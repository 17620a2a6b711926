package reboundtest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

func TestRecorderMatchesAttemptsThroughContext(t *testing.T) {
	var rec reboundtest.Recorder
	a := observe.Attempt{JobID: "7", Number: 1}
	// Two attempts of jobs with the same ID at once (two engines): each
	// ending goes to its own start.
	ctx1 := rec.AttemptStarted(context.Background(), a)
	ctx2 := rec.AttemptStarted(context.Background(), observe.Attempt{JobID: "7", Number: 1, Queue: "other"})
	rec.AttemptEnded(ctx2, a, observe.Result{})
	rec.AttemptEnded(ctx1, a, observe.Result{Err: errors.New("x"), Decision: backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: time.Second}})
	evs := rec.Job("7")
	if len(evs) != 2 || evs[0].Result.Err == nil || evs[1].Result.Err != nil || evs[1].Attempt.Queue != "other" {
		t.Fatalf("events = %+v, want the failure on the first start and the success on the second", evs)
	}
	if p := rec.Problems(); len(p) != 0 {
		t.Errorf("Problems() = %v, want none", p)
	}
}

func TestRecorderNotesWhatNoAdapterShouldDo(t *testing.T) {
	var rec reboundtest.Recorder
	a := observe.Attempt{JobID: "j", Number: 2}
	rec.AttemptEnded(context.Background(), a, observe.Result{}) // never started
	ctx := rec.AttemptStarted(context.Background(), a)
	rec.AttemptEnded(ctx, a, observe.Result{})
	rec.AttemptEnded(ctx, a, observe.Result{}) // twice
	if p := rec.Problems(); len(p) != 2 {
		t.Errorf("Problems() = %q, want an unstarted ending and a double ending", p)
	}
}

func TestRecorderConcurrentUse(t *testing.T) {
	var rec reboundtest.Recorder
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			a := observe.Attempt{JobID: fmt.Sprint(i % 5), Number: 1}
			ctx := rec.AttemptStarted(context.Background(), a)
			rec.AttemptEnded(ctx, a, observe.Result{})
			rec.GiveUp(ctx, observe.GiveUp{Attempt: a})
			_ = rec.Events()
		})
	}
	wg.Wait()
	if n := len(rec.Events()); n != 50 {
		t.Errorf("recorded %d events, want 50", n)
	}
	if n := len(rec.GiveUps()); n != 50 {
		t.Errorf("recorded %d give-ups, want 50", n)
	}
}

// A test reads a job's story back from the recorder instead of sleeping and
// guessing: here an adapter reported two failed attempts and a success.
func ExampleRecorder_Story() {
	var rec reboundtest.Recorder
	boom := errors.New("boom")
	report := func(n int, r observe.Result) {
		a := observe.Attempt{JobID: "42", Number: n, MaxAttempts: 5}
		rec.AttemptEnded(rec.AttemptStarted(context.Background(), a), a, r)
	}
	report(1, observe.Result{Err: boom, Decision: backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: 100 * time.Millisecond}})
	report(2, observe.Result{Err: boom, Decision: backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: 200 * time.Millisecond}})
	report(3, observe.Result{})
	fmt.Println(rec.Story("42"))
	// Output:
	// 1 retry 100ms
	// 2 retry 200ms
	// 3 success
}
