package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
)

// groupsHostile is a failure whose text would run a script in the page,
// clear the operator's screen and reorder what follows, were it shown
// raw.
const groupsHostile = `<img src=x onerror="document.title='pwned'"> ` + "\x1b[2J\u202e boom 17"

// failForGroups fails n jobs on q for good with a worker: all but 3000
// with dial timeouts to addresses that differ, 2000 with users not found
// by quoted names that differ, 1000 with the hostile text.
func failForGroups(t *testing.T, q *native.Queue, n int) {
	t.Helper()
	ctx := context.Background()
	for from := 0; from < n; from += 10000 {
		batch := make([]native.EnqueueParams, 0, 10000)
		for i := from; i < min(n, from+10000); i++ {
			var e string
			switch {
			case i < 2000:
				e = fmt.Sprintf(`user "u%d" not found`, i)
			case i < 3000:
				e = groupsHostile
			default:
				e = fmt.Sprintf("dial tcp 10.0.%d.%d:6379: i/o timeout after %dms", i%250, i%7, i%900)
			}
			batch = append(batch, native.EnqueueParams{Payload: []byte(e), Options: []native.EnqueueOption{native.WithID(fmt.Sprintf("j%06d", i)), native.WithName("sync")}})
		}
		if _, err := q.EnqueueMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Minute)), 1))
	w, err := native.NewWorker(q, rule, func(_ context.Context, j *native.Job) error {
		return backoff.Permanent(fmt.Errorf("%s", j.Payload))
	}, native.WithConcurrency(64))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Minute); ; {
		c, err := q.Counts(ctx)
		if err == nil && c.Failed == int64(n) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs never failed: %+v, %v", c, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// The failure groups of 100,000 failed jobs, as an operator works them:
// the page groups the failed set a bounded request at a time and shows
// each group's count, first and last seen and an example, the hostile
// text escaped; Retry group counts the group, asks with the count, and
// retries it in steps with progress, then the result. The server's
// answers at this size are timed (logged, not asserted).
// REBOUND_UPDATE_SCREENSHOT=1 rewrites docs/groups.png, the groups view.
func TestUIBrowserFailureGroups(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	q, err := native.NewQueue(rdb, "sync", native.WithPrefix(prefix), native.WithFailedRetention(7*24*time.Hour, 1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	start := time.Now()
	failForGroups(t, q, n)
	t.Logf("failed %d jobs in %s", n, time.Since(start).Round(time.Millisecond))

	tab := newTab(t, 1280, 1000)
	page := startUI(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", "sync", "-prefix", prefix, "-refresh", "250ms")
	do(t, tab, chromedp.Navigate(page+"#queues"))
	panel := `document.querySelector('[data-panel="groups"]')`
	waitFor(t, tab, "the groups view", `!!`+panel)
	click(t, tab, `[data-panel="groups"] [data-groups="scan"]`)
	waitProgress(t, tab, "the whole failed set grouped", panel+`.querySelector(".groups-status").dataset.done === "true"`, panel+`.querySelector(".groups-status")?.textContent`)
	status := eval[string](t, tab, panel+`.querySelector(".groups-status").textContent`)
	if !strings.Contains(status, "100,000 of 100,000 failed jobs read in 20 requests: 3 groups.") {
		t.Errorf("groups status %q, want all 100,000 read in 20 requests, 3 groups", status)
	}
	type row struct{ ID, Count, FP, Meta, Example string }
	rows := eval[[]row](t, tab, `[...`+panel+`.querySelectorAll("li[data-group]")].map(li => ({ID: li.dataset.group, Count: li.querySelector(".group-count").textContent,
		FP: li.querySelector(".fp").textContent, Meta: li.querySelector(".meta").textContent, Example: li.querySelector(".meta.err").textContent}))`)
	users := native.GroupID(`user "<q>" not found`)
	want := []row{
		{ID: native.GroupID("dial tcp <addr>: i/o timeout after <n>ms"), Count: "97,000", FP: "dial tcp <addr>: i/o timeout after <n>ms"},
		{ID: users, Count: "2,000", FP: `user "<q>" not found`},
		{ID: native.GroupID(native.Fingerprint(groupsHostile)), Count: "1,000", FP: `<img src=x onerror="<q>"> \x1b[<n>J\u202e boom <n>`},
	}
	if len(rows) != len(want) {
		t.Fatalf("groups %+v, want %d", rows, len(want))
	}
	for i, w := range want {
		r := rows[i]
		if r.ID != w.ID || r.Count != w.Count || r.FP != w.FP {
			t.Errorf("group %d: %s x%s %q, want %s x%s %q", i, r.ID, r.Count, r.FP, w.ID, w.Count, w.FP)
		}
		if !strings.Contains(r.Meta, "first seen ") || !strings.Contains(r.Meta, "last seen ") || !strings.HasPrefix(r.Example, "e.g. j") {
			t.Errorf("group %d: %q, %q; want first and last seen and an example", i, r.Meta, r.Example)
		}
	}
	if !strings.Contains(rows[2].Example, `\x1b[2J\u202e boom 17`) {
		t.Errorf("the hostile example reads %q, want its escapes", rows[2].Example)
	}
	if got := eval[int](t, tab, panel+`.querySelectorAll("img").length`); got != 0 || eval[string](t, tab, "document.title") == "pwned" {
		t.Errorf("the hostile text made %d img elements (title %q), want none", got, eval[string](t, tab, "document.title"))
	}
	if os.Getenv(updateScreenshotEnv) == "1" {
		png := within(t, tab, chromedp.Screenshot(chromedp.CSS(`[data-panel="groups"]`)))
		name := filepath.Join("..", "..", "docs", "groups.png")
		if err := os.WriteFile(name, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", name, len(png))
	}

	// Retry the users group: the count, the confirmation, the progress.
	eval[chromedp.Void](t, tab, `(() => { const box = document.querySelector('[data-bulk="groups"]'); window.seen = [];
		new MutationObserver(() => window.seen.push(box.dataset.phase + ": " + box.textContent)).observe(box, {subtree: true, childList: true, characterData: true, attributes: true}); })()`)
	click(t, tab, `[data-panel="groups"] li[data-group="`+users+`"] button[data-action="retry"]`)
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	if title, text := eval[string](t, tab, `document.querySelector("#confirm-title").textContent`), eval[string](t, tab, `document.querySelector("#confirm-text").textContent`); title != "Retry 2,000 jobs?" ||
		!strings.Contains(text, `The 2,000 jobs (failed, of group `+users+`: user "<q>" not found) go back to the wait list`) {
		t.Errorf("confirmation %q: %q; want the count and the group", title, text)
	}
	if c, _ := q.Counts(context.Background()); c.Waiting != 0 {
		t.Fatalf("before the confirmation: %+v, want nothing retried", c)
	}
	click(t, tab, `#confirm-ok`)
	waitFor(t, tab, "the retry's result", `document.querySelector('[data-bulk="groups"]').dataset.phase === "done"`)
	if got := eval[string](t, tab, `document.querySelector('[data-bulk="groups"]').textContent`); got != "2,000 jobs retried, 0 skipped (moved on since the count)." {
		t.Errorf("result %q", got)
	}
	seen := eval[[]string](t, tab, `window.seen`)
	progress := false
	for _, s := range seen {
		progress = progress || strings.HasPrefix(s, "acting: Retrying failed, of group "+users) && strings.Contains(s, "1,000 of 2,000 retried…")
	}
	if !progress {
		t.Errorf("the page showed %q, want the progress half-way (1,000 of 2,000)", seen)
	}
	if c, _ := q.Counts(context.Background()); c.Waiting != 2000 || c.Failed != n-2000 {
		t.Errorf("after the retry: %+v, want 2,000 waiting, %d failed", c, n-2000)
	}
	waitProgress(t, tab, "the groups read again, without the retried one", panel+`.querySelector(".groups-status").dataset.done === "true" && !`+panel+`.querySelector('li[data-group="`+users+`"]')`, panel+`.querySelector(".groups-status")?.textContent`)

	// The server's answers at this size.
	key := url.Values{"queueKey": {base64.RawURLEncoding.EncodeToString([]byte("sync"))}}.Encode()
	for _, target := range []string{
		"api/groups?" + key,
		"api/count?" + key + "&state=failed&group=" + want[0].ID,
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
			total, worst = total+d, max(worst, d)
			if res.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d", target, res.StatusCode)
			}
		}
		t.Logf("%d failed jobs: GET %s: mean %s, worst %s", n, target, (total / tries).Round(10*time.Microsecond), worst.Round(10*time.Microsecond))
	}
}
