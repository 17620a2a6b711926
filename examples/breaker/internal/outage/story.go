package outage

// Story is the pattern (for internal/exampletest.Match) of what every
// breaker example prints: the trip, a probe, the close, and every charge
// through with none exhausted.
const Story = `breaker payments: closed -> open \(next probe at .*` +
	`breaker payments: open -> half-open.*` +
	`breaker payments: half-open -> closed.*` +
	`20 of 20 jobs charged, 0 exhausted; [1-9]\d* runs deferred without spending an attempt`

// StoryTold is what Story checks, in words, for a failing test's message.
const StoryTold = "the trip, a probe, the close and every charge through"
