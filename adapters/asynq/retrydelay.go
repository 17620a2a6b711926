package reboundasynq

import (
	"errors"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
)

// margin is added to a delay aimed at a whole second S. asynq computes
// time.Now().Add(delay) a moment after RetryDelay returns and stores its
// Unix second; the margin keeps that second at S even if the wall clock
// steps back a little in between, and is far too small to reach S+1.
const margin = time.Millisecond

// RetryDelay is an asynq.RetryDelayFunc. Set it as Config.RetryDelayFunc.
//
// For an error returned through [Retrier.Middleware] it returns the time left
// until the fire time the middleware fixed, so the decision made there is
// the one applied. For any other error (no middleware, lease expired,
// deadline exceeded) it returns the rule's delay for attempt n+1 with fresh
// jitter, rounded up so the retry fires on a whole second. It never panics
// and never returns a negative delay.
func (r *Retrier) RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	now := time.Now()
	var c *carrier
	if errors.As(err, &c) && c.decision.Retry() {
		if c.exact {
			return max(c.fireAt.Sub(now), 0)
		}
		return max(c.fireAt.Sub(now), 0) + margin
	}
	rule := r.rule
	if t != nil {
		rule = r.RuleFor(t.Type())
	}
	attempt := max(n, 0) + 1
	delay := r.policyDelay(rule, attempt, err, backoff.Source{})
	return max(roundUp(now.Add(delay)).Sub(now), 0) + margin
}

// roundUp returns the first whole Unix second at or after t.
func roundUp(t time.Time) time.Time {
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}
