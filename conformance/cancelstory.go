package conformance

import (
	"errors"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/safe"
	"github.com/rebound-go/rebound/observe"
)

// checkCancelStory cancels, with the engine's own operator tool
// (CancelEngine), a job whose handler is running, and checks that the
// cancel is told the way every adapter tells it: the attempt's error is an
// [*observe.CancelledError] (errors.Is with [observe.ErrCancelled] holds)
// reading as the text the engine stored as the job's error (ErrorEngine),
// whatever the handler returned. What follows is the engine's: a job the
// cancel ended is told permanent and given up once, with that same error
// and outcome; a job the engine retries (asynq's CancelProcessing cancels
// the run, not the task) is told a retry and never given up. The Cancel
// check holds the state and the rest of the story to the truth rules.
func checkCancelStory(e *env) {
	w := e.start("cancel story", e.rule(backoff.Must(backoff.Fixed(unit)), 3))
	ce, ok := w.eng.(CancelEngine)
	if !e.need(FeatureCancel, ok, "Cancel cancels a running or waiting job with the engine's operator tool") {
		return
	}
	ee, ok := w.eng.(ErrorEngine)
	if !e.need(FeatureErrors, ok, "LastError reads the message the engine stored for a job's last failed attempt") {
		return
	}
	id := w.enqueue(script{Fail: 1, Block: true})
	if id == "" {
		return
	}
	w.job(id).cancel = cancelledRunning
	if !w.waitFor(10*time.Second, func() bool { return w.started(id, 0) }) {
		w.errorf("job %s never started", id)
		return
	}
	if err := ce.Cancel(w.ctx(), id); err != nil {
		w.errorf("Cancel(%s) of a running job: %v", id, err)
		return
	}
	states := w.settle()
	w.verify(states)
	runs := w.rec.runs(id)
	if len(runs) == 0 || runs[0].ev == nil {
		return // verify has said why
	}
	events, _, giveUps, _, _ := w.wit.snapshot()
	ev, ok := events[runs[0].ev]
	if !ok || ev.ends == 0 {
		return // verify has said why
	}
	res := ev.result
	stored, err := ee.LastError(w.ctx(), id)
	if err != nil {
		w.errorf("LastError(%s): %v", id, err)
		return
	}
	var ce2 *observe.CancelledError
	switch {
	case !errors.As(res.Err, &ce2):
		w.errorf("job %s: the engine's cancel of its running attempt was told with error %T %q, want an *observe.CancelledError (the engine's cancel reads one way on every adapter)",
			id, res.Err, safe.Message(res.Err))
		return
	case !errors.Is(res.Err, observe.ErrCancelled):
		w.errorf("job %s: the cancelled attempt's error %q does not match observe.ErrCancelled", id, safe.Message(res.Err))
	case res.Err.Error() != stored:
		w.errorf("job %s: the cancelled attempt was told as %q, but the engine stored %q; want the text the engine stored", id, res.Err.Error(), stored)
	}
	var told []observe.GiveUp
	for _, g := range giveUps {
		if g.ev == runs[0].ev || (g.ev == nil && g.g.Attempt.JobID == id) {
			told = append(told, g.g)
		}
	}
	switch {
	case res.GaveUp() && res.Decision.Outcome != backoff.OutcomePermanent:
		w.errorf("job %s: the cancel that ended it was told %s, want permanent", id, res.Outcome())
	case res.GaveUp() && len(told) == 1 && (!errors.As(told[0].Err, &ce2) || told[0].Outcome != res.Decision.Outcome):
		w.errorf("job %s: the give-up hook was told %s with error %T, the observer %s with %T; want the same outcome and *observe.CancelledError",
			id, told[0].Outcome, told[0].Err, res.Outcome(), res.Err)
	case !res.GaveUp() && !res.Decision.Retry():
		w.errorf("job %s: the cancelled attempt was told %s, want permanent (the engine ended the job) or a retry (the engine retries it)", id, res.Outcome())
	}
}
