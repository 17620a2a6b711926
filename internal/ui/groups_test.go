package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
)

// groupQueue is a native queue with the groups and bulk features, each
// call reading at most 3 jobs, so that every answer here is one bounded
// step of several.
type groupQueue struct{ *native.Queue }

func (q groupQueue) Groups(ctx context.Context, f native.Filter, cursor string) (native.GroupPage, error) {
	return q.FailureGroups(ctx, f, native.ScanOptions{Cursor: cursor, Limit: 3})
}

func (q groupQueue) CountJobs(ctx context.Context, f native.Filter, cursor string) (native.ScanProgress, error) {
	return q.CountMatching(ctx, f, native.ScanOptions{Cursor: cursor, Limit: 3})
}

func (q groupQueue) BulkAct(ctx context.Context, a native.BulkAction, f native.Filter, cursor string) (native.BulkProgress, error) {
	return q.BulkStep(ctx, a, f, native.BulkOptions{ScanOptions: native.ScanOptions{Cursor: cursor, Limit: 3}})
}

// failedQueue is a native queue "q" on a miniredis with 5 jobs cancelled
// (failed, of one group) and 2 waiting.
func failedQueue(t *testing.T) groupQueue {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := native.NewQueue(rdb, "q")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 7 {
		id := fmt.Sprintf("j%d", i)
		if _, err := q.Enqueue(ctx, nil, native.WithID(id)); err != nil {
			t.Fatal(err)
		}
		if i < 5 {
			if _, err := q.Cancel(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	return groupQueue{q}
}

func postBulk(s *Server, query, body string) *http.Response {
	r := httptest.NewRequest(http.MethodPost, "/api/bulk?"+query, strings.NewReader(body))
	r.Host = "127.0.0.1:8080"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set(tokenHeader, s.csrf)
	return request(s, r)
}

type stepAnswer struct {
	Groups []struct {
		ID, Fingerprint, ExampleIDText string
		Count                          int
	}
	Scanned, Matched, Done, Skipped int
	Next                            string
	Total                           int64
}

// The groups, count and bulk endpoints answer one bounded step each and
// the cursor to go on from; a whole run of steps groups, counts and acts
// on every job the filter picks.
func TestGroupsCountBulk(t *testing.T) {
	q := failedQueue(t)
	s := newServer(t, Config{Queues: []Queue{q}})
	if f := s.features(q); !strings.Contains(strings.Join(f, " "), "groups bulk") {
		t.Errorf("features %v, want groups and bulk", f)
	}
	cancelled := native.GroupID(native.Fingerprint(native.ErrCancelled.Error()))
	var groups, steps int
	for cursor := ""; ; steps++ {
		a := decode[stepAnswer](t, get(s, "/api/groups?"+url.Values{"queue": {"q"}, "cursor": {cursor}}.Encode()))
		if a.Scanned > 3 || a.Total != 5 || len(a.Groups) != 1 || a.Groups[0].ID != cancelled {
			t.Fatalf("groups step %d: %+v, want at most 3 read of 5, one group %s", steps, a, cancelled)
		}
		groups += a.Groups[0].Count
		if cursor = a.Next; cursor == "" {
			break
		}
	}
	if groups != 5 || steps != 1 {
		t.Errorf("groups counted %d in %d steps after the first, want 5 in 1", groups, steps)
	}
	count := decode[stepAnswer](t, get(s, "/api/count?queue=q&state=failed&group="+cancelled))
	if count.Matched != 3 || count.Next == "" {
		t.Errorf("count's first step: %+v, want 3 matched and a cursor", count)
	}
	done := 0
	for cursor := ""; ; {
		res := postBulk(s, "queue=q&state=failed&group="+cancelled, fmt.Sprintf(`{"action":"retry","cursor":%q}`, cursor))
		if res.StatusCode != http.StatusOK {
			t.Fatalf("bulk: %d %+v", res.StatusCode, decode[errorBody](t, res))
		}
		a := decode[stepAnswer](t, res)
		done += a.Done
		if cursor = a.Next; cursor == "" {
			break
		}
	}
	if c, _ := q.Counts(context.Background()); done != 5 || c.Waiting != 7 || c.Failed != 0 {
		t.Errorf("bulk retried %d; counts %+v, want 5 retried, 7 waiting", done, c)
	}
}

func TestGroupsCountBulkRefuseBadInput(t *testing.T) {
	q := failedQueue(t)
	s := newServer(t, Config{Queues: []Queue{q, newFakeQueue("plain")}})
	for i, c := range []struct {
		res  *http.Response
		code int
		want string
	}{
		{get(s, "/api/groups?queue=nope"), http.StatusNotFound, `no queue "nope"`},
		{get(s, "/api/groups?queue=plain"), http.StatusNotImplemented, "cannot group"},
		{get(s, "/api/groups?queue=q&cursor=bogus"), http.StatusBadRequest, "not a cursor"},
		{get(s, "/api/groups?queue=q&from=yesterday"), http.StatusBadRequest, `from "yesterday" is not a time`},
		{get(s, "/api/count?queue=q&state=dead"), http.StatusBadRequest, `state "dead" is unknown`},
		{get(s, "/api/count?queue=q&state=failed&from=10&to=5"), http.StatusBadRequest, "want a range"},
		{get(s, "/api/count?queue=plain&state=failed"), http.StatusNotImplemented, "cannot act on jobs in bulk"},
		{postBulk(s, "queue=q&state=waiting", `{"action":"retry"}`), http.StatusBadRequest, "retry does not apply to waiting jobs"},
		{postBulk(s, "queue=q&state=active", `{"action":"delete"}`), http.StatusBadRequest, "delete does not apply to active jobs"},
		{postBulk(s, "queue=q&state=failed", `{"action":"explode"}`), http.StatusBadRequest, `action "explode" is unknown`},
		{postBulk(s, "queue=q&state=failed", `{"action":"retry","extra":1}`), http.StatusBadRequest, "body is not a bulk step"},
		{postBulk(s, "queue=plain&state=failed", `{"action":"retry"}`), http.StatusNotImplemented, "cannot act on jobs in bulk"},
	} {
		got := decode[errorBody](t, c.res)
		if c.res.StatusCode != c.code || !strings.Contains(got.Error, c.want) {
			t.Errorf("request %d: %d %q, want %d saying %q", i, c.res.StatusCode, got.Error, c.code, c.want)
		}
	}
	// A bulk step is a state-changing request: the page's token is needed.
	r := httptest.NewRequest(http.MethodPost, "/api/bulk?queue=q&state=failed", strings.NewReader(`{"action":"delete"}`))
	r.Host = "127.0.0.1:8080"
	r.Header.Set("Content-Type", "application/json")
	if res := request(s, r); res.StatusCode != http.StatusForbidden {
		t.Errorf("bulk without the page's token: %d, want 403", res.StatusCode)
	}
	if c, _ := q.Counts(context.Background()); c.Failed != 5 {
		t.Errorf("counts %+v after refused requests, want 5 failed still", c)
	}
}
