package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/internal/testenv"
)

// bulkQueue fills a native queue with n waiting jobs (IDs w000000...,
// in run order), failed failed ones and delayed delayed ones.
func bulkQueue(t *testing.T, q *native.Queue, n, failed, delayed int) {
	t.Helper()
	ctx := context.Background()
	for from := 0; from < n; from += 10000 {
		batch := make([]native.EnqueueParams, 0, 10000)
		for i := from; i < min(n, from+10000); i++ {
			batch = append(batch, native.EnqueueParams{Payload: []byte("p"), Options: []native.EnqueueOption{native.WithID(fmt.Sprintf("w%06d", i)), native.WithName("bulk")}})
		}
		if _, err := q.EnqueueMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	for i := range failed {
		id := fmt.Sprintf("f%04d", i)
		if _, err := q.Enqueue(ctx, nil, native.WithID(id), native.WithName("bulk")); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for i := range delayed {
		if _, err := q.Enqueue(ctx, nil, native.WithID(fmt.Sprintf("d%04d", i)), native.WithDelay(time.Duration(i+1)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
}

// Every list pages by cursor and shows its total: on a queue of 100,000
// waiting jobs the waiting list shows the first 50 in run order and its
// total, Next and Previous move a page, and the failed list pages to its
// end. The server's answers for that size are timed (logged, not
// asserted).
func TestUIBrowserListsPage(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	q, err := native.NewQueue(rdb, "bulk", native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	start := time.Now()
	bulkQueue(t, q, n, 120, 3)
	t.Logf("enqueued %d jobs in %s", n+123, time.Since(start).Round(time.Millisecond))

	tab := newTab(t, 1280, 1000)
	page := startUI(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", "bulk", "-prefix", prefix, "-refresh", "250ms")
	do(t, tab, chromedp.Navigate(page+"#queues"))
	panel := func(st string) string { return `document.querySelector('[data-panel="` + st + `"]')` }
	first := func(st string) string { return panel(st) + `?.querySelector("li[data-job]")?.dataset.job` }
	waitFor(t, tab, "the waiting list and its total", first("waiting")+` === "w000000" && `+panel("waiting")+`.querySelector(".total").textContent === "· 100,000"`)
	if got := eval[int](t, tab, panel("waiting")+`.querySelectorAll("li[data-job]").length`); got != 50 {
		t.Errorf("the waiting list shows %d jobs, want a page of 50", got)
	}
	if got := eval[string](t, tab, panel("failed")+`.querySelector(".total").textContent`); got != "· 120" {
		t.Errorf("failed total %q, want · 120", got)
	}
	if got := eval[bool](t, tab, panel("waiting")+`.querySelector('[data-page="prev"]').disabled`); !got {
		t.Error("Previous is enabled on the first page")
	}
	for _, step := range []struct{ button, first, where string }{
		{"next", "w000050", "51–100"},
		{"next", "w000100", "101–150"},
		{"prev", "w000050", "51–100"},
	} {
		click(t, tab, `[data-panel="waiting"] [data-page="`+step.button+`"]`)
		waitFor(t, tab, "the waiting list at "+step.where, first("waiting")+` === "`+step.first+`" && `+panel("waiting")+`.querySelector(".where").textContent === "`+step.where+`"`)
	}
	// The failed list, latest first, to its last page.
	click(t, tab, `[data-panel="failed"] [data-page="next"]`)
	waitFor(t, tab, "the failed list's second page", panel("failed")+`.querySelector(".where").textContent === "51–100"`)
	click(t, tab, `[data-panel="failed"] [data-page="next"]`)
	waitFor(t, tab, "the failed list's last page", panel("failed")+`.querySelector(".where").textContent === "101–120" && `+first("failed")+` === "f0019"`)
	if got := eval[bool](t, tab, panel("failed")+`.querySelector('[data-page="next"]').disabled`); !got {
		t.Error("Next is enabled on the failed list's last page")
	}

	// The server's answers at this size.
	deep, err := q.List(context.Background(), native.StateWaiting, native.ListOptions{Limit: 1000, OldestFirst: true})
	for range 49 {
		if err != nil {
			break
		}
		deep, err = q.List(context.Background(), native.StateWaiting, native.ListOptions{Limit: 1000, OldestFirst: true, Cursor: deep.Next})
	}
	if err != nil {
		t.Fatal(err)
	}
	key := base64.RawURLEncoding.EncodeToString([]byte("bulk"))
	for _, target := range []string{
		"api/queues",
		"api/jobs?" + url.Values{"queueKey": {key}, "state": {"waiting"}, "limit": {"50"}, "cursor": {""}}.Encode(),
		"api/jobs?" + url.Values{"queueKey": {key}, "state": {"waiting"}, "limit": {"50"}, "cursor": {deep.Next}}.Encode(),
		"api/jobs?" + url.Values{"queueKey": {key}, "state": {"failed"}, "limit": {"50"}, "cursor": {""}}.Encode(),
		"api/jobs?" + url.Values{"queueKey": {key}, "state": {"delayed"}, "limit": {"50"}}.Encode(),
		"api/job?" + url.Values{"queueKey": {key}, "idKey": {base64.RawURLEncoding.EncodeToString([]byte("w099999"))}}.Encode(),
	} {
		var worst, total time.Duration
		const tries = 5
		for range tries {
			s := time.Now()
			res, err := http.Get(page + target)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			d := time.Since(s)
			total += d
			worst = max(worst, d)
			if res.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d", target, res.StatusCode)
			}
		}
		what := target
		if strings.Contains(target, url.QueryEscape(deep.Next)) && deep.Next != "" {
			what = "api/jobs waiting, the page after 50,000 jobs"
		}
		t.Logf("%d jobs: GET %s: mean %s, worst %s", n+123, what, (total / tries).Round(10*time.Microsecond), worst.Round(10*time.Microsecond))
	}
}

// Find, on a queue of 100,000 waiting jobs: by ID prefix among the
// failed jobs (searched to the end), by name among the waiting ones (three
// at the very end: each request reads a bounded number of jobs and says it
// stopped short, and Continue goes on until they are found), and by a time
// range that no job is in. The server's answer to one find request at
// this size is timed (logged, not asserted).
func TestUIBrowserFind(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	q, err := native.NewQueue(rdb, "bulk", native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	bulkQueue(t, q, n, 120, 0)
	for i := range 3 {
		if _, err := q.Enqueue(context.Background(), nil, native.WithID(fmt.Sprintf("rare-%d", i)), native.WithName("rare.job")); err != nil {
			t.Fatal(err)
		}
	}
	tab := newTab(t, 1280, 1000)
	page := startUI(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", "bulk", "-prefix", prefix, "-refresh", "250ms")
	do(t, tab, chromedp.Navigate(page+"#queues"))
	panel := `document.querySelector('[data-panel="find"]')`
	waitFor(t, tab, "the find form", `!!`+panel)
	if shown := eval[bool](t, tab, panel+`.querySelector('[data-find="more"]').getClientRects().length > 0`); shown {
		t.Error("Continue shows before any search")
	}
	status := func() string { return eval[string](t, tab, panel+`.querySelector(".find-status").textContent`) }
	found := func() []string {
		return eval[[]string](t, tab, `[...`+panel+`.querySelectorAll("li[data-job]")].map(li => li.dataset.job)`)
	}
	set := func(name, value string) {
		eval[chromedp.Void](t, tab, fmt.Sprintf(`(() => { const e = %s.querySelector('[name=%q]'); e.value = %q; })()`, panel, name, value))
	}
	submit := func() {
		eval[chromedp.Void](t, tab, panel+`.querySelector(".find-status").textContent = ""`)
		click(t, tab, `[data-panel="find"] button[type="submit"]`)
		waitFor(t, tab, "the search's answer", panel+`.querySelector(".find-status").textContent !== ""`)
	}

	// By ID prefix, among the failed jobs.
	set("state", "failed")
	set("id", "f001")
	submit()
	if got := found(); len(got) != 10 || !strings.Contains(status(), "searched to the end") {
		t.Errorf("failed jobs with IDs f001*: found %v, %q; want f0010..f0019, to the end", got, status())
	}

	// A found job acted on leaves the results.
	click(t, tab, `[data-panel="find"] li[data-job="f0015"] button[data-action="retry"]`)
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	click(t, tab, `#confirm-ok`)
	waitFor(t, tab, "f0015 to leave the results", `!`+panel+`.querySelector('li[data-job="f0015"]')`)
	if j, err := q.Job(context.Background(), "f0015"); err != nil || j.State != native.StateWaiting {
		t.Errorf("f0015 after its retry from the results: %v, %v; want waiting", j.State, err)
	}

	// By name, among the waiting jobs: the matches are past many requests'
	// worth of jobs.
	set("id", "")
	set("state", "waiting")
	set("name", "rare")
	submit()
	if s := status(); !strings.Contains(s, "stopped short") || len(found()) != 0 {
		t.Fatalf("the first request over 100,003 waiting jobs: %q, found %v; want it stopped short, nothing yet", s, found())
	}
	requests := 1
	for ; requests < 80 && eval[bool](t, tab, `!`+panel+`.querySelector('[data-find="more"]').hidden`); requests++ {
		before := status()
		click(t, tab, `[data-panel="find"] [data-find="more"]`)
		waitFor(t, tab, "the next request's answer", panel+`.querySelector(".find-status").textContent !== `+fmt.Sprintf("%q", before))
	}
	if got := found(); strings.Join(got, " ") != "rare-0 rare-1 rare-2" || !strings.Contains(status(), "searched to the end") {
		t.Errorf("after %d requests: found %v, %q; want the three rare jobs, to the end", requests, got, status())
	}
	t.Logf("found the 3 rare jobs among %d waiting jobs in %d requests: %s", n+4, requests, status())

	// A time range no job is in: the failed list, latest first, stops at
	// once.
	set("name", "")
	set("state", "failed")
	eval[chromedp.Void](t, tab, panel+`.querySelector('[name="from"]').value = (d => new Date(d - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19))(new Date(Date.now() + 3600e3))`)
	submit()
	if s := status(); len(found()) != 0 || !strings.Contains(s, "0 found, 1 of 119 jobs read") {
		t.Errorf("failed jobs from an hour on: found %v, %q; want none after reading one", found(), s)
	}

	// One find request at this size, reading the most jobs a request
	// reads.
	key := base64.RawURLEncoding.EncodeToString([]byte("bulk"))
	target := page + "api/find?" + url.Values{"queueKey": {key}, "state": {"waiting"}, "name": {"no such name"}}.Encode()
	var worst, total time.Duration
	const tries = 5
	for range tries {
		s := time.Now()
		res, err := http.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		d := time.Since(s)
		total, worst = total+d, max(worst, d)
	}
	t.Logf("%d jobs: GET api/find (waiting, by name, reading 2000 jobs): mean %s, worst %s", n+123, (total / tries).Round(10*time.Microsecond), worst.Round(10*time.Microsecond))
}
