package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
)

// redriveQueue is a native queue with the redrive feature, driving each
// redrive it starts or takes over in the background, as rebound ui does.
type redriveQueue struct{ groupQueue }

func (q redriveQueue) Redrive(ctx context.Context) (native.RedriveStatus, bool, error) {
	return q.RedriveStatus(ctx)
}

func (q redriveQueue) RedriveStart(ctx context.Context, f native.Filter, rate float64, dep string) error {
	if dep != "" {
		return fmt.Errorf("this test queue has no breakers")
	}
	r, err := q.StartRedrive(ctx, native.RedriveOptions{Filter: f, Rate: rate})
	if err == nil {
		go func() { _, _ = r.Run(context.Background()) }()
	}
	return err
}

func (q redriveQueue) RedriveControl(ctx context.Context, action string) error {
	switch action {
	case "pause":
		return q.PauseRedrive(ctx)
	case "cancel":
		return q.CancelRedrive(ctx)
	}
	r, err := q.ResumeRedrive(ctx, native.ResumeOptions{})
	if err == nil && r != nil {
		go func() { _, _ = r.Run(context.Background()) }()
	}
	return err
}

func postRedrive(s *Server, query, body string) *http.Response {
	r := httptest.NewRequest(http.MethodPost, "/api/redrive?"+query, strings.NewReader(body))
	r.Host = "127.0.0.1:8080"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set(tokenHeader, s.csrf)
	return request(s, r)
}

// POST /api/redrive starts a redrive of a group, driven past the request;
// GET /api/redrive shows its progress to the end; a second start while one
// runs is a conflict; bad requests are refused.
func TestRedriveAPI(t *testing.T) {
	q := redriveQueue{failedQueue(t)}
	s := newServer(t, Config{Queues: []Queue{q}})
	list := decode[[]queueInfo](t, get(s, "/api/queues"))
	if len(list) != 1 || !strings.Contains(strings.Join(list[0].Features, ","), "redrive") {
		t.Errorf("features %v, want redrive among them", list)
	}
	if st := decode[redriveJSON](t, get(s, "/api/redrive?queue=q")); !st.None {
		t.Errorf("before any: %+v, want none", st)
	}
	group := native.GroupID(native.Fingerprint(native.ErrCancelled.Error()))
	res := postRedrive(s, "queue=q&group="+group, `{"action":"start","rate":2}`)
	st := decode[redriveJSON](t, res)
	if res.StatusCode != http.StatusOK || st.State != "running" || st.Rate != 2 {
		t.Fatalf("start: %d %+v", res.StatusCode, st)
	}
	if res := postRedrive(s, "queue=q", `{"action":"start","rate":5}`); res.StatusCode != http.StatusConflict {
		t.Errorf("a second start: %d, want 409", res.StatusCode)
	}
	if res := postRedrive(s, "queue=q", `{"action":"pause"}`); res.StatusCode != http.StatusOK || decode[redriveJSON](t, res).State != "paused" {
		t.Errorf("pause: %d", res.StatusCode)
	}
	if res := postRedrive(s, "queue=q", `{"action":"resume"}`); res.StatusCode != http.StatusOK {
		t.Errorf("resume: %d", res.StatusCode)
	}
	// Faster to the end: cancel, and redrive the rest at 1000/s.
	res = postRedrive(s, "queue=q", `{"action":"cancel"}`)
	cancelled := decode[redriveJSON](t, res)
	if res.StatusCode != http.StatusOK || cancelled.State != "cancelled" {
		t.Errorf("cancel: %d", res.StatusCode)
	}
	first := cancelled.Sent
	if res := postRedrive(s, "queue=q&group="+group, `{"action":"start","rate":1000}`); res.StatusCode != http.StatusOK {
		t.Fatalf("start again: %d", res.StatusCode)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		st = decode[redriveJSON](t, get(s, "/api/redrive?queue=q"))
		if st.State == "done" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the redrive never ended: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, _ := q.Counts(context.Background())
	if st.Total != 5-first || st.Sent != st.Total || st.Left != 0 {
		t.Errorf("the second redrive ended %+v, want the %d jobs the first left all sent", st, 5-first)
	}
	if c.Failed != 0 || c.Waiting != 7 {
		t.Errorf("after the redrives: %+v, want every failed job waiting", c)
	}
	for _, bad := range []struct{ query, body string }{
		{"queue=q", `{"action":"start","rate":0}`},
		{"queue=q", `{"action":"start","rate":20000}`},
		{"queue=q", `{"action":"explode"}`},
		{"queue=q", `{"action":"start","rate":1,"extra":1}`},
		{"queue=q&from=x", `{"action":"start","rate":1}`},
	} {
		if res := postRedrive(s, bad.query, bad.body); res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s: %d, want 400", bad.query, bad.body, res.StatusCode)
		}
	}
	if res := postRedrive(s, "queue=q", `{"action":"pause"}`); res.StatusCode != http.StatusConflict {
		t.Errorf("pause of an ended redrive: %d, want 409", res.StatusCode)
	}
}

// -read-only refuses POST /api/redrive with 403 before the queue sees it,
// and shows no redrive feature; GET /api/redrive still reads.
func TestRedriveReadOnly(t *testing.T) {
	q := redriveQueue{failedQueue(t)}
	s := newServer(t, Config{Queues: []Queue{q}, ReadOnly: true})
	list := decode[[]queueInfo](t, get(s, "/api/queues"))
	if len(list) != 1 || strings.Contains(strings.Join(list[0].Features, ","), "redrive") {
		t.Errorf("read-only features %v, want no redrive", list)
	}
	for _, body := range []string{`{"action":"start","rate":100}`, `{"action":"pause"}`, `{"action":"resume"}`, `{"action":"cancel"}`} {
		res := postRedrive(s, "queue=q", body)
		e := decode[errorBody](t, res)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(e.Error, "read-only") {
			t.Errorf("%s: %d %q, want 403 saying the server is read-only", body, res.StatusCode, e.Error)
		}
	}
	if _, ok, err := q.RedriveStatus(context.Background()); ok || err != nil {
		t.Errorf("a read-only server started a redrive (%v)", err)
	}
	if res := get(s, "/api/redrive?queue=q"); res.StatusCode != http.StatusOK {
		t.Errorf("GET /api/redrive on a read-only server: %d", res.StatusCode)
	}
}
