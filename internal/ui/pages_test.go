package ui

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rebound-go/rebound/adapters/native"
)

// pagedQueue pages fakeQueue's jobs by ID; a cursor is the index to go on
// from, "gone" a cursor whose place is gone.
type pagedQueue struct{ *fakeQueue }

func (q pagedQueue) JobPage(ctx context.Context, st native.State, limit int, cursor string) ([]native.StoredJob, string, error) {
	all, _ := q.Jobs(ctx, st, 0)
	slices.SortFunc(all, func(a, b native.StoredJob) int { return strings.Compare(a.ID, b.ID) })
	from := 0
	switch cursor {
	case "":
	case "gone":
		return nil, "", native.ErrCursorGone
	default:
		var err error
		if from, err = strconv.Atoi(cursor); err != nil {
			return nil, "", fmt.Errorf("%w: %q", native.ErrBadCursor, cursor)
		}
	}
	end := min(from+limit, len(all))
	next := ""
	if end < len(all) {
		next = strconv.Itoa(end)
	}
	return all[from:end], next, nil
}

// /api/jobs pages a JobPager's lists by cursor and tells each list's
// total; a bad cursor is a 400, one whose place is gone a 410, and a
// cursor for a queue that cannot page a 501.
func TestJobsPages(t *testing.T) {
	fq := newFakeQueue("emails")
	for i := range 7 {
		id := fmt.Sprintf("w%d", i)
		fq.jobs[id] = native.StoredJob{ID: id, State: native.StateWaiting}
	}
	plain := newFakeQueue("plain")
	s := newServer(t, Config{Queues: []Queue{pagedQueue{fq}, plain}})
	type page struct {
		Jobs  []jobJSON
		Next  string
		Total int64
	}
	var got []string
	cursor := ""
	for range 10 {
		p := decode[page](t, get(s, "/api/jobs?queue=emails&state=waiting&limit=3&cursor="+cursor))
		if p.Total != 7 {
			t.Errorf("total %d, want 7", p.Total)
		}
		for _, j := range p.Jobs {
			got = append(got, j.ID)
		}
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if want := []string{"w0", "w1", "w2", "w3", "w4", "w5", "w6"}; !slices.Equal(got, want) {
		t.Errorf("pages listed %v, want %v", got, want)
	}
	if f := decode[[]queueInfo](t, get(s, "/api/queues")); !slices.Contains(f[0].Features, "pages") || slices.Contains(f[1].Features, "pages") {
		t.Errorf("features %+v, want pages for the pager only", f)
	}
	for target, code := range map[string]int{
		"/api/jobs?queue=emails&state=waiting&cursor=bogus": http.StatusBadRequest,
		"/api/jobs?queue=emails&state=waiting&cursor=gone":  http.StatusGone,
		"/api/jobs?queue=plain&state=waiting&cursor=":       http.StatusNotImplemented,
	} {
		if res := get(s, target); res.StatusCode != code {
			t.Errorf("GET %s = %d, want %d", target, res.StatusCode, code)
		}
	}
}
