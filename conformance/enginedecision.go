package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
)

// An EngineDecider enqueues jobs whose failed attempts the engine follows
// up by itself, without asking the adapter: River runs a job again at the
// time its worker's own NextRetry returns when that worker does not ask
// the Retrier (WorkerNextRetry). The adapter then knows neither the
// engine's decision nor when the job runs again, so it must claim none: it
// tells the attempt as the engine's ([observe.Result.EngineDecided],
// outcome [observe.OutcomeEngine]), with no decision and no fire time of
// its own, and never gives the job up for it.
//
// Only an engine with such a path can implement it. One without (the
// native queue, where rebound is the engine; asynq, which asks
// RetryDelayFunc for every retry) declares [FeatureEngineDecisions] in
// Lacks with the reason, and the EngineDecision check is skipped saying so.
type EngineDecider interface {
	Engine
	// EnqueueEngineRetried adds a job, like Enqueue, under Config.Rule
	// (its cap included), whose failed attempts short of the cap the
	// engine retries by itself after a delay of its own choosing, at most
	// a few seconds.
	EnqueueEngineRetried(ctx context.Context, payload []byte) (id string, err error)
}

// FeatureEngineDecisions is [EngineDecider], used by the EngineDecision
// check. Unlike the other features it is not expected of every adapter:
// an engine that always asks the adapter has no such path. A harness
// without it should declare the lack with the reason (see
// [LackingHarness]); either way the check is skipped with a line saying
// why.
const FeatureEngineDecisions Feature = "EngineDecider"

// engineDrain bounds how long the EngineDecision check waits for the
// adapter to tell the end of every attempt: an adapter may learn only
// later that the engine decided without it (River's Retrier forgets an
// entry River never asked for within two seconds of the attempt).
const engineDrain = 5 * time.Second

// skipEngineDecision skips the EngineDecision check for a harness that
// declares its engine has no decision of its own.
func skipEngineDecision(h Harness) string {
	lh, ok := h.(LackingHarness)
	if !ok {
		return ""
	}
	if reason, ok := lh.Lacks()[FeatureEngineDecisions]; ok {
		return fmt.Sprintf("conformance: skipped: harness %s declares its engine has no decision of its own to check (%s): %s",
			h.Name(), FeatureEngineDecisions, reason)
	}
	return ""
}

// checkEngineDecision runs jobs whose failures the engine retries without
// asking the adapter (EngineDecider), beside jobs the adapter decides for.
// Each engine-retried job fails once or twice and then succeeds: every
// failed attempt of it must be told as the engine's decision (outcome
// "engine": no decision, no fire time), never exhausted or permanent, and
// the give-up hook is never called for it. The truth rules hold the rest
// (numbering, one success at the end, the adapter's own decisions for the
// other jobs).
func checkEngineDecision(e *env) {
	w := e.start("engine decides", e.rule(backoff.Must(backoff.Fixed(unit)), 4))
	ed, ok := w.eng.(EngineDecider)
	if !ok {
		e.skipped = fmt.Sprintf("conformance: skipped: harness %s's engine does not implement %s, so the suite cannot have the engine decide a retry without the adapter; implement it if the engine has such a path (a River worker's own NextRetry), or declare %s in Lacks with the reason",
			e.h.Name(), FeatureEngineDecisions, FeatureEngineDecisions)
		return
	}
	var own []string
	for _, s := range []script{{Fail: 1}, {Fail: 2}, {Fail: 1, Panic: true}} {
		s.Nonce = w.rec.next()
		p := s.encode()
		id, err := ed.EnqueueEngineRetried(w.ctx(), append([]byte(nil), p...))
		if err != nil {
			w.errorf("EnqueueEngineRetried: %v", err)
			continue
		}
		if w.add(&job{id: id, s: s, payload: p, rule: w.rule, engine: true}) != "" {
			own = append(own, id)
		}
	}
	w.allow = w.allowUpTo(1, func(err error) bool {
		pe := panicError(err)
		return pe != nil && pe.Op == "handler"
	})
	// Jobs the adapter decides for, beside them.
	w.enqueue(script{Fail: 1})
	w.enqueue(script{Always: true})
	states := w.settle()
	w.waitFor(engineDrain+e.slack, func() bool { return w.wit.unended() == 0 })
	w.verify(states)
	events, _, giveUps, _, _ := w.wit.snapshot()
	for _, id := range own {
		j := w.job(id)
		for i, r := range w.rec.runs(id) {
			ev, ok := events[r.ev]
			if r.ev == nil || !ok || ev.ends == 0 || ev.result.Err == nil || ev.result.Counting != observe.Counted {
				continue // a success, or what verify reported
			}
			if res := ev.result; !res.EngineDecided() || !res.FireAt.IsZero() {
				w.errorf("%s: run %d failed and the engine retried it without asking the adapter, but the observer was told %s (decision %+v, FireAt %v); want the engine's decision, outcome %q: no decision and no fire time of the adapter's, and no give-up",
					j.what(), i+1, outcome(r.ev, res), res.Decision, res.FireAt, observe.OutcomeEngine)
			}
		}
		for _, g := range giveUps {
			if g.g.Attempt.JobID == id {
				w.errorf("%s: the give-up hook was told %v at attempt %d, but the engine decided that attempt's follow-up itself and the job ran again; an adapter gives up only on its own decisions",
					j.what(), g.g.Outcome, g.g.Attempt.Number)
			}
		}
	}
}
