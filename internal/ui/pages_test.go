package ui

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

// /api/find reads at most findScan jobs a request, says when it stopped
// short and gives the cursor to go on from; matches by ID prefix, name,
// error and time range; the answer's matches are cut at the limit with a
// cursor that resumes after the last one.
func TestFindIsBounded(t *testing.T) {
	scan, pg := findScan, findPage
	t.Cleanup(func() { findScan, findPage = scan, pg })
	findScan, findPage = 4, 3
	fq := newFakeQueue("emails")
	for i := range 10 {
		id := fmt.Sprintf("j%02d", i)
		name := "plain"
		if i%3 == 0 {
			name = "special"
		}
		fq.jobs[id] = native.StoredJob{ID: id, Name: name, State: native.StateWaiting, CreatedAt: time.UnixMilli(int64(1000 * i))}
	}
	s := newServer(t, Config{Queues: []Queue{pagedQueue{fq}}})
	type answer struct {
		Jobs    []jobJSON
		Scanned int
		Next    string
		Cut     bool
	}
	all := func(query string) (ids []string, requests int) {
		cursor := ""
		for requests < 20 {
			requests++
			a := decode[answer](t, get(s, "/api/find?queue=emails&state=waiting&"+query+"&cursor="+cursor))
			if a.Scanned > findScan {
				t.Errorf("%s: one request read %d jobs, want at most %d", query, a.Scanned, findScan)
			}
			for _, j := range a.Jobs {
				ids = append(ids, j.ID)
			}
			if !a.Cut {
				return ids, requests
			}
			cursor = a.Next
		}
		t.Fatalf("%s: no end after %d requests", query, requests)
		return nil, 0
	}
	if ids, n := all("name=special"); strings.Join(ids, " ") != "j00 j03 j06 j09" || n != 3 {
		t.Errorf("name=special: %v in %d requests, want j00 j03 j06 j09 in 3", ids, n)
	}
	if ids, _ := all("name=special&limit=1"); strings.Join(ids, " ") != "j00 j03 j06 j09" {
		t.Errorf("name=special, one a request: %v", ids)
	}
	if ids, _ := all("id=j0"); len(ids) != 10 {
		t.Errorf("id=j0: %v, want all ten", ids)
	}
	if ids, n := all("from=2000&to=4000"); strings.Join(ids, " ") != "j02 j03 j04" || n != 2 {
		t.Errorf("from 2s to 4s: %v in %d requests, want j02..j04, stopping past the range", ids, n)
	}
	for _, bad := range []string{"state=bogus", "state=waiting&from=x", "state=waiting&from=5&to=1", "state=waiting&limit=0"} {
		if res := get(s, "/api/find?queue=emails&"+bad); res.StatusCode != http.StatusBadRequest {
			t.Errorf("find %s = %d, want 400", bad, res.StatusCode)
		}
	}
}

// An action names its queue and job by their exact bytes (queueKey,
// idKey, base64url), so names that are not UTF-8 reach the queue whole;
// a key that is not base64url is refused.
func TestActionByKey(t *testing.T) {
	const name, id = "q-\xff", "job-\xfe\r\n"
	fq := newFakeQueue(name)
	fq.jobs[id] = native.StoredJob{ID: id, State: native.StateFailed}
	s := newServer(t, Config{Queues: []Queue{fq}})
	body := fmt.Sprintf(`{"queueKey": %q, "action": "retry", "idKey": %q}`, textKey(name), textKey(id))
	if res := post(s, body, nil); res.StatusCode != http.StatusOK {
		t.Fatalf("retry by key = %d, want 200", res.StatusCode)
	}
	if got := fq.calls(); !slices.Equal(got, []string{"retry " + id}) {
		t.Errorf("queue saw %q, want a retry of %q", got, id)
	}
	if res := post(s, `{"queueKey": "!!", "action": "pause"}`, nil); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad key = %d, want 400", res.StatusCode)
	}
	j := decode[jobJSON](t, get(s, "/api/job?queueKey="+textKey(name)+"&idKey="+textKey("nope")+"&idKey="+textKey(id)))
	if j.Key != textKey(id) || j.IDText != `job-\xfe\x0d\x0a` {
		t.Errorf("lookup by keys: key %q, text %q", j.Key, j.IDText)
	}
}
