package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/internal/testenv"
)

// A redrive from the page, as an operator works one: the failed set
// grouped, a group's Redrive picks it, the rate set, the confirmation
// names the group and the rate, the panel shows the progress to the end
// (driven by the ui's process, not the page), each job carries its
// record; then a slower redrive of another group paused (nothing more is
// sent), resumed and cancelled. The hostile group's text stays text.
// REBOUND_UPDATE_SCREENSHOT=1 rewrites docs/redrive.png, the panel.
func TestUIBrowserRedrive(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	q, err := native.NewQueue(rdb, "sync", native.WithPrefix(prefix), native.WithFailedRetention(7*24*time.Hour, 1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	failForGroups(t, q, 3000) // 2,000 users not found, 1,000 hostile
	ctx := context.Background()
	tab := newTab(t, 1280, 1000)
	page := startUI(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", "sync", "-prefix", prefix, "-refresh", "250ms")
	do(t, tab, chromedp.Navigate(page+"#queues"))
	waitFor(t, tab, "the redrive panel", `!!document.querySelector('[data-panel="redrive"]')`)
	click(t, tab, `[data-panel="groups"] [data-groups="scan"]`)
	waitProgress(t, tab, "the groups", `document.querySelector(".groups-status").dataset.done === "true"`, `document.querySelector(".groups-status")?.textContent`)
	hostile := native.GroupID(native.Fingerprint(groupsHostile))
	click(t, tab, `li[data-group="`+hostile+`"] button[data-action="redrive"]`)
	if got := eval[string](t, tab, `document.querySelector('[data-redrive="filter"]').textContent`); !strings.Contains(got, "group "+hostile) {
		t.Errorf("the panel's jobs read %q, want the group", got)
	}
	typeInto(t, tab, `[data-redrive="rate"]`, "500")
	click(t, tab, `[data-redrive="start"]`)
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	if text := eval[string](t, tab, `document.querySelector("#confirm-text").textContent`); !strings.Contains(text, "group "+hostile) || !strings.Contains(text, "at 500 a second") {
		t.Errorf("confirmation %q, want the group and the rate", text)
	}
	if _, ok, _ := q.RedriveStatus(ctx); ok {
		t.Fatal("a redrive started before the confirmation")
	}
	click(t, tab, `#confirm-ok`)
	status := `document.querySelector('[data-redrive="status"]')`
	waitFor(t, tab, "the redrive running", status+`.dataset.state === "running"`)
	waitProgress(t, tab, "the redrive's end", status+`.dataset.state === "done"`, status+`.textContent`)
	if got := eval[string](t, tab, status+`.textContent`); !strings.Contains(got, "1,000 sent, 0 left of 1,000") {
		t.Errorf("status %q, want all 1,000 sent", got)
	}
	if got := eval[int](t, tab, `document.querySelectorAll("img").length`); got != 0 || eval[string](t, tab, "document.title") == "pwned" {
		t.Errorf("the hostile text made %d img elements", got)
	}
	st, _, err := q.RedriveStatus(ctx)
	if err != nil || st.Sent != 1000 {
		t.Fatalf("status %+v, %v", st, err)
	}
	if c, _ := q.Counts(ctx); c.Waiting != 1000 || c.Failed != 2000 {
		t.Errorf("after the redrive: %+v", c)
	}
	j, err := q.Job(ctx, "j002500")
	if err != nil || j.Metadata[native.RedriveIDKey] != st.ID || !strings.Contains(j.Metadata[native.RedriveFilterKey], hostile) {
		t.Errorf("a redriven job's metadata %v (%v), want the redrive's record", j.Metadata, err)
	}

	// A slow one: pause, resume, cancel.
	users := native.GroupID(`user "<q>" not found`)
	waitFor(t, tab, "the users group", `!!document.querySelector('li[data-group="`+users+`"] button[data-action="redrive"]')`)
	click(t, tab, `li[data-group="`+users+`"] button[data-action="redrive"]`)
	typeInto(t, tab, `[data-redrive="rate"]`, "40")
	click(t, tab, `[data-redrive="start"]`)
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	click(t, tab, `#confirm-ok`)
	waitFor(t, tab, "some sent", status+`.dataset.state === "running" && /[1-9][0-9]* sent/.test(`+status+`.textContent)`)
	if os.Getenv(updateScreenshotEnv) == "1" {
		png := within(t, tab, chromedp.Screenshot(chromedp.CSS(`[data-panel="redrive"]`)))
		name := filepath.Join("..", "..", "docs", "redrive.png")
		if err := os.WriteFile(name, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s (%d bytes)", name, len(png))
	}
	click(t, tab, `[data-redrive="pause"]`)
	waitFor(t, tab, "paused", status+`.dataset.state === "paused"`)
	paused, _, _ := q.RedriveStatus(ctx)
	time.Sleep(300 * time.Millisecond)
	if again, _, _ := q.RedriveStatus(ctx); again.Sent != paused.Sent || again.State != native.RedrivePaused {
		t.Errorf("paused at %d sent, then %d (%s): want nothing more sent", paused.Sent, again.Sent, again.State)
	}
	click(t, tab, `[data-redrive="resume"]`)
	waitFor(t, tab, "running again", status+`.dataset.state === "running"`)
	click(t, tab, `[data-redrive="cancel"]`)
	waitFor(t, tab, "cancelled", status+`.dataset.state === "cancelled"`)
	end, _, _ := q.RedriveStatus(ctx)
	if c, _ := q.Counts(ctx); end.State != native.RedriveCancelled || c.Failed != 2000-end.Sent {
		t.Errorf("cancelled: %+v, counts %+v", end, c)
	}

	// The record on a redriven job, on its page.
	do(t, tab, chromedp.Navigate(page+strings.TrimPrefix(jobPath("sync", "j002500", "exponential(1s, 1m)", 1), "/")))
	waitFor(t, tab, "the redriven job's page", `!!document.querySelector(".meta-table")`)
	if got := eval[string](t, tab, `document.querySelector(".meta-table").textContent`); !strings.Contains(got, native.RedriveIDKey) || !strings.Contains(got, st.ID) || !strings.Contains(got, native.RedrivenAtKey) {
		t.Errorf("the job's page shows metadata %q, want the redrive's record", got)
	}
}
