package ui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Limits of the curve view's inputs.
const (
	// MaxAttemptsLimit is the largest MaxAttempts the page tables: 1000
	// retries, rebound plan's limit.
	MaxAttemptsLimit = 1001
	// MaxHerdJobs is the largest cohort the page simulates.
	MaxHerdJobs = 100_000
	// MaxHerdBuckets is the most histogram buckets, rebound herd's limit.
	MaxHerdBuckets = 200
)

// Defaults of the curve view's inputs.
const (
	defaultAttempts    = 5
	defaultHerdJobs    = 1000
	defaultHerdAttempt = 3
	defaultHerdBuckets = 20
)

// curveAnswer is the body of GET /api/curve.
type curveAnswer struct {
	Curve
	// MaxAttempts is the rule's cap the plan was drawn for.
	MaxAttempts int `json:"maxAttempts"`
	// Key is the job ID jitter was keyed by ("" for unkeyed).
	Key string `json:"key"`
	// From is the first failure's time, RFC 3339.
	From string `json:"from"`
	// Form is the policy as the controls show it; nil when they cannot.
	Form *Form `json:"form"`
	// Contrast is, for an exponential curve, the linear schedule of the
	// same base and cap, drawn dashed beside it; nil for other curves.
	Contrast *contrastJSON `json:"contrast"`
	// Commands are the rebound commands that print the same numbers.
	Commands struct {
		Plan string `json:"plan"`
		Herd string `json:"herd"`
	} `json:"commands"`
}

// curve answers GET /api/curve?policy=P&attempts=N&key=K&from=T&herdAttempt=A
// &herdJobs=J&herdBuckets=B: the schedule and herd of policy P under
// MaxAttempts N, keyed by K, for a first failure at T (RFC 3339, default
// now).
func (s *Server) curve(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q, maxAttempts, err := parseQuery(v, time.Now)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	c, err := s.model.Curve(q)
	if writeCurveError(w, err) {
		return
	}
	a := curveAnswer{Curve: c, MaxAttempts: maxAttempts, Key: q.Key, From: q.From.Format(time.RFC3339Nano), Form: formOf(c.Policy)}
	if a.Plan == nil {
		a.Plan = []Step{}
	}
	a.Contrast = s.contrast(c, q)
	a.Commands.Plan = planCommand(c.Text, q)
	a.Commands.Herd = herdCommand(c.Text, q)
	writeJSON(w, http.StatusOK, a)
}

// parseQuery reads the curve view's inputs; now gives the default first
// failure time.
func parseQuery(v url.Values, now func() time.Time) (Query, int, error) {
	q := Query{Policy: v.Get("policy"), Key: v.Get("key")}
	if strings.TrimSpace(q.Policy) == "" {
		return q, 0, errors.New("missing policy, want one such as jitter(exponential(100ms, 2s))")
	}
	var err error
	intParam := func(name string, def, lo, hi int, what string) int {
		s := v.Get(name)
		if s == "" || err != nil {
			return def
		}
		n, perr := strconv.Atoi(s)
		if perr != nil || n < lo || n > hi {
			err = fmt.Errorf("%s %q is out of range, want %s, %d..%d", name, s, what, lo, hi)
		}
		return n
	}
	maxAttempts := intParam("attempts", defaultAttempts, 1, MaxAttemptsLimit, "MaxAttempts, the runs a job gets in total")
	q.HerdJobs = intParam("herdJobs", defaultHerdJobs, 1, MaxHerdJobs, "the number of jobs that fail together")
	q.HerdAttempt = intParam("herdAttempt", defaultHerdAttempt, 1, 1<<31-1, "the attempt the cohort failed")
	q.HerdBuckets = intParam("herdBuckets", defaultHerdBuckets, 1, MaxHerdBuckets, "the most histogram buckets")
	if err != nil {
		return q, 0, err
	}
	q.Retries = maxAttempts - 1
	q.From = now().Truncate(time.Millisecond)
	if f := v.Get("from"); f != "" {
		q.From, err = time.Parse(time.RFC3339Nano, f)
		if err != nil {
			return q, 0, fmt.Errorf("from %q is not a time, want RFC 3339 such as 2025-06-01T12:00:00Z", f)
		}
	}
	return q, maxAttempts, nil
}

// planCommand is the rebound plan command line that prints q's schedule.
// It is "" when q tables no retries.
func planCommand(policy string, q Query) string {
	if q.Retries < 1 {
		return ""
	}
	cmd := "rebound plan " + ShellQuote(policy) + " -n " + strconv.Itoa(q.Retries)
	if q.Key != "" {
		cmd += " -key " + ShellQuote(q.Key)
	}
	return cmd + " -from " + q.From.Format(time.RFC3339Nano)
}

// herdCommand is the rebound herd command line that prints q's herd.
func herdCommand(policy string, q Query) string {
	cmd := "rebound herd " + ShellQuote(policy)
	if q.HerdJobs != defaultHerdJobs {
		cmd += " -jobs " + strconv.Itoa(q.HerdJobs)
	}
	if q.HerdAttempt != defaultHerdAttempt {
		cmd += " -attempt " + strconv.Itoa(q.HerdAttempt)
	}
	if q.HerdBuckets != defaultHerdBuckets {
		cmd += " -buckets " + strconv.Itoa(q.HerdBuckets)
	}
	return cmd
}

// ShellQuote quotes s for a POSIX shell when it needs it: s as it is when
// it holds only characters no shell treats specially, else in single
// quotes.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeCurveError answers the model's error for a curve, if there is one:
// a policy the parser refused as its PolicyError (message and caret, 422),
// anything else as a bad request. It reports whether it answered.
func writeCurveError(w http.ResponseWriter, err error) bool {
	var pe *PolicyError
	switch {
	case errors.As(err, &pe):
		writeJSON(w, http.StatusUnprocessableEntity, struct {
			PolicyError *PolicyError `json:"policyError"`
		}{pe})
		return true
	case err != nil:
		writeError(w, http.StatusBadRequest, err.Error())
		return true
	}
	return false
}
