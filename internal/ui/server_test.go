package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
)

// stubModel answers with the parsed policy only; the rebound command's
// model, which computes the real numbers, is tested with the command.
type stubModel struct{}

func (stubModel) Curve(q Query) (Curve, error) {
	p, err := backoff.Parse(q.Policy)
	var se *backoff.SyntaxError
	if errors.As(err, &se) {
		return Curve{}, &PolicyError{Input: q.Policy, Offset: se.Offset, Message: "invalid policy: " + se.Msg}
	}
	if err != nil {
		return Curve{}, err
	}
	return Curve{Policy: p, Text: p.String()}, nil
}

func newServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Model == nil {
		cfg.Model = stubModel{}
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// request sends r to s's handler and returns the response.
func request(s *Server, r *http.Request) *http.Response {
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	return w.Result()
}

func get(s *Server, target string) *http.Response {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.Host = "127.0.0.1:8080"
	return request(s, r)
}

// decode reads a JSON body into v and returns it.
func decode[T any](t *testing.T, res *http.Response) T {
	t.Helper()
	defer res.Body.Close()
	var v T
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		t.Fatalf("decode %d answer: %v", res.StatusCode, err)
	}
	return v
}

type errorBody struct {
	Error string `json:"error"`
}

func TestNewRefusesBadConfig(t *testing.T) {
	q := &fakeQueue{name: "a"}
	for name, cfg := range map[string]Config{
		"no model":           {},
		"remote, no token":   {Model: stubModel{}, Remote: true},
		"short token":        {Model: stubModel{}, Remote: true, Token: "abc"},
		"queue twice":        {Model: stubModel{}, Queues: []Queue{q, q}},
		"nil queue":          {Model: stubModel{}, Queues: []Queue{nil}},
		"negative interval":  {Model: stubModel{}, Refresh: -time.Second},
		"1ns interval":       {Model: stubModel{}, Refresh: time.Nanosecond},
		"interval too short": {Model: stubModel{}, Refresh: MinRefresh - 1},
	} {
		if _, err := New(cfg); err == nil || !strings.HasPrefix(err.Error(), "ui: ") {
			t.Errorf("%s: New = %v, want a ui: error", name, err)
		}
	}
}

func TestPageCarriesTokenAndHeaders(t *testing.T) {
	s := newServer(t, Config{})
	res := get(s, "/")
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d", res.StatusCode)
	}
	if !strings.Contains(string(body), `<meta name="rebound-token" content="`+s.csrf+`">`) {
		t.Error("page does not embed the per-process token")
	}
	if strings.Contains(string(body), `id="queues"`) {
		t.Error("page shows a queue section without queues")
	}
	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("missing hardening headers: %v", res.Header)
	}
	// Two servers never share a token.
	if other := newServer(t, Config{}); other.csrf == s.csrf || len(s.csrf) < 20 {
		t.Errorf("tokens %q and %q: want distinct and long", s.csrf, other.csrf)
	}
}

func TestStaticAssets(t *testing.T) {
	s := newServer(t, Config{})
	for path, ctype := range map[string]string{"/app.js": "text/javascript", "/style.css": "text/css", "/favicon.svg": "image/svg+xml"} {
		res := get(s, path)
		if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), ctype) {
			t.Errorf("GET %s = %d %q, want 200 %s", path, res.StatusCode, res.Header.Get("Content-Type"), ctype)
			continue
		}
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Host = "localhost:1"
		r.Header.Set("If-None-Match", res.Header.Get("ETag"))
		if res := request(s, r); res.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag = %d, want 304", path, res.StatusCode)
		}
	}
	if res := get(s, "/index.html"); res.StatusCode != http.StatusNotFound {
		t.Errorf("the page template is served raw: %d", res.StatusCode)
	}
}

func TestLoopbackRefusesOtherHosts(t *testing.T) {
	s := newServer(t, Config{})
	for host, ok := range map[string]bool{
		"127.0.0.1:8080":          true,
		"127.0.0.2:80":            true,
		"localhost:3000":          true,
		"LOCALHOST":               true,
		"[::1]:8080":              true,
		"evil.example:8080":       false,
		"127.0.0.1.evil.example":  false,
		"localhost.evil.example":  false,
		"192.168.1.10:8080":       false,
		"[::ffff:10.0.0.1]:80":    false,
		"":                        false,
		"attacker.test:8080#x@y.": false,
	} {
		for _, path := range []string{"/", "/api/curve?policy=fixed(1s)", "/app.js"} {
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Host = host
			res := request(s, r)
			if got := res.StatusCode != http.StatusForbidden; got != ok {
				t.Errorf("Host %q, GET %s: status %d, want allowed=%v", host, path, res.StatusCode, ok)
			}
		}
	}
}

// post sends an action the way the page does, then lets mutate spoil it.
func post(s *Server, body string, mutate func(r *http.Request)) *http.Response {
	r := httptest.NewRequest(http.MethodPost, "/api/action", strings.NewReader(body))
	r.Host = "127.0.0.1:8080"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Origin", "http://127.0.0.1:8080")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set(tokenHeader, s.csrf)
	if mutate != nil {
		mutate(r)
	}
	return request(s, r)
}

func TestPostNeedsTokenAndSameOrigin(t *testing.T) {
	q := newFakeQueue("emails")
	s := newServer(t, Config{Queues: []Queue{q}})
	body := `{"queue":"emails","action":"pause"}`
	for name, c := range map[string]struct {
		mutate func(r *http.Request)
		want   int
	}{
		"as the page sends it":  {nil, http.StatusOK},
		"no token":              {func(r *http.Request) { r.Header.Del(tokenHeader) }, http.StatusForbidden},
		"wrong token":           {func(r *http.Request) { r.Header.Set(tokenHeader, s.csrf+"x") }, http.StatusForbidden},
		"cross-site fetch":      {func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, http.StatusForbidden},
		"other origin":          {func(r *http.Request) { r.Header.Del("Sec-Fetch-Site"); r.Header.Set("Origin", "http://evil.example") }, http.StatusForbidden},
		"form post":             {func(r *http.Request) { r.Header.Set("Content-Type", "application/x-www-form-urlencoded") }, http.StatusUnsupportedMediaType},
		"rebound host":          {func(r *http.Request) { r.Host = "rebind.example:8080" }, http.StatusForbidden},
		"non-browser, no token": {func(r *http.Request) { r.Header = http.Header{"Content-Type": {"application/json"}} }, http.StatusForbidden},
	} {
		res := post(s, body, c.mutate)
		if res.StatusCode != c.want {
			b, _ := io.ReadAll(res.Body)
			t.Errorf("%s: status %d (%s), want %d", name, res.StatusCode, b, c.want)
		}
	}
	if got := q.calls(); !slices.Equal(got, []string{"pause"}) {
		t.Errorf("queue saw %v, want the one accepted pause", got)
	}
}

func TestRemoteNeedsAccessToken(t *testing.T) {
	const token = "0123456789abcdef-secret"
	s := newServer(t, Config{Remote: true, Token: token})
	at := func(target string, mutate func(r *http.Request)) *http.Response {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r.Host = "ui.internal.example:8080" // any name: the token guards it
		if mutate != nil {
			mutate(r)
		}
		return request(s, r)
	}
	for _, target := range []string{"/", "/app.js", "/api/curve?policy=fixed(1s)", "/api/queues/events"} {
		if res := at(target, nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token = %d, want 401", target, res.StatusCode)
		}
	}
	if res := at("/?token=wrong", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token = %d, want 401", res.StatusCode)
	}

	// The printed address swaps the token for a cookie and drops it from
	// the address bar.
	res := at("/?policy=fixed%281s%29&token="+token, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("GET with the token = %d, want 303", res.StatusCode)
	}
	if loc := res.Header.Get("Location"); loc != "/?policy=fixed%281s%29" {
		t.Errorf("redirect to %q, want the address without the token", loc)
	}
	cookies := res.Cookies()
	if len(cookies) != 1 || cookies[0].Value == "" || strings.Contains(cookies[0].Value, token) || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookies %+v, want one HttpOnly SameSite=Strict cookie with the token's digest", cookies)
	}
	withCookie := func(r *http.Request) { r.AddCookie(cookies[0]) }
	if res := at("/", withCookie); res.StatusCode != http.StatusOK {
		t.Errorf("GET / with the cookie = %d, want 200", res.StatusCode)
	}
	if res := at("/api/curve?policy=fixed(1s)", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }); res.StatusCode != http.StatusOK {
		t.Errorf("API with a bearer token = %d, want 200", res.StatusCode)
	}
	short := cookies[0].Value[:len(cookies[0].Value)-1]
	if res := at("/", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: cookieName, Value: short}) }); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a cookie one character short = %d, want 401", res.StatusCode)
	}
	if res := at("/", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: cookieName, Value: token}) }); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("the token itself as the cookie = %d, want 401: the cookie holds its digest", res.StatusCode)
	}
}

// Any token works, whatever characters it holds: a browser that opened
// the printed address is let in by its cookie. The minimum counts
// characters, not bytes.
func TestRemoteTokenOfAnyCharacters(t *testing.T) {
	for _, token := range []string{
		`semi;colon;"quoted"\back`,
		"ünïcødé-tøkén-ß✓✓",
		"spaces and = signs, 16+",
		"tab\tnew\nline\x00nul-0123456789",
		"\xff\xfe not UTF-8 at all....",
	} {
		s := newServer(t, Config{Remote: true, Token: token})
		r := httptest.NewRequest(http.MethodGet, "/?token="+url.QueryEscape(token), nil)
		r.Host = "ui.example:8080"
		res := request(s, r)
		if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 {
			t.Errorf("token %q: GET with it = %d, cookies %v; want 303 and a cookie", token, res.StatusCode, res.Cookies())
			continue
		}
		// The cookie as a browser sends it back: through its header.
		r = httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = "ui.example:8080"
		r.Header.Set("Cookie", res.Header.Get("Set-Cookie"))
		if res := request(s, r); res.StatusCode != http.StatusOK {
			t.Errorf("token %q: the page with the cookie = %d, want 200", token, res.StatusCode)
		}
	}
	if _, err := New(Config{Model: stubModel{}, Remote: true, Token: "ééééééééé"}); err == nil {
		t.Error("a 9-character token of 18 bytes was accepted, want at least 16 characters")
	}
	if _, err := New(Config{Model: stubModel{}, Remote: true, Token: "éééééééééééééééé"}); err != nil {
		t.Errorf("a 16-character token was refused: %v", err)
	}
}

func TestCurveAnswer(t *testing.T) {
	s := newServer(t, Config{})
	q := url.Values{"policy": {" jitter( exponential(100ms,2s) ) "}, "attempts": {"4"}, "key": {"it's job 7"}, "from": {"2025-06-01T12:00:00Z"}, "herdAttempt": {"5"}}
	res := get(s, "/api/curve?"+q.Encode())
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	a := decode[curveAnswer](t, res)
	if a.Text != "jitter(exponential(100ms, 2s))" || a.MaxAttempts != 4 || a.Key != "it's job 7" || a.From != "2025-06-01T12:00:00Z" {
		t.Errorf("answer %+v", a)
	}
	if a.Form == nil || a.Form.Curve != "exponential" || a.Form.Jitter != "full" || a.Form.Base.Text != "100ms" || a.Form.Cap.NS != "2000000000" {
		t.Errorf("form %+v", a.Form)
	}
	if want := `rebound plan 'jitter(exponential(100ms, 2s))' -n 3 -key 'it'\''s job 7' -from 2025-06-01T12:00:00Z`; a.Commands.Plan != want {
		t.Errorf("plan command\n%s\nwant\n%s", a.Commands.Plan, want)
	}
	if want := `rebound herd 'jitter(exponential(100ms, 2s))' -attempt 5`; a.Commands.Herd != want {
		t.Errorf("herd command %q, want %q", a.Commands.Herd, want)
	}
}

func TestCurveBadInput(t *testing.T) {
	s := newServer(t, Config{})
	res := get(s, "/api/curve?"+url.Values{"policy": {"exponential(100ms, 2x)"}}.Encode())
	if res.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("bad policy: status %d, want 422", res.StatusCode)
	}
	pe := decode[struct{ PolicyError *PolicyError }](t, res).PolicyError
	if pe == nil || pe.Offset != 19 || pe.Input != "exponential(100ms, 2x)" {
		t.Errorf("policy error %+v, want offset 19", pe)
	}
	for query, want := range map[string]string{
		"":                                   "missing policy",
		"policy=fixed(1s)&attempts=0":        `attempts "0" is out of range, want MaxAttempts`,
		"policy=fixed(1s)&attempts=1002":     "1..1001",
		"policy=fixed(1s)&attempts=x":        `attempts "x"`,
		"policy=fixed(1s)&herdJobs=0":        "herdJobs",
		"policy=fixed(1s)&herdBuckets=201":   "1..200",
		"policy=fixed(1s)&herdAttempt=-1":    "herdAttempt",
		"policy=fixed(1s)&from=yesterday":    "RFC 3339",
		"policy=fixed(1s)&from=2025-01-01":   "RFC 3339",
		"policy=fixed(1s)&attempts=5&x=1&y=": "", // unknown parameters are ignored
	} {
		res := get(s, "/api/curve?"+query)
		if want == "" {
			if res.StatusCode != http.StatusOK {
				t.Errorf("%q: status %d, want 200", query, res.StatusCode)
			}
			continue
		}
		e := decode[errorBody](t, res)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error, want) {
			t.Errorf("%q: %d %q, want 400 mentioning %q", query, res.StatusCode, e.Error, want)
		}
	}
}

func TestCurveDefaults(t *testing.T) {
	now := time.Date(2025, 3, 1, 10, 0, 0, 123456789, time.UTC)
	q, maxAttempts, err := parseQuery(url.Values{"policy": {"fixed(1s)"}}, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	want := Query{Policy: "fixed(1s)", Retries: 4, From: now.Truncate(time.Millisecond), HerdJobs: 1000, HerdAttempt: 3, HerdBuckets: 20}
	if q != want || maxAttempts != 5 {
		t.Errorf("parseQuery = %+v, %d; want %+v, 5", q, maxAttempts, want)
	}
	// With the defaults the commands carry no herd flags, and a rule that
	// never retries has no plan to print.
	if got := herdCommand("fixed(1s)", q); got != "rebound herd 'fixed(1s)'" {
		t.Errorf("herd command %q", got)
	}
	q.Retries = 0
	if got := planCommand("fixed(1s)", q); got != "" {
		t.Errorf("plan command for MaxAttempts 1 = %q, want none", got)
	}
}

func TestFormOf(t *testing.T) {
	d := func(text string) *Duration {
		v, _ := time.ParseDuration(text)
		x := NewDuration(v, text)
		return &x
	}
	tests := []struct {
		policy string
		want   *Form
	}{
		{"fixed(250ms)", &Form{Curve: "fixed", Jitter: "none", Base: d("250ms")}},
		{"exponential(1s, 1m)", &Form{Curve: "exponential", Jitter: "none", Base: d("1s"), Cap: d("1m")}},
		{"equal(linear(100ms, 0s, 2s))", &Form{Curve: "linear", Jitter: "equal", Base: d("100ms"), Step: d("0s"), Cap: d("2s")}},
		{"proportional(0.25, decorrelated(1500ms, 1h))", &Form{Curve: "decorrelated", Jitter: "proportional", Fraction: 0.25, Base: d("1500ms"), Cap: d("1h")}},
		{"jitter(fixed(1us))", &Form{Curve: "fixed", Jitter: "full", Base: d("1us")}},
		{"jitter(equal(exponential(1s, 1m)))", nil}, // nested wrappers
		{"proportional(0.1, jitter(fixed(1s)))", nil},
	}
	for _, tt := range tests {
		got := formOf(backoff.Must(backoff.Parse(tt.policy)))
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(tt.want)
		if string(gb) != string(wb) {
			t.Errorf("formOf(%s) = %s, want %s", tt.policy, gb, wb)
		}
	}
	if formOf(foreignPolicy{}) != nil {
		t.Error("a policy of another package has a form")
	}
}

type foreignPolicy struct{}

func (foreignPolicy) Delay(int, backoff.Source) time.Duration { return time.Second }
func (foreignPolicy) Max() time.Duration                      { return time.Second }
func (foreignPolicy) String() string                          { return "fixed(1s)" }

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"job-42":       "job-42",
		"":             "''",
		"a b":          "'a b'",
		"it's":         `'it'\''s'`,
		"$(rm -rf ~)":  "'$(rm -rf ~)'",
		"fixed(1s)":    "'fixed(1s)'",
		"tenant/job:7": "tenant/job:7",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// fakeQueue is a queue in memory with every optional feature.
type fakeQueue struct {
	name   string
	mu     sync.Mutex
	jobs   map[string]native.StoredJob
	paused bool
	log    []string
	err    error // returned by Counts
}

func newFakeQueue(name string) *fakeQueue {
	return &fakeQueue{name: name, jobs: map[string]native.StoredJob{
		"d1": {ID: "d1", State: native.StateDelayed, Attempts: 2, NextFireAt: time.UnixMilli(1_700_000_060_000)},
		"f1": {ID: "f1", State: native.StateFailed, Attempts: 5, LastError: "boom"},
	}}
}

func (q *fakeQueue) Name() string { return q.name }

func (q *fakeQueue) Counts(context.Context) (native.Counts, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var c native.Counts
	for _, j := range q.jobs {
		switch j.State {
		case native.StateDelayed:
			c.Delayed++
		case native.StateFailed:
			c.Failed++
		case native.StateWaiting:
			c.Waiting++
		}
	}
	c.Paused = q.paused
	return c, q.err
}

func (q *fakeQueue) Job(_ context.Context, id string) (native.StoredJob, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	j, ok := q.jobs[id]
	if !ok {
		return j, native.ErrNotFound
	}
	return j, nil
}

func (q *fakeQueue) Jobs(_ context.Context, st native.State, limit int) ([]native.StoredJob, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []native.StoredJob
	for _, j := range q.jobs {
		if j.State == st {
			out = append(out, j)
		}
	}
	return out, nil // more than limit is the server's to cut
}

func (q *fakeQueue) record(s string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.log = append(q.log, s)
}

func (q *fakeQueue) calls() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.log)
}

func (q *fakeQueue) RetryJob(ctx context.Context, id string) error {
	q.record("retry " + id)
	_, err := q.Job(ctx, id)
	return err
}
func (q *fakeQueue) RunJobNow(_ context.Context, id string) error {
	q.record("run " + id)
	return errors.New("native: job d9 is not delayed")
}
func (q *fakeQueue) DeleteJob(_ context.Context, id string) error {
	q.record("delete " + id)
	return nil
}
func (q *fakeQueue) Pause(context.Context) error  { q.record("pause"); q.setPaused(true); return nil }
func (q *fakeQueue) Resume(context.Context) error { q.record("resume"); q.setPaused(false); return nil }

func (q *fakeQueue) setPaused(p bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.paused = p
}

// countsOnly is a queue without optional features, as *native.Queue is
// today.
type countsOnly struct{ q *fakeQueue }

func (c countsOnly) Name() string { return c.q.Name() }
func (c countsOnly) Counts(ctx context.Context) (native.Counts, error) {
	return c.q.Counts(ctx)
}
func (c countsOnly) Job(ctx context.Context, id string) (native.StoredJob, error) {
	return c.q.Job(ctx, id)
}

func TestNativeQueueIsAQueue(t *testing.T) {
	var _ Queue = (*native.Queue)(nil)
}

func TestQueueFeatures(t *testing.T) {
	full, plain := newFakeQueue("full"), countsOnly{newFakeQueue("plain")}
	s := newServer(t, Config{Queues: []Queue{full, plain}})
	list := decode[[]queueInfo](t, get(s, "/api/queues"))
	want := []queueInfo{{"full", "ZnVsbA", "full", []string{"jobs", "retry", "run", "delete", "pause"}}, {"plain", "cGxhaW4", "plain", []string{}}}
	gb, _ := json.Marshal(list)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("queues %s, want %s", gb, wb)
	}
	// The plain queue refuses what it does not have.
	if res := get(s, "/api/jobs?queue=plain&state=failed"); res.StatusCode != http.StatusNotImplemented {
		t.Errorf("listing a queue without JobLister = %d, want 501", res.StatusCode)
	}
	for _, body := range []string{`{"queue":"plain","action":"retry","id":"f1"}`, `{"queue":"plain","action":"pause"}`} {
		if res := post(s, body, nil); res.StatusCode != http.StatusNotImplemented {
			t.Errorf("%s = %d, want 501", body, res.StatusCode)
		}
	}
	if c := plain.q.calls(); len(c) != 0 {
		t.Errorf("plain queue saw %v", c)
	}
}

func TestActions(t *testing.T) {
	q := newFakeQueue("emails")
	s := newServer(t, Config{Queues: []Queue{q}})
	for _, c := range []struct {
		body string
		code int
		want string // in the error
	}{
		{`{"queue":"emails","action":"retry","id":"f1"}`, http.StatusOK, ""},
		{`{"queue":"emails","action":"retry","id":"nope"}`, http.StatusNotFound, "no such job"},
		{`{"queue":"emails","action":"run","id":"d9"}`, http.StatusConflict, "is not delayed"},
		{`{"queue":"emails","action":"delete","id":"d1"}`, http.StatusOK, ""},
		{`{"queue":"emails","action":"resume"}`, http.StatusOK, ""},
		{`{"queue":"emails","action":"delete"}`, http.StatusBadRequest, "needs the job's ID"},
		{`{"queue":"emails","action":"pause","id":"d1"}`, http.StatusBadRequest, "want no ID"},
		{`{"queue":"emails","action":"explode","id":"d1"}`, http.StatusBadRequest, `action "explode" is unknown`},
		{`{"queue":"other","action":"pause"}`, http.StatusNotFound, `no queue "other" here; this page shows "emails"`},
		{`{"queue":"emails","action":"pause","extra":1}`, http.StatusBadRequest, "unknown field"},
		{`not json`, http.StatusBadRequest, "body is not an action"},
	} {
		res := post(s, c.body, nil)
		e := decode[errorBody](t, res)
		if res.StatusCode != c.code || !strings.Contains(e.Error, c.want) {
			t.Errorf("%s: %d %q, want %d mentioning %q", c.body, res.StatusCode, e.Error, c.code, c.want)
		}
	}
	want := []string{"retry f1", "retry nope", "run d9", "delete d1", "resume"}
	if got := q.calls(); !slices.Equal(got, want) {
		t.Errorf("queue saw %v, want %v", got, want)
	}
}

func TestJobLookupAndList(t *testing.T) {
	q := newFakeQueue("emails")
	long := strings.Repeat("é", payloadPreview) // 2 bytes a character
	q.jobs["big"] = native.StoredJob{ID: "big", State: native.StateWaiting, Payload: []byte(long), Metadata: map[string]string{"traceparent": "00-x"}}
	q.jobs["bin"] = native.StoredJob{ID: "bin", State: native.StateWaiting, Payload: []byte{0xff, 0x00, 0xfe}}
	s := newServer(t, Config{Queues: []Queue{q}})

	j := decode[jobJSON](t, get(s, "/api/job?queue=emails&id=big"))
	if j.PayloadSize != len(long) || len(j.Payload) > payloadPreview || !strings.HasPrefix(long, j.Payload) || j.PayloadBinary {
		t.Errorf("big payload: size %d, preview %d bytes, binary %v", j.PayloadSize, len(j.Payload), j.PayloadBinary)
	}
	if j.State != "waiting" || j.Metadata["traceparent"] != "00-x" || j.NextFireAt != 0 {
		t.Errorf("job %+v", j)
	}
	if b := decode[jobJSON](t, get(s, "/api/job?queue=emails&id=bin")); !b.PayloadBinary || b.Payload != "" || b.PayloadSize != 3 {
		t.Errorf("binary payload shown as %+v", b)
	}
	if d := decode[jobJSON](t, get(s, "/api/job?queue=emails&id=d1")); d.NextFireAt != 1_700_000_060_000 || d.State != "delayed" {
		t.Errorf("delayed job %+v", d)
	}
	for target, code := range map[string]int{
		"/api/job?queue=emails&id=missing":              http.StatusNotFound,
		"/api/job?queue=emails":                         http.StatusBadRequest,
		"/api/job?queue=nope&id=d1":                     http.StatusNotFound,
		"/api/jobs?queue=emails&state=bad":              http.StatusBadRequest,
		"/api/jobs?queue=emails&state=failed&limit=0":   http.StatusBadRequest,
		"/api/jobs?queue=emails&state=failed&limit=501": http.StatusBadRequest,
	} {
		if res := get(s, target); res.StatusCode != code {
			t.Errorf("GET %s = %d, want %d", target, res.StatusCode, code)
		}
	}
	list := decode[struct{ Jobs []jobJSON }](t, get(s, "/api/jobs?queue=emails&state=waiting&limit=1"))
	if len(list.Jobs) != 1 {
		t.Errorf("limit 1 listed %d jobs", len(list.Jobs))
	}
}

// serve runs s on a loopback listener until the test ends.
func serve(t *testing.T, s *Server) (base string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return "http://" + ln.Addr().String(), stop
}

func TestEventStream(t *testing.T) {
	ok, broken := newFakeQueue("ok"), newFakeQueue("broken")
	broken.err = errors.New("dial tcp 127.0.0.1:6379: connection refused")
	s := newServer(t, Config{Queues: []Queue{ok, broken}, Refresh: MinRefresh})
	base, stop := serve(t, s)
	res, err := http.Get(base + "/api/queues/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan snapshot)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var snap snapshot
				if err := json.Unmarshal([]byte(data), &snap); err != nil {
					t.Errorf("event %q: %v", data, err)
					return
				}
				events <- snap
			}
		}
	}()
	first := <-events
	if len(first.Queues) != 2 || first.Queues[0].Counts == nil || first.Queues[0].Counts.Delayed != 1 || first.Queues[0].Counts.Failed != 1 {
		t.Fatalf("first event %+v", first)
	}
	if first.Queues[0].Paused == nil || *first.Queues[0].Paused {
		t.Errorf("a Pauser's state is not reported: %+v", first.Queues[0])
	}
	if first.Queues[1].Error != broken.err.Error() || first.Queues[1].Counts != nil {
		t.Errorf("a failing queue reports %+v, want its error", first.Queues[1])
	}
	// The stream follows the queue, its pause too.
	ok.mu.Lock()
	ok.jobs["w1"] = native.StoredJob{ID: "w1", State: native.StateWaiting}
	ok.paused = true
	ok.mu.Unlock()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case snap := <-events:
			if q := snap.Queues[0]; q.Counts.Waiting == 1 && q.Paused != nil && *q.Paused {
				// Stopping the server ends the stream.
				stop()
				for range events {
				}
				return
			}
		case <-deadline:
			t.Fatal("the stream never showed the new job and the pause")
		}
	}
}
