package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/internal/testenv"
)

// A queue whose name is not UTF-8, a failed job whose ID is not UTF-8 and
// a delayed job whose ID holds CR LF: the page acts on each of them (JSON
// turned their bytes into U+FFFD, and the actions named jobs that do not
// exist), and the lookup finds the CR LF job by the escapes the page
// shows for it.
func TestUIBrowserNamesNotUTF8(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	ctx := context.Background()
	const queueName = "mails-\xff\xfe"
	q, err := native.NewQueue(rdb, queueName, native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	const failedID, crlfID = "job-\xc3\x28-\xff", "line\r\nbreak"
	if _, err := q.Enqueue(ctx, []byte("x"), native.WithID(failedID), native.WithName("name-\xfe")); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Cancel(ctx, failedID); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, []byte("y"), native.WithID(crlfID), native.WithDelay(time.Hour)); err != nil {
		t.Fatal(err)
	}
	tab := newTab(t, 1280, 900)
	page := startUI(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", queueName, "-prefix", prefix, "-refresh", "250ms")
	do(t, tab, chromedp.Navigate(page+"#queues"))
	card := `document.querySelector(".card.queue")`
	waitFor(t, tab, "the failed job's row", `!!`+card+`?.querySelector('[data-list="failed"] li[data-key]')`)
	if got := eval[string](t, tab, card+`.querySelector("h3").textContent`); got != `mails-\xff\xfe` {
		t.Errorf("queue shown as %q, want its bytes escaped", got)
	}
	if got := eval[string](t, tab, card+`.querySelector('[data-list="failed"] li .id').textContent`); got != `job-\xc3(-\xff · name-\xfe` {
		t.Errorf("failed row shows %q, want the ID's and the name's bytes escaped", got)
	}

	// Retry the failed job from its row.
	click(t, tab, `.card.queue [data-list="failed"] li[data-key] button[data-action="retry"]`)
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	click(t, tab, `#confirm-ok`)
	waitFor(t, tab, "the failed list to empty", card+`.querySelector('[data-list="failed"] li[data-key]') === null`)
	if j, err := q.Job(ctx, failedID); err != nil || j.State != native.StateWaiting {
		t.Errorf("job %q after retry: %v, %v; want waiting", failedID, j.State, err)
	}

	// Look the CR LF job up as the page shows it, then run it now.
	typeInto(t, tab, ".card.queue .lookup input", `line\x0d\x0abreak`)
	click(t, tab, ".card.queue .lookup button")
	waitFor(t, tab, "the CR LF job's card", card+`.querySelector(".job .state")?.textContent === "delayed"`)
	if got := eval[string](t, tab, card+`.querySelector(".job code").textContent`); got != `line\x0d\x0abreak` {
		t.Errorf("card shows the ID as %q", got)
	}
	click(t, tab, `.card.queue .job button[data-action="run"]`)
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	click(t, tab, `#confirm-ok`)
	waitFor(t, tab, "the job to be due", card+`.querySelector(".job .state")?.textContent === "waiting"`)
	if j, err := q.Job(ctx, crlfID); err != nil || j.State != native.StateWaiting {
		t.Errorf("job %q after run now: %v, %v; want waiting", crlfID, j.State, err)
	}
}

// Text of 5000 characters without a break (a queue's name, a job's ID,
// name and error) wraps or is cut inside its box: the page is never
// wider than the window, in the lists, the job's card, the confirmation
// and the toast. Before, such a name widened the page by 69,575 px.
func TestUIBrowserLongTextKeepsThePageWidth(t *testing.T) {
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
	if _, err := q.Enqueue(ctx, nil, native.WithID("d"+long("d")), native.WithName(long("m")), native.WithDelay(time.Hour)); err != nil {
		t.Fatal(err)
	}
	tab := newTab(t, 1024, 800)
	page := startUI(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", queueName, "-prefix", prefix, "-refresh", "250ms")
	do(t, tab, chromedp.Navigate(page+"#queues"))
	waitFor(t, tab, "both lists", `document.querySelectorAll(".card.queue [data-list] li[data-key]").length === 2`)
	width := func(when string) {
		t.Helper()
		type dims struct{ Scroll, Inner int }
		d := eval[dims](t, tab, `({scroll: document.documentElement.scrollWidth, inner: window.innerWidth})`)
		if d.Scroll > d.Inner {
			t.Errorf("%s: the page is %d px wide in a window of %d px", when, d.Scroll, d.Inner)
		}
	}
	width("the lists")
	eval[chromedp.Void](t, tab, fmt.Sprintf(`document.querySelector(".card.queue .lookup input").value = %q`, id))
	click(t, tab, ".card.queue .lookup button")
	waitFor(t, tab, "the job's card", `document.querySelector(".card.queue .job .state")?.textContent === "failed"`)
	width("the job's card")
	click(t, tab, `.card.queue .job button[data-action="retry"]`)
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	width("the confirmation")
	type box struct{ Right, Inner int }
	if b := eval[box](t, tab, `({right: Math.ceil(document.querySelector("#confirm").getBoundingClientRect().right), inner: window.innerWidth})`); b.Right > b.Inner {
		t.Errorf("the confirmation reaches %d px in a window of %d px", b.Right, b.Inner)
	}
	click(t, tab, `#confirm-ok`)
	waitFor(t, tab, "the toast", `!document.querySelector("#toast").hidden`)
	width("the toast")
	if b := eval[box](t, tab, `({right: Math.ceil(document.querySelector("#toast").getBoundingClientRect().right), inner: window.innerWidth})`); b.Right > b.Inner {
		t.Errorf("the toast reaches %d px in a window of %d px", b.Right, b.Inner)
	}
}

// The lists redraw in place: a keyboard user's focus stays on the button
// it was on when the lists follow the queue, and when the row it was on
// leaves (its job retried by that very button) it goes to the row that
// takes its place, never to the page's body.
func TestUIBrowserListsKeepFocus(t *testing.T) {
	tab := newTab(t, 1280, 900)
	fq := newFakeQueue()
	fq.jobs["failed-2"] = native.StoredJob{ID: "failed-2", State: native.StateFailed, Attempts: 5, MaxAttempts: 5, LastError: "smtp: 421 try later", FinishedAt: time.Now().Add(-time.Minute)}
	page := serveFake(t, fq)
	do(t, tab, chromedp.Navigate(page+"#queues"))
	row := func(id string) string {
		return `:is([data-list="delayed"], [data-list="failed"]) li[data-job="` + id + `"]`
	}
	waitFor(t, tab, "the lists", `!!document.querySelector('`+row("failed-1")+`') && !!document.querySelector('`+row("failed-2")+`')`)
	eval[chromedp.Void](t, tab, `(() => { const b = document.querySelector('`+row("failed-1")+` button[data-action="retry"]'); b.focus(); b.dataset.marked = "yes"; })()`)

	// The queue changes: both lists redraw.
	fq.mu.Lock()
	fq.jobs["delayed-3"] = native.StoredJob{ID: "delayed-3", State: native.StateDelayed, NextFireAt: time.Now().Add(time.Minute)}
	fq.mu.Unlock()
	waitFor(t, tab, "the new delayed job", `!!document.querySelector('`+row("delayed-3")+`')`)
	time.Sleep(300 * time.Millisecond) // the failed list's redraw lands too
	if got := eval[string](t, tab, `document.activeElement.dataset.marked + " " + document.activeElement.dataset.action + " " + document.activeElement.closest("li")?.dataset.job`); got != "yes retry failed-1" {
		t.Errorf("after the lists redrew, the focus is on %q (%s), want the same retry button of failed-1", got, eval[string](t, tab, `document.activeElement.tagName`))
	}

	// Retry failed-1 with the keyboard: Enter on its button, Enter on the
	// confirmation. Its row goes; the focus moves to failed-2's button.
	do(t, tab, chromedp.KeyEvent(kb.Enter))
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	do(t, tab, chromedp.KeyEvent(kb.Enter))
	waitFor(t, tab, "failed-1 to leave", `!document.querySelector('`+row("failed-1")+`')`)
	waitFor(t, tab, "the focus to land on a row", `document.activeElement !== document.body`)
	if got := eval[string](t, tab, `document.activeElement.dataset.action + " " + document.activeElement.closest("li")?.dataset.job`); got != "retry failed-2" {
		t.Errorf("after the retried row left, the focus is on %q, want failed-2's retry button", got)
	}
	if got, want := fq.Calls(), []string{"retry failed-1"}; !slices.Equal(got, want) {
		t.Errorf("queue saw %v, want %v", got, want)
	}
}
