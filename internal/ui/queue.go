package ui

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/rebound-go/rebound/adapters/native"
)

// Queue is what the queue view reads from one queue: its counts by state,
// refreshed live, and single jobs looked up by ID. *native.Queue implements
// it.
type Queue interface {
	Name() string
	Counts(ctx context.Context) (native.Counts, error)
	Job(ctx context.Context, id string) (native.StoredJob, error)
}

// The interfaces below are the queue view's extension points. A [Queue]
// that implements one of them gains its feature: the API serves it and the
// page shows its controls, each action behind a confirmation. A queue that
// implements none shows counts and job lookup only.

// JobLister is implemented by a queue that lists its jobs by state. With it
// the page shows the delayed jobs as a timeline of upcoming retries and the
// failed jobs with their last errors.
type JobLister interface {
	// Jobs returns at most limit jobs in state: delayed jobs soonest first,
	// failed and completed jobs latest first, waiting jobs in the order they
	// will run, active jobs by lease deadline.
	Jobs(ctx context.Context, state native.State, limit int) ([]native.StoredJob, error)
}

// JobPager is implemented by a queue that lists its jobs a page at a
// time, by cursor. With it every list of the page pages, forward and
// back.
type JobPager interface {
	// JobPage returns at most limit jobs in state in the order Jobs gives
	// them, after the page whose next cursor is cursor ("" for the first
	// page), and the cursor of the page after it ("" when this page is
	// the last). A cursor JobPage did not return for state is an error
	// wrapping native.ErrBadCursor; one whose place is gone,
	// native.ErrCursorGone.
	JobPage(ctx context.Context, state native.State, limit int, cursor string) (jobs []native.StoredJob, next string, err error)
}

// Retrier is implemented by a queue that sends a failed job back to run
// again, with its attempts counted afresh.
type Retrier interface {
	RetryJob(ctx context.Context, id string) error
}

// Runner is implemented by a queue that makes a delayed job due at once.
type Runner interface {
	RunJobNow(ctx context.Context, id string) error
}

// Deleter is implemented by a queue that deletes a job in any state but
// active.
type Deleter interface {
	DeleteJob(ctx context.Context, id string) error
}

// Pauser is implemented by a queue whose workers can be paused: a paused
// queue hands out no jobs until it is resumed. Its Counts reports whether
// it is paused (native.Counts.Paused).
type Pauser interface {
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// Features a queue reports to the page, by the interfaces it implements.
const (
	featureJobs   = "jobs"   // JobLister
	featurePages  = "pages"  // JobPager
	featureRetry  = "retry"  // Retrier
	featureRun    = "run"    // Runner
	featureDelete = "delete" // Deleter
	featurePause  = "pause"  // Pauser
)

// features returns the features q reports; a read-only server reports
// no action's.
func (s *Server) features(q Queue) []string {
	f := []string{}
	if _, ok := q.(JobLister); ok {
		f = append(f, featureJobs)
	}
	if _, ok := q.(JobPager); ok {
		f = append(f, featurePages)
	}
	if _, ok := q.(Retrier); ok {
		f = append(f, featureRetry)
	}
	if _, ok := q.(Runner); ok {
		f = append(f, featureRun)
	}
	if _, ok := q.(Deleter); ok {
		f = append(f, featureDelete)
	}
	if _, ok := q.(Pauser); ok {
		f = append(f, featurePause)
	}
	if _, ok := q.(Grouper); ok {
		f = append(f, featureGroups)
	}
	if _, ok := q.(BulkActor); ok {
		f = append(f, featureBulk)
	}
	if _, ok := q.(Redriver); ok {
		f = append(f, featureRedrive)
	}
	if s.readOnly {
		f = slices.DeleteFunc(f, func(x string) bool { return x != featureJobs && x != featurePages && x != featureGroups })
	}
	return f
}

// queueInfo describes a queue to the page.
type queueInfo struct {
	Name string `json:"name"`
	// Key is the name's exact bytes, in base64url: JSON turns bytes that
	// are not UTF-8 into U+FFFD, and the page names the queue by its key.
	Key string `json:"key"`
	// Text is the name for reading (Printable).
	Text     string   `json:"text"`
	Features []string `json:"features"`
}

// textKey is the key by which the page names a queue or a job: its exact
// bytes in base64url.
func textKey(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// fromKey reads a textKey back.
func fromKey(k string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(k)
	return string(b), err == nil
}

// snapshot is one sample of every queue, sent on the event stream.
type snapshot struct {
	// At is the server's clock when the sample was taken, Unix ms.
	At     int64         `json:"at"`
	Queues []queueSample `json:"queues"`
}

type queueSample struct {
	Name   string      `json:"name"`
	Key    string      `json:"key"`
	Counts *countsJSON `json:"counts,omitempty"`
	Paused *bool       `json:"paused,omitempty"`
	Error  string      `json:"error,omitempty"`
}

type countsJSON struct {
	Waiting   int64 `json:"waiting"`
	Active    int64 `json:"active"`
	Delayed   int64 `json:"delayed"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
}

// jobJSON is a job as the page shows it. Times are Unix ms, omitted when
// unset.
type jobJSON struct {
	ID string `json:"id"`
	// Key is the ID's exact bytes in base64url (textKey): the page acts
	// on a job by its key, since JSON turns bytes that are not UTF-8 into
	// U+FFFD. IDText is the ID for reading (Printable).
	Key    string `json:"key"`
	IDText string `json:"idText"`
	Queue  string `json:"queue"`
	// Name is the job's name for reading (Printable).
	Name          string            `json:"name"`
	State         string            `json:"state"`
	Attempts      int               `json:"attempts"`
	MaxAttempts   int               `json:"maxAttempts"`
	LastError     string            `json:"lastError"`
	NextFireAt    int64             `json:"nextFireAt,omitempty"`
	LeaseDeadline int64             `json:"leaseDeadline,omitempty"`
	CreatedAt     int64             `json:"createdAt,omitempty"`
	FinishedAt    int64             `json:"finishedAt,omitempty"`
	PayloadSize   int               `json:"payloadSize"`
	Payload       string            `json:"payload"`       // the payload as text, cut to payloadPreview bytes
	PayloadBinary bool              `json:"payloadBinary"` // the payload is not UTF-8 text and is not shown
	Metadata      map[string]string `json:"metadata"`
}

// payloadPreview is how much of a payload the page shows.
const payloadPreview = 4 << 10

func toJobJSON(queue string, j native.StoredJob) jobJSON {
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	out := jobJSON{
		ID: j.ID, Key: textKey(j.ID), IDText: Printable(j.ID, false), Queue: queue, Name: Printable(j.Name, false), State: j.State.String(),
		Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, LastError: j.LastError,
		NextFireAt: ms(j.NextFireAt), LeaseDeadline: ms(j.LeaseDeadline),
		CreatedAt: ms(j.CreatedAt), FinishedAt: ms(j.FinishedAt),
		PayloadSize: len(j.Payload), Metadata: j.Metadata,
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	p := j.Payload
	if len(p) > payloadPreview {
		p = p[:payloadPreview]
		for i := 1; i < utf8.UTFMax && !utf8.Valid(p); i++ {
			p = p[:len(p)-1] // do not cut a character in two
		}
	}
	if utf8.Valid(p) {
		out.Payload = string(p)
	} else {
		out.PayloadBinary = true
	}
	return out
}

func (s *Server) queue(name string) (Queue, bool) {
	for _, q := range s.queues {
		if q.Name() == name {
			return q, true
		}
	}
	return nil, false
}

// sample reads every queue's counts, each within the refresh interval.
func (s *Server) sample(ctx context.Context) snapshot {
	snap := snapshot{At: time.Now().UnixMilli(), Queues: make([]queueSample, len(s.queues))}
	for i, q := range s.queues {
		qs := queueSample{Name: q.Name(), Key: textKey(q.Name())}
		cctx, cancel := context.WithTimeout(ctx, max(s.refresh, time.Second))
		c, err := q.Counts(cctx)
		if err == nil {
			qs.Counts = &countsJSON{c.Waiting, c.Active, c.Delayed, c.Completed, c.Failed}
			if _, ok := q.(Pauser); ok {
				paused := c.Paused // read with the counts, in one round trip
				qs.Paused = &paused
			}
		}
		cancel()
		if err != nil {
			qs.Error = err.Error()
		}
		snap.Queues[i] = qs
	}
	return snap
}

// events streams a snapshot of every queue each refresh interval, as
// server-sent events, until the client goes away or the server stops.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	// The stream stays open as long as the page does: no read deadline
	// (the request was read whole; past its deadline the server would
	// cancel the stream), a write deadline per event, so that a client
	// that stops reading is dropped.
	if err := rc.SetReadDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(s.refresh)
	defer tick.Stop()
	for {
		b, err := json.Marshal(s.sample(r.Context()))
		if err != nil {
			return
		}
		if err := rc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return
		}
		if _, err := fmt.Fprintf(w, "retry: 2000\nevent: counts\ndata: %s\n\n", b); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

func (s *Server) queueList(w http.ResponseWriter, _ *http.Request) {
	out := make([]queueInfo, len(s.queues))
	for i, q := range s.queues {
		out[i] = queueInfo{Name: q.Name(), Key: textKey(q.Name()), Text: Printable(q.Name(), false), Features: s.features(q)}
	}
	writeJSON(w, http.StatusOK, out)
}

// named reads a queue's name or a job's ID from a request: param, or its
// exact bytes in base64url from param+"Key" (queueKey, idKey).
func named(v url.Values, param string) (string, error) {
	if k := v.Get(param + "Key"); k != "" {
		s, ok := fromKey(k)
		if !ok {
			return "", fmt.Errorf("%sKey %q is not base64url, want the key the page was given", param, k)
		}
		return s, nil
	}
	return v.Get(param), nil
}

func (s *Server) job(w http.ResponseWriter, r *http.Request) {
	j, q, ok := s.lookup(w, r)
	if ok {
		writeJSON(w, http.StatusOK, toJobJSON(q.Name(), j))
	}
}

// queueState reads the queue and state a list request names, answering
// the request itself (and returning false) when either is wrong.
func (s *Server) queueState(w http.ResponseWriter, v url.Values) (Queue, native.State, bool) {
	name, err := named(v, "queue")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, 0, false
	}
	q, ok := s.queue(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no queue %q here; this page shows %s", name, s.queueNames()))
		return nil, 0, false
	}
	state, ok := ParseState(v.Get("state"))
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("state %q is unknown, want waiting, active, delayed, completed or failed", v.Get("state")))
		return nil, 0, false
	}
	return q, state, true
}

// maxListed is the most jobs one list request returns.
const maxListed = 500

func (s *Server) jobs(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q, state, ok := s.queueState(w, v)
	if !ok {
		return
	}
	lister, ok := q.(JobLister)
	if !ok {
		writeError(w, http.StatusNotImplemented, fmt.Sprintf("queue %q cannot list its jobs", q.Name()))
		return
	}
	limit := 50
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxListed {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit %q is out of range, want 1..%d", l, maxListed))
			return
		}
		limit = n
	}
	var (
		list []native.StoredJob
		next string
		err  error
	)
	if cursor := v.Get("cursor"); cursor != "" || v.Has("cursor") {
		pager, ok := q.(JobPager)
		if !ok {
			writeError(w, http.StatusNotImplemented, fmt.Sprintf("queue %q cannot page its jobs", q.Name()))
			return
		}
		list, next, err = pager.JobPage(r.Context(), state, limit, cursor)
	} else {
		list, err = lister.Jobs(r.Context(), state, limit)
	}
	switch {
	case errors.Is(err, native.ErrCursorGone):
		writeError(w, http.StatusGone, err.Error()+"; start again from the first page")
		return
	case errors.Is(err, native.ErrBadCursor):
		writeError(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	out := make([]jobJSON, 0, min(len(list), limit))
	for _, j := range list[:min(len(list), limit)] {
		out = append(out, toJobJSON(q.Name(), j))
	}
	// The list's total, read after the page: a count of the state's
	// list or set, one round trip.
	total := int64(-1)
	if c, err := q.Counts(r.Context()); err == nil {
		total = map[native.State]int64{native.StateWaiting: c.Waiting, native.StateActive: c.Active, native.StateDelayed: c.Delayed,
			native.StateCompleted: c.Completed, native.StateFailed: c.Failed}[state]
	}
	writeJSON(w, http.StatusOK, struct {
		At    int64     `json:"at"`
		Jobs  []jobJSON `json:"jobs"`
		Next  string    `json:"next"`  // the next page's cursor, "" on the last page (or without a cursor)
		Total int64     `json:"total"` // the jobs in state, -1 when the count failed
	}{time.Now().UnixMilli(), out, next, total})
}

// ParseState reads a job state by its name (native.State's String):
// waiting, active, delayed, completed or failed.
func ParseState(s string) (native.State, bool) {
	for st := native.StateWaiting; st <= native.StateFailed; st++ {
		if st.String() == s {
			return st, true
		}
	}
	return 0, false
}

// actionRequest is the body of POST /api/action.
type actionRequest struct {
	Queue  string `json:"queue"`
	Action string `json:"action"` // retry, run, delete, pause or resume
	ID     string `json:"id"`     // the job, for retry, run and delete
	// QueueKey and IDKey name the queue and the job by their exact bytes
	// in base64url, in place of Queue and ID: names that are not UTF-8
	// do not survive JSON.
	QueueKey string `json:"queueKey,omitempty"`
	IDKey    string `json:"idKey,omitempty"`
}

// action takes one operator action on a queue, if the queue supports it.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	var req actionRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body is not an action: "+err.Error()+`; want {"queue": NAME, "action": "retry"|"run"|"delete"|"pause"|"resume", "id": JOB_ID}`)
		return
	}
	for _, k := range []struct {
		key string
		to  *string
	}{{req.QueueKey, &req.Queue}, {req.IDKey, &req.ID}} {
		if k.key == "" {
			continue
		}
		v, ok := fromKey(k.key)
		if !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("key %q is not base64url, want the key the page was given", k.key))
			return
		}
		*k.to = v
	}
	q, ok := s.queue(req.Queue)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no queue %q here; this page shows %s", req.Queue, s.queueNames()))
		return
	}
	var do func(ctx context.Context) error
	needsID := true
	switch req.Action {
	case "retry":
		if a, ok := q.(Retrier); ok {
			do = func(ctx context.Context) error { return a.RetryJob(ctx, req.ID) }
		}
	case "run":
		if a, ok := q.(Runner); ok {
			do = func(ctx context.Context) error { return a.RunJobNow(ctx, req.ID) }
		}
	case "delete":
		if a, ok := q.(Deleter); ok {
			do = func(ctx context.Context) error { return a.DeleteJob(ctx, req.ID) }
		}
	case "pause", "resume":
		needsID = false
		if a, ok := q.(Pauser); ok {
			do = a.Pause
			if req.Action == "resume" {
				do = a.Resume
			}
		}
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("action %q is unknown, want retry, run, delete, pause or resume", req.Action))
		return
	}
	switch {
	case do == nil:
		writeError(w, http.StatusNotImplemented, fmt.Sprintf("queue %q does not support %s", q.Name(), req.Action))
		return
	case needsID && req.ID == "":
		writeError(w, http.StatusBadRequest, fmt.Sprintf("action %s needs the job's ID", req.Action))
		return
	case !needsID && req.ID != "":
		writeError(w, http.StatusBadRequest, fmt.Sprintf("action %s takes the whole queue, not a job; want no ID", req.Action))
		return
	}
	err := do(r.Context())
	switch {
	case errors.Is(err, native.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case err != nil:
		writeError(w, http.StatusConflict, err.Error())
	default:
		writeJSON(w, http.StatusOK, struct {
			OK bool `json:"ok"`
		}{true})
	}
}

func (s *Server) queueNames() string {
	if len(s.queues) == 0 {
		return "no queues (start it with -redis URL -queue NAME)"
	}
	out := ""
	for i, q := range s.queues {
		if i > 0 {
			out += ", "
		}
		out += strconv.Quote(q.Name())
	}
	return out
}
