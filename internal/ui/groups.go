package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
)

// Failure groups and bulk actions: the failed jobs grouped by their
// error's fingerprint, and an action taken on every job a filter picks.
// Each request reads a bounded number of jobs (the queue's own bound, a
// few thousand) and answers where it stopped; the page asks again from
// there, showing its progress, until the queue says it read the last job.

// Grouper is implemented by a queue that groups its failed jobs by their
// error's fingerprint (native.Fingerprint). With it the page shows a
// groups view.
type Grouper interface {
	// Groups groups the failed jobs f picks, reading a bounded number of
	// them from cursor ("" for the first), latest failure first, and
	// says where it stopped (GroupPage.Next, "" at the end).
	Groups(ctx context.Context, f native.Filter, cursor string) (native.GroupPage, error)
}

// BulkActor is implemented by a queue that acts on every job a filter
// picks, in bounded steps. With it the page offers retry, delete and
// cancel of a whole failure group and of everything Find's filter picks,
// each behind a confirmation that shows the count.
type BulkActor interface {
	// CountJobs counts the jobs f picks among a bounded number read from
	// cursor, and says where it stopped.
	CountJobs(ctx context.Context, f native.Filter, cursor string) (native.ScanProgress, error)
	// BulkAct takes action a on the jobs f picks among a bounded number
	// read from cursor, and says what it did and where it stopped.
	BulkAct(ctx context.Context, a native.BulkAction, f native.Filter, cursor string) (native.BulkProgress, error)
}

// Features of the groups and bulk actions.
const (
	featureGroups = "groups" // Grouper
	featureBulk   = "bulk"   // BulkActor
)

// filterOf reads the filter a groups, count or bulk request names: the
// state, and id (or idKey), name, error, group (a failure group's ID),
// from and to (Unix ms).
func filterOf(v url.Values, state native.State) (native.Filter, error) {
	id, err := named(v, "id")
	if err != nil {
		return native.Filter{}, err
	}
	f := native.Filter{State: state, IDPrefix: id, Name: v.Get("name"), Error: v.Get("error"), Group: v.Get("group")}
	for _, p := range []struct {
		param string
		t     *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if s := v.Get(p.param); s != "" {
			ms, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return native.Filter{}, fmt.Errorf("%s %q is not a time, want Unix milliseconds", p.param, s)
			}
			*p.t = time.UnixMilli(ms)
		}
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		return native.Filter{}, fmt.Errorf("to %s is before from %s, want a range", f.To.UTC().Format(time.RFC3339), f.From.UTC().Format(time.RFC3339))
	}
	return f, nil
}

// groupJSON is a failure group as the page shows it. Text is for reading
// (Printable); times are Unix ms.
type groupJSON struct {
	ID          string `json:"id"`
	Fingerprint string `json:"fingerprint"`
	Count       int    `json:"count"`
	FirstSeen   int64  `json:"firstSeen"`
	LastSeen    int64  `json:"lastSeen"`
	// The example job: its key (textKey), its ID for reading and its
	// last error for reading.
	ExampleKey    string `json:"exampleKey"`
	ExampleIDText string `json:"exampleIdText"`
	ExampleError  string `json:"exampleError"`
}

// progressJSON is how far a groups, count or bulk request got.
type progressJSON struct {
	At      int64 `json:"at"`
	Scanned int   `json:"scanned"`
	Matched int   `json:"matched"`
	// Next is the cursor to go on from, "" when the last job was read.
	Next string `json:"next"`
	// Reached is the time of the last job read (Unix ms, 0 if none).
	Reached int64 `json:"reached"`
	// Total is the jobs in the state.
	Total int64 `json:"total"`
}

func toProgress(p native.ScanProgress) progressJSON {
	out := progressJSON{At: time.Now().UnixMilli(), Scanned: p.Scanned, Matched: p.Matched, Next: p.Next, Total: p.Total}
	if !p.Reached.IsZero() {
		out.Reached = p.Reached.UnixMilli()
	}
	return out
}

// scanError answers a failed groups, count or bulk request.
func scanError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, native.ErrCursorGone):
		writeError(w, http.StatusGone, err.Error()+"; start again from the first job")
	case errors.Is(err, native.ErrBadCursor):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		writeError(w, http.StatusBadGateway, err.Error())
	}
}

// groups answers GET /api/groups: one bounded step of grouping the failed
// jobs.
func (s *Server) groups(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	v.Set("state", native.StateFailed.String())
	q, _, ok := s.queueState(w, v)
	if !ok {
		return
	}
	g, ok := q.(Grouper)
	if !ok {
		writeError(w, http.StatusNotImplemented, fmt.Sprintf("queue %q cannot group its failed jobs", q.Name()))
		return
	}
	f, err := filterOf(v, native.StateFailed)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	page, err := g.Groups(r.Context(), f, v.Get("cursor"))
	if err != nil {
		scanError(w, err)
		return
	}
	out := struct {
		progressJSON
		Groups []groupJSON `json:"groups"`
	}{toProgress(page.ScanProgress), make([]groupJSON, len(page.Groups))}
	for i, x := range page.Groups {
		out.Groups[i] = groupJSON{ID: x.ID, Fingerprint: Printable(x.Fingerprint, false), Count: x.Count,
			FirstSeen: x.FirstSeen.UnixMilli(), LastSeen: x.LastSeen.UnixMilli(),
			ExampleKey: textKey(x.ExampleID), ExampleIDText: Printable(x.ExampleID, false), ExampleError: Printable(x.ExampleError, false)}
	}
	writeJSON(w, http.StatusOK, out)
}

// count answers GET /api/count: one bounded step of counting what a
// filter picks, the dry run of a bulk action.
func (s *Server) count(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q, state, ok := s.queueState(w, v)
	if !ok {
		return
	}
	b, ok := q.(BulkActor)
	if !ok {
		writeError(w, http.StatusNotImplemented, fmt.Sprintf("queue %q cannot act on jobs in bulk", q.Name()))
		return
	}
	f, err := filterOf(v, state)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := b.CountJobs(r.Context(), f, v.Get("cursor"))
	if err != nil {
		scanError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toProgress(p))
}

// bulkRequest is the body of POST /api/bulk; the filter is in the URL's
// query, as for /api/count.
type bulkRequest struct {
	Action string `json:"action"` // retry, delete or cancel
	Cursor string `json:"cursor"` // the last step's next, "" for the first
}

// bulk answers POST /api/bulk: one bounded step of an action on what a
// filter picks.
func (s *Server) bulk(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q, state, ok := s.queueState(w, v)
	if !ok {
		return
	}
	var req bulkRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body is not a bulk step: "+err.Error()+`; want {"action": "retry"|"delete"|"cancel", "cursor": CURSOR}`)
		return
	}
	b, ok := q.(BulkActor)
	if !ok {
		writeError(w, http.StatusNotImplemented, fmt.Sprintf("queue %q cannot act on jobs in bulk", q.Name()))
		return
	}
	a, ok := native.ParseBulkAction(req.Action)
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("action %q is unknown, want retry, delete or cancel", req.Action))
		return
	}
	if !a.Applies(state) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s does not apply to %s jobs: retry takes failed jobs, delete all but running ones, cancel waiting, delayed and running ones", a, state))
		return
	}
	f, err := filterOf(v, state)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	p, err := b.BulkAct(r.Context(), a, f, req.Cursor)
	if err != nil {
		scanError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		progressJSON
		Done    int `json:"done"`
		Skipped int `json:"skipped"`
	}{toProgress(p.ScanProgress), p.Done, p.Skipped})
}
