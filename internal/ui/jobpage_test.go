package ui

import (
	"crypto/tls"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
)

// planModel answers with the policy's schedule, keyed as the rebound
// command keys it, and nothing of the herd.
type planModel struct{ stubModel }

func (m planModel) Curve(q Query) (Curve, error) {
	c, err := m.stubModel.Curve(q)
	if err != nil {
		return c, err
	}
	src := backoff.Source{}
	if q.Key != "" {
		src = backoff.Key(q.Key)
	}
	table := func(p backoff.Policy) []Step {
		var out []Step
		for _, st := range backoff.Schedule(p, src, q.Retries) {
			out = append(out, Step{Attempt: st.Attempt, Delay: NewDuration(st.Delay, st.Delay.String()), Total: NewDuration(st.Total, st.Total.String())})
		}
		return out
	}
	c.Plan = table(c.Policy)
	if j, ok := c.Policy.(backoff.FullJitterPolicy); ok {
		c.Random, c.Steady = true, table(j.Inner())
	}
	return c, nil
}

func jobPageOf(t *testing.T, s *Server, v url.Values) (jobPageAnswer, int) {
	t.Helper()
	res := get(s, "/api/jobpage?"+v.Encode())
	if res.StatusCode != http.StatusOK {
		e := decode[errorBody](t, res)
		t.Logf("jobpage %s: %d %s", v.Encode(), res.StatusCode, e.Error)
		return jobPageAnswer{}, res.StatusCode
	}
	return decode[jobPageAnswer](t, res), res.StatusCode
}

// A delayed job's bar: enqueued (stored), the attempts before the last
// (a span, no time of each), the last failure (the stored fire time less
// the rule's delay, inferred), the stored fire time, then the rule's fire
// times up to MaxAttempts, each one delay after the one before, jitter
// keyed by the job's ID.
func TestJobPageDelayedBar(t *testing.T) {
	q := newFakeQueue("emails")
	created := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	fire := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	id := "job\r\n\xff7" // CR, LF and a byte that is not UTF-8
	q.jobs[id] = native.StoredJob{ID: id, State: native.StateDelayed, Attempts: 3, CreatedAt: created, NextFireAt: fire, LastError: "boom\x1b[2J"}
	s := newServer(t, Config{Model: planModel{}, Queues: []Queue{q}})
	policy := "jitter(exponential(1s, 1m))"
	ans, code := jobPageOf(t, s, url.Values{"queueKey": {textKey("emails")}, "idKey": {textKey(id)}, "policy": {policy}, "attempts": {"6"}})
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if ans.Job.Key != textKey(id) || ans.Job.IDText != `job\x0d\x0a\xff7` {
		t.Errorf("job key %q text %q", ans.Job.Key, ans.Job.IDText)
	}
	if ans.Job.LastError.Text != `boom\x1b[2J` {
		t.Errorf("last error %q, want it escaped", ans.Job.LastError.Text)
	}
	p := backoff.Must(backoff.Parse(policy))
	src := backoff.Key(id)
	d := func(a int) time.Duration { return backoff.Delay(p, a, src) }
	type mark struct {
		kind, source string
		attempt      int
		at           int64
	}
	want := []mark{
		{"enqueued", "stored", 0, created.UnixMilli()},
		{"runs", "stored", 1, created.UnixMilli()},
		{"failed", "inferred", 3, fire.Add(-d(3)).UnixMilli()},
		{"fire", "stored", 4, fire.UnixMilli()},
		{"fire", "rule", 5, fire.Add(d(4)).UnixMilli()},
		{"fire", "rule", 6, fire.Add(d(4) + d(5)).UnixMilli()},
	}
	if len(ans.Events) != len(want) {
		t.Fatalf("events %+v, want %d", ans.Events, len(want))
	}
	for i, w := range want {
		e := ans.Events[i]
		if (mark{e.Kind, e.Source, e.Attempt, e.At}) != w {
			t.Errorf("event %d = %s %s %d at %d, want %+v", i, e.Kind, e.Source, e.Attempt, e.At, w)
		}
		if e.AtText != timeText(time.UnixMilli(e.At)) {
			t.Errorf("event %d text %q, want %q", i, e.AtText, timeText(time.UnixMilli(e.At)))
		}
	}
	if r := ans.Events[1]; r.To != 2 || r.End != fire.Add(-d(3)).UnixMilli() {
		t.Errorf("runs span to attempt %d ending %d, want attempts 1-2 ending at the inferred failure", r.To, r.End)
	}
	if ans.Rule == nil || ans.Rule.Policy != policy || ans.Rule.MaxAttempts != 6 || ans.Rule.FromJob || !ans.Rule.Random {
		t.Errorf("rule %+v", ans.Rule)
	}
}

// The job's own cap wins over the page's attempts; a finished job has no
// fire time ahead; a running one shows its lease; a policy that does not
// parse leaves the stored times and says why.
func TestJobPageStates(t *testing.T) {
	q := newFakeQueue("emails")
	now := time.Now()
	q.jobs["own"] = native.StoredJob{ID: "own", State: native.StateDelayed, Attempts: 1, MaxAttempts: 3, CreatedAt: now, NextFireAt: now.Add(time.Second)}
	q.jobs["done"] = native.StoredJob{ID: "done", State: native.StateFailed, Attempts: 2, Cancelled: true, CreatedAt: now.Add(-time.Minute), FinishedAt: now}
	q.jobs["run"] = native.StoredJob{ID: "run", State: native.StateActive, Attempts: 2, CreatedAt: now.Add(-time.Minute), LeaseDeadline: now.Add(30 * time.Second)}
	s := newServer(t, Config{Model: planModel{}, Queues: []Queue{q}})
	ask := func(id, policy string) jobPageAnswer {
		ans, code := jobPageOf(t, s, url.Values{"queue": {"emails"}, "id": {id}, "policy": {policy}, "attempts": {"10"}})
		if code != http.StatusOK {
			t.Fatalf("%s: status %d", id, code)
		}
		return ans
	}
	kinds := func(a jobPageAnswer) string {
		var k []string
		for _, e := range a.Events {
			k = append(k, e.Kind+"/"+e.Source)
		}
		return strings.Join(k, " ")
	}
	if a := ask("own", "exponential(1s, 1m)"); !a.Rule.FromJob || a.Rule.MaxAttempts != 3 || kinds(a) != "enqueued/stored failed/inferred fire/stored fire/rule" {
		t.Errorf("own cap: rule %+v, marks %s", a.Rule, kinds(a))
	}
	if a := ask("done", "exponential(1s, 1m)"); kinds(a) != "enqueued/stored runs/stored failed/stored" || !a.Job.Cancelled || !strings.Contains(a.Events[2].Text, "cancelled") {
		t.Errorf("failed job: marks %s, cancelled %v", kinds(a), a.Job.Cancelled)
	}
	if a := ask("run", "exponential(1s, 1m)"); kinds(a) != "enqueued/stored runs/stored running/now lease/stored fire/rule "+strings.TrimSpace(strings.Repeat("fire/rule ", 7)) {
		t.Errorf("running job: marks %s", kinds(a))
	} else if a.Job.LeaseDeadline != now.Add(30*time.Second).UnixMilli() {
		t.Errorf("lease %d", a.Job.LeaseDeadline)
	}
	if a := ask("own", "exponential(1s"); a.PolicyError == nil || a.Rule != nil || kinds(a) != "enqueued/stored runs/stored fire/stored" {
		t.Errorf("bad policy: error %v, marks %s", a.PolicyError, kinds(a))
	} else if a.Events[1].End != a.At {
		// Without the rule the last failure is not known, only that it
		// was before now: the span ends now, not at the fire time ahead.
		t.Errorf("bad policy: the attempts' span ends at %d, want now, %d", a.Events[1].End, a.At)
	}
	if _, code := jobPageOf(t, s, url.Values{"queue": {"emails"}, "id": {"nope"}}); code != http.StatusNotFound {
		t.Errorf("missing job: %d, want 404", code)
	}
	if _, code := jobPageOf(t, s, url.Values{"queue": {"emails"}, "id": {"own"}, "policy": {"fixed(1s)"}, "attempts": {"0"}}); code != http.StatusBadRequest {
		t.Errorf("attempts 0: %d, want 400", code)
	}
}

// Payload, error and metadata are escaped and bounded: a terminal escape
// and bytes that are not UTF-8 are shown as escapes, a long payload is
// cut (and says so, with its size), and at most jobMetaLimit entries are
// sent.
func TestJobPageBoundsText(t *testing.T) {
	q := newFakeQueue("emails")
	meta := map[string]string{}
	for i := range jobMetaLimit + 5 {
		meta["k"+strconv.Itoa(1000+i)] = strings.Repeat("v", metaValueLimit+1)
	}
	big := strings.Repeat("é", jobTextLimit) // 2 bytes a character
	q.jobs["big"] = native.StoredJob{ID: "big", State: native.StateWaiting, Payload: []byte("\x1b]0;title\x07" + big), Metadata: meta, LastError: "a\nb\xff"}
	s := newServer(t, Config{Queues: []Queue{q}})
	ans, code := jobPageOf(t, s, url.Values{"queue": {"emails"}, "id": {"big"}})
	if code != http.StatusOK {
		t.Fatal(code)
	}
	p := ans.Job.Payload
	if !p.Cut || p.Size != len(big)+10 || !strings.HasPrefix(p.Text, `\x1b]0;title\x07é`) || len(p.Text) > jobTextLimit+40 || strings.Contains(p.Text, "\uFFFD") {
		t.Errorf("payload cut %v size %d, %d bytes shown, starting %q", p.Cut, p.Size, len(p.Text), p.Text[:20])
	}
	if e := ans.Job.LastError; e.Text != "a\nb\\xff" || !e.Binary || e.Cut {
		t.Errorf("last error %+v", e)
	}
	if len(ans.Job.Metadata) != jobMetaLimit || ans.Job.MetadataCount != jobMetaLimit+5 || !ans.Job.Metadata[0].Value.Cut || ans.Job.Metadata[0].Key.Text != "k1000" {
		t.Errorf("metadata: %d shown of %d, first %+v", len(ans.Job.Metadata), ans.Job.MetadataCount, ans.Job.Metadata[0].Key)
	}
	if ans.Rule != nil || len(ans.Events) != 1 || ans.Events[0].Kind != "due" {
		t.Errorf("no policy: rule %+v events %+v", ans.Rule, ans.Events)
	}
}

// The clamp readout, as the design notes table it: exponential base 100ms
// cap 10s at attempt 20 is raw 52,428,800 ms, clamped to 10,000 ms; at
// attempt 3, 400 ms, below the cap. Past int64 the raw value is an exact
// big number, and for attempts up to math.MaxInt its exact length in
// binary digits; the clamped delay is the core's.
func TestClamp(t *testing.T) {
	s := newServer(t, Config{})
	ask := func(policy, attempt string) (clampAnswer, int) {
		res := get(s, "/api/clamp?"+url.Values{"policy": {policy}, "attempt": {attempt}, "key": {"job-1"}}.Encode())
		if res.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(res.Body)
			t.Logf("%s at %s: %d %s", policy, attempt, res.StatusCode, b)
			return clampAnswer{}, res.StatusCode
		}
		return decode[clampAnswer](t, res), res.StatusCode
	}
	a, _ := ask("exponential(100ms, 10s)", "20")
	if a.Raw.MS != "52,428,800" || a.Raw.NS != "52428800000000" || !a.Raw.FitsInt64 || a.ClampedMS != "10,000" || !a.AtCap || a.Formula != "100ms × 2^19" || a.FirstAtCap != "8" {
		t.Errorf("attempt 20: %+v", a)
	}
	if a.Linear == nil || a.Linear.Text != "linear(100ms, 100ms, 10s)" || a.Linear.Delay.Text != "2s" || a.Linear.Ratio != "5x" {
		t.Errorf("attempt 20's linear contrast: %+v", a.Linear)
	}
	a, _ = ask("exponential(100ms, 10s)", "3")
	if a.Raw.MS != "400" || a.ClampedMS != "400" || a.AtCap || a.Jittered != nil {
		t.Errorf("attempt 3: %+v", a)
	}
	a, _ = ask("jitter(exponential(100ms, 10s))", "100")
	// 100ms × 2^99 = 10^8 × 2^99 ns.
	want := new(strings.Builder)
	want.WriteString("63,382,530,011,411,470,074,835,160,268,800")
	if a.Raw.MS != want.String() || a.Raw.FitsInt64 || !strings.Contains(a.Raw.Text, "overflows int64") || a.ClampedMS != "10,000" || a.Jittered == nil {
		t.Errorf("attempt 100: %+v", a)
	}
	if jd := backoff.Delay(backoff.Must(backoff.Parse("jitter(exponential(100ms, 10s))")), 100, backoff.Key("job-1")); a.Jittered.NS != strconv.FormatInt(int64(jd), 10) {
		t.Errorf("jittered %s, want %d", a.Jittered.NS, jd)
	}
	a, _ = ask("exponential(100ms, 10s)", strconv.Itoa(math.MaxInt))
	// 10^8 has 27 binary digits; 2^(MaxInt-1) adds MaxInt-1 more.
	if wantBits := strconv.FormatUint(uint64(math.MaxInt)-1+27, 10); a.Raw.NS != "" || a.Raw.Bits != wantBits || !strings.Contains(a.Raw.Text, "overflows int64") || a.ClampedMS != "10,000" || a.Attempt != strconv.Itoa(math.MaxInt) {
		t.Errorf("attempt MaxInt: %+v", a)
	}
	a, _ = ask("linear(1.5ms, 1ms, 10ms)", "3")
	if a.Raw.MS != "3.5" || a.ClampedMS != "3.5" || a.FirstAtCap != "10" || a.Formula != "1500us + 1ms × 2" {
		t.Errorf("linear: %+v", a)
	}
	for _, bad := range []struct{ policy, attempt string }{{"exponential(1s, 2s)", "0"}, {"exponential(1s, 2s)", "x"}, {"exponential(1s, 2s)", "9223372036854775808"}} {
		if _, code := ask(bad.policy, bad.attempt); code != http.StatusBadRequest {
			t.Errorf("%s at %s: %d, want 400", bad.policy, bad.attempt, code)
		}
	}
	for _, bad := range []string{"fixed(1s)", "exponential(1s"} {
		if _, code := ask(bad, "2"); code != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", bad, code)
		}
	}
}

// The curve's answer carries the linear contrast of an exponential curve
// (the same base and cap), and none for other curves.
func TestCurveContrast(t *testing.T) {
	s := newServer(t, Config{Model: planModel{}})
	a := decode[curveAnswer](t, get(s, "/api/curve?"+url.Values{"policy": {"jitter(exponential(100ms, 2s))"}, "attempts": {"6"}}.Encode()))
	if a.Contrast == nil || a.Contrast.Text != "linear(100ms, 100ms, 2s)" || len(a.Contrast.Plan) != 5 {
		t.Fatalf("contrast %+v", a.Contrast)
	}
	for i, st := range a.Contrast.Plan {
		if want := strconv.FormatInt(int64(time.Duration(i+1)*100*time.Millisecond), 10); st.Delay.NS != want {
			t.Errorf("linear attempt %d: %s ns, want %s", i+1, st.Delay.NS, want)
		}
	}
	if want := "by attempt 5 the exponential waits 1.6s, 3.2x the linear's 500ms"; a.Contrast.Verdict != want {
		t.Errorf("verdict %q, want %q", a.Contrast.Verdict, want)
	}
	if a := decode[curveAnswer](t, get(s, "/api/curve?policy=linear(1s,1s,5s)")); a.Contrast != nil {
		t.Errorf("a linear curve has a contrast: %+v", a.Contrast)
	}
}

// -read-only: no queue reports an action, and every request that is not
// a read is refused with 403, with the page's token and from the page's
// origin too, before the queue sees it.
func TestReadOnlyRefusesEveryWrite(t *testing.T) {
	q := newFakeQueue("emails")
	s := newServer(t, Config{Queues: []Queue{pagedQueue{q}}, ReadOnly: true})
	list := decode[[]queueInfo](t, get(s, "/api/queues"))
	if len(list) != 1 || strings.Join(list[0].Features, ",") != "jobs,pages" {
		t.Errorf("features %v, want jobs and pages only", list)
	}
	for _, body := range []string{`{"queue":"emails","action":"retry","id":"f1"}`, `{"queue":"emails","action":"delete","id":"d1"}`,
		`{"queue":"emails","action":"pause"}`, `{"queue":"emails","action":"run","id":"d1"}`} {
		res := post(s, body, nil)
		e := decode[errorBody](t, res)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(e.Error, "read-only") {
			t.Errorf("%s: %d %q, want 403 saying the server is read-only", body, res.StatusCode, e.Error)
		}
	}
	// Any other method and path, too.
	for _, m := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodPost} {
		r := httptest.NewRequest(m, "/api/anything", strings.NewReader("{}"))
		r.Host = "127.0.0.1:8080"
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(tokenHeader, s.csrf)
		if res := request(s, r); res.StatusCode != http.StatusForbidden {
			t.Errorf("%s /api/anything: %d, want 403", m, res.StatusCode)
		}
	}
	if c := q.calls(); len(c) != 0 {
		t.Errorf("the queue saw %v", c)
	}
	if res := get(s, "/api/jobpage?queue=emails&id=f1"); res.StatusCode != http.StatusOK {
		t.Errorf("a read on a read-only server: %d", res.StatusCode)
	}
	page, _ := io.ReadAll(get(s, "/").Body)
	if !strings.Contains(string(page), `<meta name="rebound-read-only" content="true">`) || !strings.Contains(string(page), `id="read-only"`) {
		t.Error("the read-only page does not say it is read-only")
	}
	// The same server without -read-only acts.
	rw := newServer(t, Config{Queues: []Queue{q}})
	if res := post(rw, `{"queue":"emails","action":"pause"}`, nil); res.StatusCode != http.StatusOK {
		t.Errorf("pause without -read-only: %d", res.StatusCode)
	}
}

// Over TLS the access token's cookie is Secure; over plain HTTP it is not,
// and a remote server still needs the token either way.
func TestRemoteOverTLSSecureCookie(t *testing.T) {
	token := "a-token-of-twenty-chars"
	for _, overTLS := range []bool{true, false} {
		s := newServer(t, Config{Remote: true, Token: token})
		var ts *httptest.Server
		if overTLS {
			ts = httptest.NewTLSServer(s.Handler())
		} else {
			ts = httptest.NewServer(s.Handler())
		}
		client := ts.Client()
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		res, err := client.Get(ts.URL + "/api/queues")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("TLS %v: no token: %d, want 401", overTLS, res.StatusCode)
		}
		res, err = client.Get(ts.URL + "/?token=" + url.QueryEscape(token))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		cs := res.Cookies()
		if len(cs) != 1 || cs[0].Secure != overTLS || !cs[0].HttpOnly {
			t.Errorf("TLS %v: cookies %+v, want one HttpOnly cookie, Secure %v", overTLS, cs, overTLS)
		}
		ts.Close()
	}
	if _, err := New(Config{Model: stubModel{}, TLS: &tls.Config{}}); err == nil {
		t.Error("a TLS configuration without a certificate was accepted")
	}
}
