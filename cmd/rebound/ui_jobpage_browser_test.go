package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
)

// b64 is the key by which the page names a queue or a job.
func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// utcText is how a job's page prints a time.
func utcText(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000 UTC") }

// failThrice gives job id of q three failed attempts under rule, running
// the second and third at once (RunNow, as an operator would), and
// returns the job as stored after the third: delayed, its next fire time
// the rule's delay after that failure.
func failThrice(t *testing.T, q *native.Queue, rule backoff.Rule, id string) native.StoredJob {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	runs := 0
	w, err := native.NewWorker(q, rule, func(context.Context, *native.Job) error {
		mu.Lock()
		defer mu.Unlock()
		runs++
		return fmt.Errorf("smtp: 421 try again later (run %d)\x1b]0;pwned\x07", runs)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, []byte(`{"to":"ops@example.com","body":"\u001b[2J"}`), native.WithID(id), native.WithName("welcome-email"),
		native.WithMetadata(map[string]string{"tenant": "acme", "trace\r\n": "\xff"})); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	werr := make(chan error, 1)
	go func() { werr <- w.Run(wctx) }()
	defer func() {
		cancel()
		if err := <-werr; err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}()
	var j native.StoredJob
	for attempt := 1; attempt <= 3; attempt++ {
		deadline := time.Now().Add(20 * time.Second)
		for {
			j, err = q.Job(ctx, id)
			if err == nil && j.State == native.StateDelayed && j.Attempts == attempt {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("attempt %d: job %+v, %v", attempt, j, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if attempt < 3 {
			if err := q.RunNow(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	cancel()
	return j
}

// A job's page, opened from a list row as an operator would, on a queue
// beside one of 100,000 jobs: its time bar shows the enqueue time, the
// attempts before the last as a span (the queue stores no time of each),
// the last failure (the stored fire time less the rule's delay), the
// stored fire time and the rule's next fire times, each one keyed delay
// after the one before; its details show what is stored, escaped. The
// job's ID holds CR, LF and a byte that is not UTF-8, and the page opens
// it by ID too. The server's answers for the job page at this size are
// timed (logged, not asserted).
func TestUIBrowserJobPage(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	bulk, err := native.NewQueue(rdb, "bulk", native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	emails, err := native.NewQueue(rdb, "emails", native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	start := time.Now()
	bulkQueue(t, bulk, n, 0, 0)
	t.Logf("enqueued %d jobs in %s", n, time.Since(start).Round(time.Millisecond))
	const policy = "jitter(exponential(1m, 1h))"
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Parse(policy)), 6))
	id := "mail\r\n\xff-7"
	job := failThrice(t, emails, rule, id)
	failedAt := time.Now()

	tab := newTab(t, 1280, 1000)
	page := startUI(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", "emails", "-queue", "bulk", "-prefix", prefix, "-refresh", "250ms")
	do(t, tab, chromedp.Navigate(page+"?"+url.Values{"policy": {policy}, "attempts": {"6"}}.Encode()+"#queues"))
	row := `[data-queue="emails"] [data-list="delayed"] li[data-key="` + b64(id) + `"] a.id`
	waitFor(t, tab, "the job in the delayed list", `!!document.querySelector('`+row+`')`)
	click(t, tab, row)
	// A poll does not outlive the page it started on: wait for the job's
	// page by its bar's element first.
	do(t, tab, chromedp.WaitReady(chromedp.CSS("#job-bar svg")))
	waitFor(t, tab, "the job's page and its bar", `location.pathname === "/job" && document.querySelectorAll("#job-bar .mark").length > 0`)

	marks := eval[[]string](t, tab, `[...document.querySelectorAll("#job-bar .mark")].map((m) => m.dataset.kind + "/" + m.dataset.source + "/" + m.dataset.attempt)`)
	if want := []string{"enqueued/stored/", "runs/stored/1", "failed/inferred/3", "fire/stored/4", "fire/rule/5", "fire/rule/6"}; strings.Join(marks, " ") != strings.Join(want, " ") {
		t.Errorf("bar marks %v, want %v", marks, want)
	}
	p := rule.Policy()
	src := backoff.Key(id)
	d := func(a int) time.Duration { return backoff.Delay(p, a, src) }
	when := eval[[]string](t, tab, `[...document.querySelectorAll("#bar-table tbody tr")].map((r) => r.children[2].textContent)`)
	wantWhen := []string{
		utcText(job.CreatedAt),
		utcText(job.CreatedAt) + " – " + utcText(job.NextFireAt.Add(-d(3))),
		utcText(job.NextFireAt.Add(-d(3))),
		utcText(job.NextFireAt),
		utcText(job.NextFireAt.Add(d(4))),
		utcText(job.NextFireAt.Add(d(4) + d(5))),
	}
	if strings.Join(when, "|") != strings.Join(wantWhen, "|") {
		t.Errorf("bar times\n%q\nwant\n%q", when, wantWhen)
	}
	// The inferred failure is when attempt 3 failed, to the lateness of
	// this test's poll.
	if inferred := job.NextFireAt.Add(-d(3)); inferred.After(failedAt.Add(time.Second)) || inferred.Before(failedAt.Add(-20*time.Second)) {
		t.Errorf("inferred failure %s, but attempt 3 failed by %s", inferred, failedAt)
	}
	fields := eval[map[string]string](t, tab, `Object.fromEntries([...document.querySelectorAll("#job-fields dd")].map((d) => [d.dataset.field, d.textContent]))`)
	for field, want := range map[string]string{
		"attempts":  "3 started (the worker's rule caps them)",
		"state":     "delayed",
		"cancelled": "no",
		"name":      "welcome-email",
		"created":   utcText(job.CreatedAt),
		"nextFire":  utcText(job.NextFireAt),
		"lastError": `smtp: 421 try again later (run 3)\x1b]0;pwned\x07`,
		"payload":   `{"to":"ops@example.com","body":"\u001b[2J"}`,
		"metadata":  `tenantacmetrace\x0d\x0a\xff`,
	} {
		if fields[field] != want {
			t.Errorf("field %s = %q, want %q", field, fields[field], want)
		}
	}
	if got := eval[string](t, tab, `document.querySelector("#job-title").textContent`); got != `mail\x0d\x0a\xff-7` {
		t.Errorf("title %q", got)
	}
	if got := eval[string](t, tab, `document.querySelector("#bar-sub").textContent`); !strings.Contains(got, policy+" x 6") {
		t.Errorf("bar caption %q does not name the rule", got)
	}
	if os.Getenv(updateScreenshotEnv) == "1" {
		png := within(t, tab, chromedp.FullScreenshot(100))
		name := filepath.Join("..", "..", "docs", "ui-job.png")
		if err := os.WriteFile(name, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", name, len(png))
	}

	// By ID, typed with the escapes the page shows.
	typeInto(t, tab, "#job-id", `mail\x0d\x0a\xff-7`)
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector("#job-bar").replaceChildren(); document.querySelector("#job-open").requestSubmit()`))
	do(t, tab, chromedp.WaitReady(chromedp.CSS("#job-bar svg")))
	waitFor(t, tab, "the job's page by ID", `new URLSearchParams(location.search).getAll("idKey").includes("`+b64(id)+`") && document.querySelectorAll("#job-bar .mark").length === 6`)

	// A waiting job of the big queue, from its row: due now, then the
	// rule's times ahead.
	do(t, tab, chromedp.Navigate(page+"?"+url.Values{"policy": {policy}, "attempts": {"3"}}.Encode()+"#queues"))
	row = `[data-queue="bulk"] [data-list="waiting"] li[data-job="w000000"] a.id`
	waitFor(t, tab, "the big queue's first waiting job", `!!document.querySelector('`+row+`')`)
	click(t, tab, row)
	do(t, tab, chromedp.WaitReady(chromedp.CSS("#job-bar svg")))
	waitFor(t, tab, "the waiting job's bar", `[...document.querySelectorAll("#job-bar .mark")].map((m) => m.dataset.kind + "/" + m.dataset.source).join(" ") === "enqueued/stored due/now fire/rule fire/rule"`)

	// The server's answers for the job page at this size.
	for _, target := range []struct{ what, path string }{
		{"the job page's HTML", "job?" + url.Values{"queueKey": {b64("bulk")}, "idKey": {b64("w099999")}}.Encode()},
		{"api/jobpage, a waiting job of 100,000, with the rule", "api/jobpage?" + url.Values{"queueKey": {b64("bulk")}, "idKey": {b64("w099999")}, "policy": {policy}, "attempts": {"6"}}.Encode()},
		{"api/jobpage, a delayed job, with the rule", "api/jobpage?" + url.Values{"queueKey": {b64("emails")}, "idKey": {b64(id)}, "policy": {policy}, "attempts": {"6"}}.Encode()},
		{"api/jobpage, rule at MaxAttempts 1001", "api/jobpage?" + url.Values{"queueKey": {b64("emails")}, "idKey": {b64(id)}, "policy": {policy}, "attempts": {"1001"}}.Encode()},
		{"api/clamp", "api/clamp?" + url.Values{"policy": {policy}, "attempt": {"9223372036854775807"}}.Encode()},
	} {
		var worst, total time.Duration
		const tries = 20
		for range tries {
			s := time.Now()
			res, err := http.Get(page + target.path)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			d := time.Since(s)
			total += d
			worst = max(worst, d)
			if res.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d", target.path, res.StatusCode)
			}
		}
		t.Logf("%d jobs: GET %s: mean %s, worst %s", n+1, target.what, (total / tries).Round(10*time.Microsecond), worst.Round(10*time.Microsecond))
	}
}

// The curve view's contrasts, as the design notes draw them: beside the
// exponential curve the linear schedule of the same base, dashed; and for
// a chosen attempt the raw doubling value next to the clamped delay
// (exponential(100ms, 10s) at attempt 20: 52,428,800 ms, clamped to
// 10,000 ms), exact past int64, and honest at math.MaxInt.
func TestUIBrowserCurveContrasts(t *testing.T) {
	tab := newTab(t, 1280, 1000)
	page := startUI(t)
	do(t, tab, chromedp.Navigate(page+"?"+url.Values{"policy": {"exponential(100ms, 10s)"}, "attempts": {"6"}}.Encode()))
	waitFor(t, tab, "the dashed linear line", `!!document.querySelector("#bars .contrast polyline.linear")`)
	if got := eval[string](t, tab, `document.querySelector("#bars .contrast").dataset.policy`); got != "linear(100ms, 100ms, 10s)" {
		t.Errorf("contrast %q, want linear(100ms, 100ms, 10s)", got)
	}
	if got := eval[string](t, tab, `getComputedStyle(document.querySelector("#bars polyline.linear")).strokeDasharray`); got == "none" || got == "" {
		t.Errorf("the linear line is not dashed: stroke-dasharray %q", got)
	}
	if got := eval[[]string](t, tab, `[...document.querySelectorAll("#bars .linear-dot")].map((c) => c.dataset.delayNs)`); strings.Join(got, ",") != "100000000,200000000,300000000,400000000,500000000" {
		t.Errorf("linear delays %v, want 100ms..500ms", got)
	}
	if got := eval[string](t, tab, `document.querySelector('#bars-legend [data-legend="linear"]')?.textContent ?? ""`); !strings.Contains(got, "linear(100ms, 100ms, 10s)") {
		t.Errorf("legend %q does not name the linear schedule", got)
	}
	if got := eval[string](t, tab, `document.querySelector('#bars-legend [data-legend="verdict"]')?.textContent ?? ""`); got != "by attempt 5 the exponential waits 1.6s, 3.2x the linear's 500ms" {
		t.Errorf("verdict %q, want the design notes' (by attempt 5 the exponential is about three times the linear)", got)
	}
	clamp := func(field string) string {
		return `(document.querySelector('#clamp-out [data-clamp="` + field + `"]')?.textContent ?? "")`
	}
	waitFor(t, tab, "attempt 20's raw and clamped values", clamp("raw")+`.startsWith("52,428,800 ms") && `+clamp("clamped")+`.startsWith("10,000 ms")`)
	if got := eval[string](t, tab, clamp("clamped")); !strings.Contains(got, "clamped from the raw value") {
		t.Errorf("clamped %q does not say it was clamped", got)
	}
	typeInto(t, tab, "#clamp-attempt", "9223372036854775807")
	waitFor(t, tab, "the raw value at math.MaxInt", clamp("raw")+`.startsWith("overflows int64: a number of 9,223,372,036,854,775,833 binary digits") && `+clamp("clamped")+`.startsWith("10,000 ms")`)
	typeInto(t, tab, "#clamp-attempt", "64")
	waitFor(t, tab, "an exact big raw value", clamp("raw")+` === "922,337,203,685,477,580,800 ms (overflows int64: 90 binary digits) = 100ms × 2^63"`)
	// Choosing an attempt on the chart: attempt 3's bar.
	do(t, tab, chromedp.Evaluate[chromedp.Void](`document.querySelector('#bars g[data-attempt="3"]').dispatchEvent(new MouseEvent("click", {bubbles: true}))`))
	waitFor(t, tab, "attempt 3, below the cap", clamp("raw")+`.startsWith("400 ms") && `+clamp("clamped")+`.startsWith("400 ms") && document.querySelector("#clamp-out").dataset.state === "raw"`)
	if got := eval[string](t, tab, clamp("linear")); !strings.HasPrefix(got, "300ms") || !strings.Contains(got, "1.33x") {
		t.Errorf("linear at attempt 3 %q, want 300ms and the exponential 1.33x it", got)
	}
	// Another curve has no linear contrast.
	typeInto(t, tab, "#policy", "linear(100ms, 50ms, 1s)")
	waitFor(t, tab, "the contrast to go", `!document.querySelector("#bars .contrast") && document.querySelector("#policy").value === "linear(100ms, 50ms, 1s)"`)
}

// -read-only, as the operator sees it, beside a queue of 100,000 jobs: no
// action's button anywhere (rows, waiting rows that would offer Delete,
// the lookup, pause), a banner that says so, and a POST (or any other
// write) with the page's own token is refused with 403.
func TestUIBrowserReadOnly(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	populate(t, rdb, prefix)
	bulk, err := native.NewQueue(rdb, "bulk", native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	bulkQueue(t, bulk, 100_000, 0, 0)
	tab := newTab(t, 1280, 1000)
	page := startUI(t, "-read-only", "-redis", "redis://"+testenv.RedisAddr(), "-queue", "emails", "-queue", "bulk", "-prefix", prefix, "-refresh", "250ms")
	do(t, tab, chromedp.Navigate(page+"#queues"))
	waitFor(t, tab, "the delayed and failed lists, and 100,000 waiting jobs", `document.querySelector('[data-queue="emails"] [data-list="delayed"] li[data-job]') && document.querySelector('[data-queue="emails"] [data-list="failed"] li[data-job]') && document.querySelector('[data-queue="bulk"] [data-list="waiting"] li[data-job="w000000"]')`)
	if got := eval[int](t, tab, `document.querySelectorAll("button[data-action], button[data-pause]").length`); got != 0 {
		t.Errorf("a read-only page shows %d action buttons", got)
	}
	if got := eval[string](t, tab, `document.querySelector("#read-only")?.textContent ?? ""`); !strings.Contains(got, "Read-only") {
		t.Errorf("banner %q", got)
	}
	// The lookup shows the job, without buttons, and links its page.
	id := eval[string](t, tab, `document.querySelector('[data-queue="emails"] [data-list="failed"] li[data-job]').dataset.job`)
	typeInto(t, tab, `[data-queue="emails"] .lookup input`, id)
	click(t, tab, `[data-queue="emails"] .lookup button`)
	waitFor(t, tab, "the looked-up job", `!!document.querySelector('[data-queue="emails"] .lookup-result .job a.open-job')`)
	if got := eval[int](t, tab, `document.querySelectorAll(".lookup-result button").length`); got != 0 {
		t.Errorf("the looked-up job shows %d buttons", got)
	}
	// A hand-made POST with the page's own token, from the page's
	// origin: refused.
	token := eval[string](t, tab, `document.querySelector('meta[name="rebound-token"]').content`)
	body := fmt.Sprintf(`{"queue":"emails","action":"retry","id":%q}`, id)
	req, err := http.NewRequest(http.MethodPost, page+"api/action", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Rebound-Token", token)
	req.Header.Set("Origin", strings.TrimSuffix(page, "/"))
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(msg), "this server is read-only") {
		t.Errorf("POST on a read-only server: %d %s, want 403 saying the server is read-only", res.StatusCode, msg)
	}
	q, err := native.NewQueue(rdb, "emails", native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"api/queues", "api/action?x=1"} {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			req, _ := http.NewRequest(m, page+path, strings.NewReader("{}"))
			req.Header.Set("X-Rebound-Token", token)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusForbidden {
				t.Errorf("%s /%s on a read-only server: %d, want 403", m, path, res.StatusCode)
			}
		}
	}
	if j, err := q.Job(context.Background(), id); err != nil || j.State != native.StateFailed {
		t.Errorf("the job after the refused retry: %+v, %v; want it still failed", j, err)
	}
}

// A job's page keeps the window's width whatever the job's text: a queue
// name, an ID, a name, a payload, an error and metadata of 5000 characters
// without a break each wrap or scroll inside their boxes, and the bar
// keeps to its card.
func TestUIBrowserJobPageLongText(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	ctx := context.Background()
	long := func(c string) string { return strings.Repeat(c, 5000) }
	queueName := "q" + long("Q")
	q, err := native.NewQueue(rdb, queueName, native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	id := "f" + long("i")
	if _, err := q.Enqueue(ctx, []byte(long("p")), native.WithID(id), native.WithName(long("n")), native.WithMetadata(map[string]string{long("k"): long("v")})); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	tab := newTab(t, 1024, 800)
	page := startUI(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", queueName, "-prefix", prefix, "-refresh", "250ms")
	do(t, tab, chromedp.Navigate(page+strings.TrimPrefix(jobPath(queueName, id, "exponential(1s, 1m)", 5), "/")))
	waitFor(t, tab, "the job's page", `document.querySelector("#job-state")?.textContent === "failed · cancelled" && [...document.querySelectorAll("#job-bar .mark")].map((m) => m.dataset.kind).join(" ") === "enqueued failed"`)
	type dims struct{ Scroll, Inner int }
	if d := eval[dims](t, tab, `({scroll: document.documentElement.scrollWidth, inner: window.innerWidth})`); d.Scroll > d.Inner {
		t.Errorf("the job's page is %d px wide in a window of %d px", d.Scroll, d.Inner)
	}
}

// jobPath is the address of a job's page, as the lists link it.
func jobPath(queue, id, policy string, attempts int) string {
	return "/job?" + url.Values{"queueKey": {b64(queue)}, "idKey": {b64(id)}, "policy": {policy}, "attempts": {fmt.Sprint(attempts)}}.Encode()
}
