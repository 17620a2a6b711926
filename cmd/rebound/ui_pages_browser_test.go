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
