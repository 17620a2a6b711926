package ui

import (
	"strconv"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// Model computes every number of the curve view. The rebound command
// implements it with the code its plan and herd commands run, so the page
// shows what `rebound plan` and `rebound herd` print for the same policy and
// key.
type Model interface {
	// Curve parses q.Policy and computes its schedule and its herd. A policy
	// that does not parse gives a *PolicyError.
	Curve(q Query) (Curve, error)
}

// Query asks a [Model] about one policy.
type Query struct {
	// Policy is the policy's text form, as backoff.Parse reads it.
	Policy string
	// Retries is how many retries to table, attempts 1..Retries: a rule's
	// MaxAttempts minus one. It may be 0.
	Retries int
	// Key is the job ID jitter is keyed by, as the adapters key it
	// (backoff.Key); "" draws unkeyed randomness.
	Key string
	// From is the time of the first failure; fire times count from it.
	From time.Time
	// HerdJobs jobs fail together at attempt HerdAttempt; their retries are
	// counted in at most HerdBuckets buckets.
	HerdJobs, HerdAttempt, HerdBuckets int
}

// Curve is a [Model]'s answer to a [Query].
type Curve struct {
	// Policy is the parsed policy.
	Policy backoff.Policy `json:"-"`
	// Text is the policy's canonical text form (its String).
	Text string `json:"text"`
	// Max is the largest delay the policy returns.
	Max Duration `json:"max"`
	// Random reports whether the policy draws jitter.
	Random bool `json:"random"`
	// Plan is the schedule of attempts 1..Retries.
	Plan []Step `json:"plan"`
	// Steady is the same schedule without the policy's outer jitter
	// wrappers, or nil when it has none.
	Steady []Step `json:"steady"`
	// Herd is the cohort simulation.
	Herd Herd `json:"herd"`
}

// Step is one row of a schedule: the retry after failed attempt Attempt.
type Step struct {
	Attempt int      `json:"attempt"`
	Delay   Duration `json:"delay"`
	// Total is the wait since the first failure: when the retry fires,
	// counted from t = 0.
	Total Duration `json:"total"`
	// FiresAt is the retry's fire time, Query.From + Total, as rebound plan
	// prints it.
	FiresAt string `json:"firesAt"`
}

// Herd is a cohort of jobs that failed together and where their retries
// land, with and without jitter, as `rebound herd` shows it.
type Herd struct {
	Jobs    int `json:"jobs"`
	Attempt int `json:"attempt"`
	// FirstKey and LastKey are the job IDs of the first and last job.
	FirstKey string `json:"firstKey"`
	LastKey  string `json:"lastKey"`
	// Bucket is the width of one histogram bucket.
	Bucket Duration `json:"bucket"`
	// Edges labels the bucket edges: one more than there are buckets.
	Edges []string `json:"edges"`
	// Mean is the count per bucket of an even spread.
	Mean     float64 `json:"mean"`
	MeanText string  `json:"meanText"`
	// Series are the histograms: "without jitter" then "with jitter", or
	// one "as given" for a policy that has no unjittered form.
	Series []HerdSeries `json:"series"`
	// Verdict compares the peaks with and without jitter, "" for one
	// series.
	Verdict string `json:"verdict"`
	// Note is a caveat about the comparison, or "".
	Note string `json:"note"`
}

// HerdSeries is one histogram of a [Herd].
type HerdSeries struct {
	Role   string `json:"role"`
	Policy string `json:"policy"`
	Counts []int  `json:"counts"`
	Peak   int    `json:"peak"`
	// PeakWindow is the first fullest bucket, e.g. "400ms-420ms".
	PeakWindow string `json:"peakWindow"`
	// PeakFactor is the peak over the mean, e.g. "1.36x".
	PeakFactor string `json:"peakFactor"`
	// First and Last are the earliest and latest retry.
	First Duration `json:"first"`
	Last  Duration `json:"last"`
}

// Duration is a duration as the page needs it: exact, plottable and
// printed the way the CLI prints it.
type Duration struct {
	// NS is the duration in nanoseconds, in decimal: exact, where a JSON
	// number would lose digits past 2^53 ns (104 days).
	NS string `json:"ns"`
	// MS is the duration in milliseconds, for plotting.
	MS float64 `json:"ms"`
	// Text is the duration for reading, e.g. "1.5s".
	Text string `json:"text"`
}

// NewDuration returns d with its text form.
func NewDuration(d time.Duration, text string) Duration {
	return Duration{NS: strconv.FormatInt(int64(d), 10), MS: float64(d) / float64(time.Millisecond), Text: text}
}

// PolicyError is a policy text that does not parse, reported as the CLI
// reports it.
type PolicyError struct {
	// Input is the text.
	Input string `json:"input"`
	// Offset is the byte offset where parsing failed; Column is the same
	// place counted in characters (runes).
	Offset int `json:"offset"`
	Column int `json:"column"`
	// Message is the CLI's line, e.g. `invalid policy at offset 12:
	// expected a duration such as 100ms, found "1x"`.
	Message string `json:"message"`
	// Caret is the CLI's two lines under it: the input, then a caret under
	// the offending character.
	Caret string `json:"caret"`
}

// Error returns the message.
func (e *PolicyError) Error() string { return e.Message }
