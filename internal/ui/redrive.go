package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
)

// Redrives: the failed jobs a filter picks (a failure group, or Find's
// filter) sent back at a rate, held while their dependency's breaker is
// open (native.Redrive). The server's process drives a redrive it starts
// or resumes, so that it goes on when the page goes away; its state lives
// in Redis, so that `rebound queue redrive` sees and acts on the same one.

// Redriver is implemented by a queue that redrives its failed jobs. With
// it the page shows a redrive panel.
type Redriver interface {
	// Redrive reads the queue's redrive, the last one if it ended; ok is
	// false when it never had one.
	Redrive(ctx context.Context) (st native.RedriveStatus, ok bool, err error)
	// RedriveStart starts a redrive of the failed jobs f picks at rate
	// jobs a second, holding while dep's breaker is open ("" for none),
	// and drives it in the background, past the request.
	RedriveStart(ctx context.Context, f native.Filter, rate float64, dep string) error
	// RedriveControl pauses ("pause"), resumes ("resume": and drives it
	// when no live process does) or cancels ("cancel") the queue's
	// redrive.
	RedriveControl(ctx context.Context, action string) error
}

const featureRedrive = "redrive" // Redriver

// redriveJSON is a redrive as the page shows it. Text is for reading
// (Printable); times are Unix ms, 0 when unset.
type redriveJSON struct {
	None       bool    `json:"none,omitempty"`
	ID         string  `json:"id,omitempty"`
	State      string  `json:"state,omitempty"`
	Held       string  `json:"held,omitempty"`
	Filter     string  `json:"filter,omitempty"`
	Rate       float64 `json:"rate,omitempty"`
	Dependency string  `json:"dependency,omitempty"`
	Total      int64   `json:"total"`
	Sent       int64   `json:"sent"`
	Skipped    int64   `json:"skipped"`
	Left       int64   `json:"left"`
	Started    int64   `json:"started,omitempty"`
	Updated    int64   `json:"updated,omitempty"`
	Finished   int64   `json:"finished,omitempty"`
	Live       bool    `json:"live"`
}

func toRedriveJSON(st native.RedriveStatus, ok bool) redriveJSON {
	if !ok {
		return redriveJSON{None: true}
	}
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	return redriveJSON{ID: st.ID, State: string(st.State), Held: Printable(st.Held, false), Filter: Printable(st.Filter.String(), false),
		Rate: st.Rate, Dependency: Printable(st.Dependency, false), Total: st.Total, Sent: st.Sent, Skipped: st.Skipped, Left: st.Left,
		Started: ms(st.Started), Updated: ms(st.Updated), Finished: ms(st.Finished), Live: st.Live}
}

// redriver finds the request's queue and its Redriver.
func (s *Server) redriver(w http.ResponseWriter, r *http.Request) (Redriver, bool) {
	v := r.URL.Query()
	v.Set("state", native.StateFailed.String())
	q, _, ok := s.queueState(w, v)
	if !ok {
		return nil, false
	}
	rd, ok := q.(Redriver)
	if !ok {
		writeError(w, http.StatusNotImplemented, fmt.Sprintf("queue %q cannot redrive its failed jobs", q.Name()))
		return nil, false
	}
	return rd, true
}

// redriveStatus answers GET /api/redrive: the queue's redrive.
func (s *Server) redriveStatus(w http.ResponseWriter, r *http.Request) {
	rd, ok := s.redriver(w, r)
	if !ok {
		return
	}
	st, found, err := rd.Redrive(r.Context())
	if errors.Is(err, native.ErrRedriveSharded) {
		writeError(w, http.StatusNotImplemented, err.Error())
		return
	}
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, toRedriveJSON(st, found))
}

// redriveRequest is the body of POST /api/redrive; a start's filter is in
// the URL's query, as for /api/count.
type redriveRequest struct {
	Action     string  `json:"action"` // start, pause, resume or cancel
	Rate       float64 `json:"rate"`   // start: jobs a second
	Dependency string  `json:"dependency"`
}

// redrive answers POST /api/redrive: a redrive started, paused, resumed
// or cancelled, with its status after.
func (s *Server) redrive(w http.ResponseWriter, r *http.Request) {
	rd, ok := s.redriver(w, r)
	if !ok {
		return
	}
	var req redriveRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body is not a redrive request: "+err.Error()+`; want {"action": "start"|"pause"|"resume"|"cancel", "rate": JOBS_PER_SECOND, "dependency": NAME}`)
		return
	}
	var err error
	switch req.Action {
	case "start":
		if !(req.Rate > 0 && req.Rate <= native.MaxRedriveRate) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("rate %v is out of range, want jobs per second over 0 and at most %d", req.Rate, native.MaxRedriveRate))
			return
		}
		f, ferr := filterOf(r.URL.Query(), native.StateFailed)
		if ferr != nil {
			writeError(w, http.StatusBadRequest, ferr.Error())
			return
		}
		err = rd.RedriveStart(r.Context(), f, req.Rate, req.Dependency)
	case "pause", "resume", "cancel":
		err = rd.RedriveControl(r.Context(), req.Action)
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("action %q is unknown, want start, pause, resume or cancel", req.Action))
		return
	}
	switch {
	case errors.Is(err, native.ErrRedriveRunning), errors.Is(err, native.ErrNoRedrive):
		writeError(w, http.StatusConflict, err.Error())
		return
	case errors.Is(err, native.ErrRedriveSharded):
		writeError(w, http.StatusNotImplemented, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	st, found, err := rd.Redrive(r.Context())
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, toRedriveJSON(st, found))
}
