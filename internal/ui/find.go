package ui

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
)

// Find: the jobs of one state whose ID starts with a prefix, whose name
// or last error holds a text, and whose time (enqueued, lease deadline,
// fire time or finish time, as the state's list orders them) lies in a
// range. The server reads the state's list a page at a time through
// JobPager and stops after findScan jobs: a search of a long list is cut
// short, and says so, with the cursor to go on from.

// findScan is the most jobs one find request reads, findPage the size of
// each page it reads them in. (Tests shrink them.)
var (
	findScan = 2000
	findPage = 1000
)

// findAnswer is the answer of GET /api/find.
type findAnswer struct {
	At   int64     `json:"at"`
	Jobs []jobJSON `json:"jobs"`
	// Scanned is how many jobs this request read.
	Scanned int `json:"scanned"`
	// Next is the cursor to go on from, "" when the search reached the
	// end of the list (or of the time range).
	Next string `json:"next"`
	// Cut reports that the search stopped before the end: at the most
	// jobs one request reads, or with the most matches one answer holds.
	Cut bool `json:"cut"`
	// Total is the jobs in the state, -1 when the count failed.
	Total int64 `json:"total"`
}

// jobTime is the time a state's list orders its jobs by.
func jobTime(st native.State, j native.StoredJob) time.Time {
	switch st {
	case native.StateWaiting:
		return j.CreatedAt
	case native.StateActive:
		return j.LeaseDeadline
	case native.StateDelayed:
		return j.NextFireAt
	}
	return j.FinishedAt
}

func (s *Server) find(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q, state, ok := s.queueState(w, v)
	if !ok {
		return
	}
	pager, ok := q.(JobPager)
	if !ok {
		writeError(w, http.StatusNotImplemented, fmt.Sprintf("queue %q cannot page its jobs, so it cannot search them", q.Name()))
		return
	}
	idPrefix, err := named(v, "id")
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	nameHas, errHas := v.Get("name"), v.Get("error")
	var from, to time.Time
	for _, p := range []struct {
		param string
		t     *time.Time
	}{{"from", &from}, {"to", &to}} {
		if s := v.Get(p.param); s != "" {
			ms, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("%s %q is not a time, want Unix milliseconds", p.param, s))
				return
			}
			*p.t = time.UnixMilli(ms)
		}
	}
	if !from.IsZero() && !to.IsZero() && to.Before(from) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("to %s is before from %s, want a range", to.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339)))
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
	// The lists of finished jobs run latest first, the others earliest
	// first: past the range's far end nothing more can match.
	latestFirst := state == native.StateCompleted || state == native.StateFailed
	ans := findAnswer{Jobs: []jobJSON{}, Total: -1}
	cursor := v.Get("cursor")
scan:
	for ans.Scanned < findScan {
		jobs, next, err := pager.JobPage(r.Context(), state, min(findPage, findScan-ans.Scanned), cursor)
		switch {
		case errors.Is(err, native.ErrCursorGone):
			writeError(w, http.StatusGone, err.Error()+"; search again from the start")
			return
		case errors.Is(err, native.ErrBadCursor):
			writeError(w, http.StatusBadRequest, err.Error())
			return
		case err != nil:
			writeError(w, http.StatusBadGateway, err.Error())
			return
		}
		for i, j := range jobs {
			ans.Scanned++
			at := jobTime(state, j)
			if latestFirst && !from.IsZero() && at.Before(from) || !latestFirst && !to.IsZero() && at.After(to) {
				cursor = ""
				break scan // past the range: the rest is further
			}
			if strings.HasPrefix(j.ID, idPrefix) && strings.Contains(j.Name, nameHas) && strings.Contains(j.LastError, errHas) &&
				(from.IsZero() || !at.Before(from)) && (to.IsZero() || !at.After(to)) {
				ans.Jobs = append(ans.Jobs, toJobJSON(q.Name(), j))
				if len(ans.Jobs) == limit && (i+1 < len(jobs) || next != "") {
					// Go on after this job: a page of one from the job
					// before gives its cursor.
					cursor = resumeAfter(r, pager, state, cursor, i)
					ans.Cut = true
					break scan
				}
			}
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if cursor != "" {
		ans.Cut = true
	}
	ans.Next = cursor
	if c, err := q.Counts(r.Context()); err == nil {
		ans.Total = countOf(c, state)
	}
	ans.At = time.Now().UnixMilli()
	writeJSON(w, http.StatusOK, ans)
}

// resumeAfter returns the cursor of the page after the i-th job (from 0)
// of the page at cursor, "" when it cannot be had: it reads those i+1
// jobs again, as one page.
func resumeAfter(r *http.Request, pager JobPager, st native.State, cursor string, i int) string {
	_, next, err := pager.JobPage(r.Context(), st, i+1, cursor)
	if err != nil {
		return ""
	}
	return next
}

// countOf is c's count of state st.
func countOf(c native.Counts, st native.State) int64 {
	switch st {
	case native.StateWaiting:
		return c.Waiting
	case native.StateActive:
		return c.Active
	case native.StateDelayed:
		return c.Delayed
	case native.StateCompleted:
		return c.Completed
	}
	return c.Failed
}
