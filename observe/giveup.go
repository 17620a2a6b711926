package observe

import (
	"context"

	"github.com/rebound-go/rebound/backoff"
)

// GiveUp describes a job rebound stopped retrying: its last attempt failed
// and the rule decided it is exhausted (it has run MaxAttempts times) or
// permanent (its error was marked with backoff.Permanent). asynq archives
// such a task, River ends the job discarded or cancelled, and the native
// queue moves it to its failed set.
type GiveUp struct {
	// Attempt is the job's last attempt: its identity (System, Queue,
	// JobID, Kind), the number of runs it used (Number) and its cap.
	Attempt Attempt
	// Err is the last attempt's error.
	Err error
	// Outcome is backoff.OutcomeExhausted or backoff.OutcomePermanent.
	Outcome backoff.Outcome
}

// A GiveUpFunc is told about every job that ends exhausted or permanent,
// once per job, after the adapter has handed the engine that decision. It is
// where a dead-letter alert, a compensation or a ticket goes. It runs on the
// worker's goroutine with the attempt's context: keep it short, or hand the
// work off. It must be safe for concurrent use; a panic is recovered and
// reported to the adapter's error handler.
//
// A job whose worker dies between the decision and the engine's state
// change is run again by the engine and may be reported again when it gives
// up then: the hook is at-least-once across crashes, exactly once otherwise.
type GiveUpFunc func(ctx context.Context, g GiveUp)
