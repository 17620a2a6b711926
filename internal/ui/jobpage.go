package ui

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/rebound-go/rebound/adapters/native"
)

// A job's page: everything the queue stores about one job, and its
// schedule on one time bar, the attempts so far as far as the store knows
// them and the next fire times of a rule. The queue does not store the
// worker's rule, so the page names one (the curve view's, by default) and
// says that the times ahead are that rule's; the server computes them
// with the Model, keyed by the job's ID as the native worker keys jitter.
// The page draws what it is given and computes no time itself.

// Bounds of what a job's page shows of a job's text.
const (
	// jobTextLimit is the most bytes shown of the last error and of the
	// payload.
	jobTextLimit = 16 << 10
	// jobMetaLimit is the most metadata entries shown, metaValueLimit
	// the most bytes shown of each key and value.
	jobMetaLimit   = 64
	metaValueLimit = 1 << 10
)

// boundedText is text shown on a job's page: escaped as Printable escapes
// it (newlines kept), cut to a bound.
type boundedText struct {
	// Text is the shown part, escaped.
	Text string `json:"text"`
	// Size is the stored text's length in bytes.
	Size int `json:"size"`
	// Cut reports that Text shows only the first bytes of it.
	Cut bool `json:"cut"`
	// Binary reports stored bytes that are not UTF-8 text, shown as
	// escapes (\xNN).
	Binary bool `json:"binary"`
}

// bound returns the first limit bytes of b (never cutting a character in
// two), escaped, its newlines kept when keepNewlines.
func bound(b string, limit int, keepNewlines bool) boundedText {
	t := boundedText{Size: len(b), Binary: !utf8.ValidString(b)}
	if len(b) > limit {
		b, t.Cut = b[:limit], true
		for i := 1; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[len(b)-1]) && !utf8.ValidString(b); i++ {
			b = b[:len(b)-1]
		}
	}
	t.Text = Printable(b, keepNewlines)
	return t
}

// metaEntry is one metadata entry on a job's page.
type metaEntry struct {
	Key   boundedText `json:"key"`
	Value boundedText `json:"value"`
}

// pageJob is a job as its page shows it.
type pageJob struct {
	Key         string `json:"key"`    // the ID's exact bytes, base64url
	IDText      string `json:"idText"` // the ID, escaped
	Queue       string `json:"queue"`
	QueueKey    string `json:"queueKey"`
	Name        string `json:"name"` // escaped
	State       string `json:"state"`
	Attempts    int    `json:"attempts"`
	MaxAttempts int    `json:"maxAttempts"` // the job's own cap, 0: the worker's rule decides
	Cancelled   bool   `json:"cancelled"`
	// Times the queue stores, Unix ms and as text (UTC), 0 and "" when
	// unset.
	CreatedAt         int64  `json:"createdAt"`
	CreatedText       string `json:"createdText"`
	FinishedAt        int64  `json:"finishedAt"`
	FinishedText      string `json:"finishedText"`
	NextFireAt        int64  `json:"nextFireAt"`
	NextFireText      string `json:"nextFireText"`
	LeaseDeadline     int64  `json:"leaseDeadline"`
	LeaseDeadlineText string `json:"leaseDeadlineText"`
	// Updated says what the queue knows of the job's last change: it
	// keeps no time of it.
	Updated   string      `json:"updated"`
	LastError boundedText `json:"lastError"`
	Payload   boundedText `json:"payload"`
	Metadata  []metaEntry `json:"metadata"`
	// MetadataCount is how many entries the job has; Metadata shows at
	// most jobMetaLimit of them.
	MetadataCount int `json:"metadataCount"`
}

// barEvent is one mark on a job's time bar.
type barEvent struct {
	// Kind is "enqueued", "runs" (attempts whose times the queue does not
	// store, somewhere between At and End), "failed", "completed",
	// "running", "lease", "due" or "fire".
	Kind    string `json:"kind"`
	Attempt int    `json:"attempt,omitempty"`
	// To is the last attempt of a "runs" span.
	To      int    `json:"to,omitempty"`
	At      int64  `json:"at"` // Unix ms
	AtText  string `json:"atText"`
	End     int64  `json:"end,omitempty"`
	EndText string `json:"endText,omitempty"`
	// Source is where the time comes from: "stored" (the queue's record),
	// "inferred" (a stored time less the rule's delay), "rule" (the
	// rule's schedule from a stored time, each later attempt failing the
	// moment it starts) or "now" (the server's clock).
	Source string `json:"source"`
	// Delay is the rule's delay that led to this fire time, for "fire".
	Delay *Duration `json:"delay,omitempty"`
	Text  string    `json:"text"`
}

// pageRule is the rule a job's page draws the times ahead with.
type pageRule struct {
	Policy      string `json:"policy"`
	MaxAttempts int    `json:"maxAttempts"`
	// FromJob reports MaxAttempts is the job's own cap, not the page's.
	FromJob bool `json:"fromJob"`
	Random  bool `json:"random"`
}

// jobPageAnswer is the body of GET /api/jobpage.
type jobPageAnswer struct {
	At     int64      `json:"at"`
	AtText string     `json:"atText"`
	Job    pageJob    `json:"job"`
	Rule   *pageRule  `json:"rule"`
	Events []barEvent `json:"events"`
	// Notes say what the bar cannot know.
	Notes []string `json:"notes"`
	// PolicyError is the rule's policy when it does not parse; the bar
	// then shows what is stored only.
	PolicyError *PolicyError `json:"policyError,omitempty"`
}

// timeText is how a job's page prints a time: UTC to the millisecond.
func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func toPageJob(queue string, j native.StoredJob) pageJob {
	p := pageJob{
		Key: textKey(j.ID), IDText: Printable(j.ID, false), Queue: Printable(queue, false), QueueKey: textKey(queue),
		Name: Printable(j.Name, false), State: j.State.String(), Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		Cancelled: j.Cancelled,
		CreatedAt: msOf(j.CreatedAt), CreatedText: timeText(j.CreatedAt),
		FinishedAt: msOf(j.FinishedAt), FinishedText: timeText(j.FinishedAt),
		NextFireAt: msOf(j.NextFireAt), NextFireText: timeText(j.NextFireAt),
		LeaseDeadline: msOf(j.LeaseDeadline), LeaseDeadlineText: timeText(j.LeaseDeadline),
		LastError:     bound(j.LastError, jobTextLimit, true),
		Payload:       bound(string(j.Payload), jobTextLimit, true),
		Metadata:      []metaEntry{},
		MetadataCount: len(j.Metadata),
	}
	keys := make([]string, 0, len(j.Metadata))
	for k := range j.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys[:min(len(keys), jobMetaLimit)] {
		p.Metadata = append(p.Metadata, metaEntry{bound(k, metaValueLimit, false), bound(j.Metadata[k], metaValueLimit, true)})
	}
	switch j.State {
	case native.StateCompleted, native.StateFailed:
		p.Updated = "not stored; it finished at " + p.FinishedText
	case native.StateDelayed:
		p.Updated = "not stored; it is scheduled for " + p.NextFireText
	case native.StateActive:
		p.Updated = "not stored; its lease runs until " + p.LeaseDeadlineText + " unless renewed"
	default:
		p.Updated = "not stored; it was enqueued at " + p.CreatedText
	}
	return p
}

// maxBarFires is the most fire times ahead a job's bar shows.
const maxBarFires = 100

// jobPage answers GET /api/jobpage?queueKey=Q&idKey=K&policy=P&attempts=N:
// job K of queue Q and its time bar under policy P with MaxAttempts N
// (the job's own cap, when it has one). idKey may be given more than once,
// as for /api/job. Without a policy the bar shows what is stored only.
func (s *Server) jobPage(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	j, q, ok := s.lookup(w, r)
	if !ok {
		return
	}
	now := time.Now()
	ans := jobPageAnswer{At: now.UnixMilli(), AtText: timeText(now), Job: toPageJob(q.Name(), j), Events: []barEvent{}, Notes: []string{}}
	ev := func(e barEvent) { ans.Events = append(ans.Events, e) }
	if !j.CreatedAt.IsZero() {
		ev(barEvent{Kind: "enqueued", At: msOf(j.CreatedAt), AtText: timeText(j.CreatedAt), Source: "stored", Text: "enqueued"})
	}

	// The rule, and its delays keyed by the job's ID.
	var delays []Duration // delays[i]: the wait after failed attempt i+1
	if policy := v.Get("policy"); policy != "" {
		maxAttempts := defaultAttempts
		if a := v.Get("attempts"); a != "" {
			n, err := strconv.Atoi(a)
			if err != nil || n < 1 || n > MaxAttemptsLimit {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("attempts %q is out of range, want MaxAttempts, the runs a job gets in total, 1..%d", a, MaxAttemptsLimit))
				return
			}
			maxAttempts = n
		}
		rule := &pageRule{MaxAttempts: maxAttempts}
		if j.MaxAttempts > 0 {
			rule.MaxAttempts, rule.FromJob = min(j.MaxAttempts, MaxAttemptsLimit), true
		}
		// The delays the bar needs: up to the attempt after its last
		// fire time, whatever the cap.
		retries := min(rule.MaxAttempts-1, j.Attempts+1+maxBarFires)
		c, err := s.model.Curve(Query{Policy: policy, Retries: retries, Key: j.ID, From: now, HerdJobs: 1, HerdAttempt: 1, HerdBuckets: 1})
		var pe *PolicyError
		switch {
		case errors.As(err, &pe):
			ans.PolicyError = pe
		case err != nil:
			writeError(w, http.StatusBadRequest, err.Error())
			return
		default:
			rule.Policy, rule.Random = c.Text, c.Random
			ans.Rule = rule
			for _, st := range c.Plan {
				delays = append(delays, st.Delay)
			}
		}
	}
	delay := func(attempt int) (time.Duration, *Duration, bool) {
		if attempt < 1 || attempt > len(delays) {
			return 0, nil, false
		}
		d := delays[attempt-1]
		ns, err := strconv.ParseInt(d.NS, 10, 64)
		return time.Duration(ns), &d, err == nil
	}

	// The attempts so far. The queue counts the attempts started and
	// stores the enqueue time, the finish time of a finished job, the
	// fire time of a delayed one and the lease deadline of a running one:
	// no time of each attempt.
	n := j.Attempts
	runs := func(to int, end time.Time) {
		if to < 1 || j.CreatedAt.IsZero() {
			return
		}
		text := fmt.Sprintf("attempts 1-%d ran in this span; the queue stores no time of each", to)
		if to == 1 {
			text = "attempt 1 ran in this span; the queue stores no time of it"
		}
		ev(barEvent{Kind: "runs", Attempt: 1, To: to, At: msOf(j.CreatedAt), AtText: timeText(j.CreatedAt), End: msOf(end), EndText: timeText(end), Source: "stored", Text: text})
	}
	// next is the first fire time ahead, and the attempt it runs.
	var next time.Time
	nextAttempt := 0
	switch j.State {
	case native.StateCompleted, native.StateFailed:
		runs(n-1, j.FinishedAt)
		kind, text := "completed", fmt.Sprintf("attempt %d completed", n)
		if j.State == native.StateFailed {
			kind, text = "failed", fmt.Sprintf("attempt %d failed for good", n)
			if j.Cancelled {
				text = fmt.Sprintf("cancelled by an operator (after %d attempts started)", n)
			}
		}
		ev(barEvent{Kind: kind, Attempt: n, At: msOf(j.FinishedAt), AtText: timeText(j.FinishedAt), Source: "stored", Text: text})
		ans.Notes = append(ans.Notes, "The job has finished: no rule schedules it again.")
	case native.StateActive:
		runs(n-1, now)
		ev(barEvent{Kind: "running", Attempt: n, At: ans.At, AtText: ans.AtText, Source: "now", Text: fmt.Sprintf("attempt %d is running", n)})
		ev(barEvent{Kind: "lease", Attempt: n, At: msOf(j.LeaseDeadline), AtText: timeText(j.LeaseDeadline), Source: "stored", Text: "its lease runs out unless renewed"})
		if d, dj, ok := delay(n); ok {
			next, nextAttempt = now.Add(d), n+1
			ev(barEvent{Kind: "fire", Attempt: n + 1, At: msOf(next), AtText: timeText(next), Source: "rule", Delay: dj,
				Text: fmt.Sprintf("attempt %d, if attempt %d fails now: %s later", n+1, n, dj.Text)})
		}
	case native.StateDelayed:
		if n >= 1 {
			if d, dj, ok := delay(n); ok {
				failed := j.NextFireAt.Add(-d)
				runs(n-1, failed)
				ev(barEvent{Kind: "failed", Attempt: n, At: msOf(failed), AtText: timeText(failed), Source: "inferred", Delay: dj,
					Text: fmt.Sprintf("attempt %d failed (the fire time less the rule's delay %s, if the worker runs this rule)", n, dj.Text)})
			} else {
				runs(n, now) // the last failed before now, when is not known
			}
		}
		next, nextAttempt = j.NextFireAt, n+1
		ev(barEvent{Kind: "fire", Attempt: n + 1, At: msOf(next), AtText: timeText(next), Source: "stored", Text: fmt.Sprintf("attempt %d is due", n+1)})
	default: // waiting
		runs(n, now)
		next, nextAttempt = now, n+1
		ev(barEvent{Kind: "due", Attempt: n + 1, At: ans.At, AtText: ans.AtText, Source: "now", Text: fmt.Sprintf("attempt %d is due now: it runs when a worker takes it", n+1)})
	}

	// The rule's fire times ahead: each later attempt failing the moment
	// it starts (run time not counted, as rebound plan counts it).
	if ans.Rule != nil && nextAttempt > 0 {
		fire := next
		shown := 0
		for a := nextAttempt; a < ans.Rule.MaxAttempts && shown < maxBarFires; a++ {
			d, dj, ok := delay(a)
			if !ok {
				break
			}
			fire = fire.Add(d)
			shown++
			ev(barEvent{Kind: "fire", Attempt: a + 1, At: msOf(fire), AtText: timeText(fire), Source: "rule", Delay: dj,
				Text: fmt.Sprintf("attempt %d, if attempt %d fails at once: %s after it", a+1, a, dj.Text)})
		}
		switch {
		case nextAttempt > ans.Rule.MaxAttempts:
			ans.Notes = append(ans.Notes, fmt.Sprintf("Attempt %d is past MaxAttempts %d: the worker runs it, since it was scheduled, but a rule of this cap would give up after it fails.", nextAttempt, ans.Rule.MaxAttempts))
		case ans.Rule.MaxAttempts-nextAttempt > shown:
			ans.Notes = append(ans.Notes, fmt.Sprintf("The bar shows the next %d fire times of %d.", shown, ans.Rule.MaxAttempts-nextAttempt))
		}
		ans.Notes = append(ans.Notes, fmt.Sprintf("Times ahead are the rule %s x %d's, jitter keyed by the job's ID as the native worker keys it; the queue does not store the worker's rule, so they hold if the worker runs this one.", ans.Rule.Policy, ans.Rule.MaxAttempts))
	}
	writeJSON(w, http.StatusOK, ans)
}

// lookup reads the job a request names (queue or queueKey; id or one or
// more idKey, the first of those that names a job), answering the request
// itself (and returning false) when it cannot.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (native.StoredJob, Queue, bool) {
	v := r.URL.Query()
	name, err := named(v, "queue")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return native.StoredJob{}, nil, false
	}
	// idKey may be given more than once: the first of those IDs that names
	// a job is looked up (the page sends what was typed, and what it reads
	// as once its escapes are decoded).
	ids := []string{v.Get("id")}
	if keys := v["idKey"]; len(keys) > 0 {
		ids = ids[:0]
		for _, k := range keys {
			id, ok := fromKey(k)
			if !ok {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("idKey %q is not base64url, want the key the page was given", k))
				return native.StoredJob{}, nil, false
			}
			if id != "" {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			ids = []string{""}
		}
	}
	id := ids[0]
	q, ok := s.queue(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no queue %q here; this page shows %s", name, s.queueNames()))
		return native.StoredJob{}, nil, false
	}
	if id == "" {
		writeError(w, http.StatusBadRequest, "missing job ID, want ?queue=NAME&id=JOB_ID (or queueKey and idKey, in base64url)")
		return native.StoredJob{}, nil, false
	}
	j, err := q.Job(r.Context(), id)
	for _, other := range ids[1:] {
		if !errors.Is(err, native.ErrNotFound) {
			break
		}
		j, err = q.Job(r.Context(), other)
	}
	switch {
	case errors.Is(err, native.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("queue %q has no job %q (never enqueued, or dropped by retention)", name, id))
		return native.StoredJob{}, nil, false
	case err != nil:
		writeError(w, http.StatusBadGateway, err.Error())
		return native.StoredJob{}, nil, false
	}
	return j, q, true
}
