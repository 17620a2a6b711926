package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
	"github.com/rebound-go/rebound/internal/ui"
)

// The browser tests drive the page of `rebound ui` in headless Chromium.
// They run wherever Chromium is installed and skip elsewhere, unless
// REBOUND_REQUIRE_BROWSER=1 (CI sets it) makes a missing browser a failure.
// REBOUND_BROWSER names the browser binary when it is not on PATH.
// REBOUND_UPDATE_SCREENSHOT=1 rewrites docs/ui.png, the README's screenshot,
// and docs/ui-job.png, a job's page.

const (
	requireBrowserEnv   = "REBOUND_REQUIRE_BROWSER"
	updateScreenshotEnv = "REBOUND_UPDATE_SCREENSHOT"
)

// findBrowser returns the Chromium binary, or skips t.
func findBrowser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("REBOUND_BROWSER"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(requireBrowserEnv) == "1" {
		t.Fatalf("no Chromium on PATH and %s=1: install it (apt-get install chromium) or set REBOUND_BROWSER", requireBrowserEnv)
	}
	t.Skipf("no Chromium on PATH (apt-get install chromium); set %s=1 to make this a failure", requireBrowserEnv)
	return ""
}

// newTab starts a headless browser for t and returns a context for one tab.
// The test fails if the page logs an error or throws.
func newTab(t *testing.T, width, height int) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(findBrowser(t)),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
		// Nothing may reach for the network: without these Chromium hangs on
		// a closed network.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	start, cancelStart := context.WithTimeout(ctx, 60*time.Second)
	defer cancelStart()
	go func() {
		<-start.Done()
		if errors.Is(start.Err(), context.DeadlineExceeded) {
			cancelTab()
		}
	}()
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("start Chromium: %v", err)
	}
	var (
		mu       sync.Mutex
		problems []string
	)
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	// What the page logs once the test's body has returned is teardown, not
	// the page's fault: the servers a test starts after its tab are closed
	// before the tab (cleanups run last first), and a refresh then in flight
	// fails to fetch. t.Context ends just before the cleanups run.
	body := t.Context()
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if body.Err() != nil {
				continue
			}
			// The page answers a bad policy with 422, which the browser logs.
			expected := m.Source == "network" && strings.Contains(m.Text, "(Unprocessable Entity)")
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !expected {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("page console: %s", p)
		}
	})
	return ctx
}

// within runs actions with a deadline.
func within[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// click clicks the element sel names, once it is visible. The queue view
// redraws its lists on every refresh, so the node found can be replaced
// before the click lands ("Could not find node with given id"); click then
// looks the element up again, a few times, as a user's second click would.
func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	var err error
	for range 5 {
		// Centre the element first: scrolled to the window's edge, the
		// page's sticky header may cover it and take the click.
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = chromedp.Do(cctx, chromedp.WaitVisible(chromedp.CSS(sel)),
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q)?.scrollIntoView({block: "center"})`, sel)),
			chromedp.Click(chromedp.CSS(sel)))
		cancel()
		if err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	if err != nil {
		t.Fatalf("browser: click %s: %v", sel, err)
	}
}

// waitFor polls a JavaScript predicate until it holds; what describes it
// in the failure.
func waitFor(t *testing.T, ctx context.Context, what, predicate string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingInterval(25*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitProgress polls a JavaScript predicate until it holds, as waitFor
// does, for work the page reports as it goes (a scan, a redrive): the
// expression progress reads that report, and each change of it gives the
// wait another 20 s, up to 5 min in all. On a loaded machine the work runs
// slower but still moves; a page that stops moving fails after 20 s as
// waitFor would.
func waitProgress(t *testing.T, ctx context.Context, what, predicate, progress string) {
	t.Helper()
	const idle, most = 20 * time.Second, 5 * time.Minute
	start := time.Now()
	last, moved := "", start
	for {
		if eval[bool](t, ctx, "!!("+predicate+")") {
			return
		}
		now := eval[string](t, ctx, "String("+progress+")")
		if now != last {
			last, moved = now, time.Now()
		}
		if time.Since(moved) > idle || time.Since(start) > most {
			t.Fatalf("waiting for %s: not within %v (the page's progress %q unchanged for %v)", what, time.Since(start).Round(time.Millisecond), last, time.Since(moved).Round(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// typeInto replaces the text of the input sel by typing text, key by key.
func typeInto(t *testing.T, ctx context.Context, sel, text string) {
	t.Helper()
	eval[chromedp.Void](t, ctx, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = ""; e.focus(); })()`, sel))
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(sel), text))
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return within(t, ctx, chromedp.Evaluate[T](expr))
}

// startUI runs `rebound ui args...` until the test ends and returns the
// address it prints.
func startUI(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan int, 1)
	var stdout, stderr bytes.Buffer
	go func() {
		done <- serveUI(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), &stdout, &stderr, func(u string) { urls <- u })
	}()
	select {
	case u := <-urls:
		t.Cleanup(func() {
			cancel()
			if code := <-done; code != exitOK {
				t.Errorf("rebound ui exited %d: %s", code, stderr.String())
			}
		})
		return u
	case code := <-done:
		cancel()
		t.Fatalf("rebound ui exited %d before serving: %s", code, stderr.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("rebound ui did not start serving in 30s")
	}
	return ""
}

// fromOf returns the -from time of a command line the page shows.
func fromOf(t *testing.T, cmd string) string {
	t.Helper()
	f := strings.Fields(cmd)
	i := slices.Index(f, "-from")
	if i < 0 || i+1 >= len(f) {
		t.Fatalf("command %q has no -from", cmd)
	}
	return f[i+1]
}

func TestUIBrowserCurve(t *testing.T) {
	page := startUI(t)
	tab := newTab(t, 1280, 900)
	q := url.Values{"policy": {"jitter(exponential(100ms, 2s))"}, "attempts": {"6"}, "key": {"job-42"}}
	do(t, tab, chromedp.Navigate(page+"?"+q.Encode()))
	waitFor(t, tab, "the schedule's five rows", `document.querySelectorAll("#plan-table tbody tr[data-attempt]").length === 5`)

	// Move the base slider one notch with the keyboard: 100ms -> 150ms.
	do(t, tab, chromedp.Focus(chromedp.CSS("#base-range")), chromedp.KeyEvent(kb.ArrowRight))
	const moved = "jitter(exponential(150ms, 2s))"
	waitFor(t, tab, "the text form to follow the slider", `document.querySelector("#policy").value === "`+moved+`"`)
	waitFor(t, tab, "the timeline to follow the slider",
		`document.querySelector("#plan-cmd").textContent.includes("`+moved+`")`)
	if v := eval[string](t, tab, `document.querySelector("#base-text").value`); v != "150ms" {
		t.Errorf("base input shows %q after the slider moved, want 150ms", v)
	}
	if v := eval[string](t, tab, `document.querySelector("#base-range").getAttribute("aria-valuetext")`); v != "150ms" {
		t.Errorf("slider's aria-valuetext = %q, want 150ms", v)
	}

	// The fire times plotted are the core's, to the nanosecond.
	steps := backoff.Schedule(backoff.Must(backoff.Parse(moved)), backoff.Key("job-42"), 5)
	fires := eval[[]string](t, tab, `[...document.querySelectorAll("#timeline g.step")].map(g => g.dataset.fireNs)`)
	delays := eval[[]string](t, tab, `[...document.querySelectorAll("#timeline g.step")].map(g => g.dataset.delayNs)`)
	if len(fires) != len(steps) {
		t.Fatalf("timeline plots %d retries, want %d", len(fires), len(steps))
	}
	for i, s := range steps {
		if fires[i] != strconv.FormatInt(int64(s.Total), 10) || delays[i] != strconv.FormatInt(int64(s.Delay), 10) {
			t.Errorf("retry %d plotted at %s ns after a %s ns wait, want the core's %d after %d", s.Attempt, fires[i], delays[i], s.Total, s.Delay)
		}
	}

	// The table is what rebound plan prints for the same policy, key and
	// first failure.
	cmd := eval[string](t, tab, `document.querySelector("#plan-cmd").textContent`)
	wantCmd := "rebound plan '" + moved + "' -n 5 -key job-42 -from "
	if !strings.HasPrefix(cmd, wantCmd) {
		t.Errorf("page's command = %q, want it to start %q", cmd, wantCmd)
	}
	cli := cliPlanRows(t, moved, "-n", "5", "-key", "job-42", "-from", fromOf(t, cmd))
	rows := eval[[][]string](t, tab, `[...document.querySelectorAll("#plan-table tbody tr")].map(tr => [...tr.cells].map(td => td.textContent))`)
	if len(rows) != len(cli) {
		t.Fatalf("page tables %d rows, rebound plan %d", len(rows), len(cli))
	}
	for i, r := range rows {
		if got := strings.Join(r, " "); !strings.HasPrefix(cli[i]+" ", got+" ") {
			t.Errorf("row %d: page %q, rebound plan %q", i+1, got, cli[i])
		}
	}
	// The readout's last fire time is the table's total.
	if got, want := eval[string](t, tab, `document.querySelectorAll("#readout dd")[2].firstChild.textContent`), "+"+rows[4][2]; got != want {
		t.Errorf("readout says the last retry fires at %q, want %q", got, want)
	}

	// Typing a duration into the cap's box drives the text form too.
	typeInto(t, tab, "#cap-text", "1s")
	waitFor(t, tab, "the typed cap in the text form", `document.querySelector("#policy").value === "jitter(exponential(150ms, 1s))"`)
	// Switching the jitter keeps the curve.
	click(t, tab, `label[for="jitter-none"]`)
	waitFor(t, tab, "the unjittered policy", `document.querySelector("#policy").value === "exponential(150ms, 1s)"`)
}

func TestUIBrowserPolicyError(t *testing.T) {
	page := startUI(t)
	tab := newTab(t, 1280, 900)
	do(t, tab, chromedp.Navigate(page))
	waitFor(t, tab, "the first schedule", `document.querySelectorAll("#plan-table tbody tr[data-attempt]").length > 0`)

	for _, bad := range []string{
		"jitter(exponential(100ms, 2x))", // a bad duration
		"equal(linear(1s, 1s, 100ms))",   // a cap below the base
		"jitter(exponental(1s, 1m))",     // a misspelt name
	} {
		_, err := backoff.Parse(bad)
		var se *backoff.SyntaxError
		if !errors.As(err, &se) {
			t.Fatalf("Parse(%q) = %v, want a syntax error", bad, err)
		}
		typeInto(t, tab, "#policy", bad)
		waitFor(t, tab, "the error for "+bad, fmt.Sprintf(
			`(() => { const e = document.querySelector("#policy-error"); return !e.hidden && e.dataset.input === %q })()`, bad))
		if got := eval[string](t, tab, `document.querySelector("#policy-error").dataset.offset`); got != strconv.Itoa(se.Offset) {
			t.Errorf("%s: page marks offset %s, want %d", bad, got, se.Offset)
		}

		// The same message and caret as the CLI.
		_, errOut, code := rebound(t, "plan", bad)
		if code != exitUsage {
			t.Fatalf("rebound plan %q: exit %d, want %d", bad, code, exitUsage)
		}
		lines := strings.Split(errOut, "\n")
		wantMsg := strings.TrimPrefix(lines[0], "rebound plan: ")
		wantCaret := strings.TrimPrefix(lines[1], "    ") + "\n" + strings.TrimPrefix(lines[2], "    ") + "\n"
		if got := eval[string](t, tab, `document.querySelector("#policy-error .msg").textContent`); got != wantMsg {
			t.Errorf("%s: page says %q, CLI says %q", bad, got, wantMsg)
		}
		all := eval[string](t, tab, `document.querySelector("#policy-error").textContent`)
		if got := strings.TrimPrefix(all, wantMsg); got != wantCaret {
			t.Errorf("%s: page's caret\n%s\nCLI's\n%s", bad, got, wantCaret)
		}
		if got := eval[string](t, tab, `document.querySelector("#policy").getAttribute("aria-invalid")`); got != "true" {
			t.Errorf("%s: input's aria-invalid = %q, want true", bad, got)
		}
	}

	// Fixing the text clears the error and the charts follow.
	typeInto(t, tab, "#policy", "fixed(250ms)")
	waitFor(t, tab, "the error to clear", `document.querySelector("#policy-error").hidden && document.querySelector("#plan-cmd").textContent.startsWith("rebound plan 'fixed(250ms)'")`)
	if c := eval[bool](t, tab, `document.querySelector("#curve-fixed").checked && document.querySelector("#jitter-none").checked`); !c {
		t.Error("the controls do not show fixed, no jitter for fixed(250ms)")
	}
}

func TestUIBrowserHerd(t *testing.T) {
	page := startUI(t)
	tab := newTab(t, 1280, 900)
	for _, policy := range []string{"exponential(100ms, 2s)", "equal(linear(200ms, 100ms, 1s))"} {
		q := url.Values{"policy": {policy}, "herdAttempt": {"4"}}
		do(t, tab, chromedp.Navigate(page+"?"+q.Encode()))
		waitFor(t, tab, "the herd of "+policy, `document.querySelectorAll("#herd-chart .herd-panel").length === 2 && document.querySelector("#herd-cmd").textContent.includes("`+policy+`")`)
		cmd := eval[string](t, tab, `document.querySelector("#herd-cmd").textContent`)
		if want := "rebound herd '" + policy + "' -attempt 4"; cmd != want {
			t.Errorf("page's command = %q, want %q", cmd, want)
		}
		type panel struct {
			Role   string
			Peak   string
			Counts [][2]int
		}
		panels := eval[[]panel](t, tab, `[...document.querySelectorAll("#herd-chart .herd-panel")].map(p => ({
			role: p.dataset.role, peak: p.dataset.peak,
			counts: [...p.querySelectorAll("rect")].map(r => [+r.dataset.bucket, +r.dataset.count])}))`)
		want, out := cliHerd(t, policy, "-attempt", "4")
		if len(panels) != len(want) {
			t.Fatalf("%s: page draws %d histograms, rebound herd %d", policy, len(panels), len(want))
		}
		for s, p := range panels {
			got := make([]int, len(want[s]))
			for _, bc := range p.Counts {
				if bc[0] < 0 || bc[0] >= len(got) {
					t.Fatalf("%s: bar in bucket %d of %d", policy, bc[0], len(got))
				}
				got[bc[0]] = bc[1]
			}
			if !slices.Equal(got, want[s]) {
				t.Errorf("%s, %s: page's buckets %v, rebound herd's %v", policy, p.Role, got, want[s])
			}
			if !strings.Contains(out, p.Role) {
				t.Errorf("%s: page's series %q is not in rebound herd's output", policy, p.Role)
			}
		}
		verdict := eval[string](t, tab, `document.querySelector("#herd-stats .verdict").textContent`)
		if !strings.Contains(out, "\n"+verdict+"\n") {
			t.Errorf("%s: page's verdict %q is not rebound herd's:\n%s", policy, verdict, out)
		}
		peaks := eval[[]string](t, tab, `[...document.querySelectorAll("#herd-stats .stat dd:first-of-type")].map(d => d.textContent)`)
		for _, pk := range peaks {
			if !strings.Contains(out, pk) {
				t.Errorf("%s: page's peak %q is not in rebound herd's output", policy, pk)
			}
		}
	}
}

func TestUIBrowserQueue(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	tab := newTab(t, 1280, 900)
	ctx := context.Background()
	q, err := native.NewQueue(rdb, "emails", native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	page := startUI(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", "emails", "-prefix", prefix, "-refresh", "250ms")
	do(t, tab, chromedp.Navigate(page))
	count := func(state string) string {
		return `document.querySelector('[data-queue="emails"] [data-count="` + state + `"]')?.textContent`
	}
	waitFor(t, tab, "the empty queue's counts", count("waiting")+` === "0" && `+count("delayed")+` === "0"`)

	if _, err := q.Enqueue(ctx, []byte(`{"to":"ada@example.com"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the waiting job to show", count("waiting")+` === "1"`)
	id, err := q.Enqueue(ctx, []byte("later"), native.WithDelay(time.Hour), native.WithName("digest"))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the delayed job to show", count("delayed")+` === "1" && `+count("waiting")+` === "1"`)

	// Look the delayed job up by its ID.
	do(t, tab,
		chromedp.SendKeys(chromedp.CSS(`[data-queue="emails"] .lookup input`), id),
		chromedp.Click(chromedp.CSS(`[data-queue="emails"] .lookup button`)))
	waitFor(t, tab, "the job's card", `document.querySelector('[data-queue="emails"] .job[data-job="`+id+`"] .state')?.textContent === "delayed"`)
	if txt := eval[string](t, tab, `document.querySelector('[data-queue="emails"] .job').textContent`); !strings.Contains(txt, "digest") || !strings.Contains(txt, "later") {
		t.Errorf("job card lacks the name or payload: %q", txt)
	}
	// The card offers what applies to a delayed job, and only that.
	got := eval[[]string](t, tab, `[...document.querySelectorAll('[data-queue="emails"] .job button[data-action]')].map(b => b.dataset.action)`)
	if !slices.Equal(got, []string{"run", "delete"}) {
		t.Errorf("a delayed job's card offers %q, want run and delete", got)
	}
}

// fakeQueue is a queue with every optional feature, for the page's actions.
type fakeQueue struct {
	mu     sync.Mutex
	jobs   map[string]native.StoredJob
	paused bool
	calls  []string
}

func newFakeQueue() *fakeQueue {
	now := time.Now()
	f := &fakeQueue{jobs: map[string]native.StoredJob{}}
	for i, fire := range []time.Duration{20 * time.Second, 3 * time.Minute} {
		id := fmt.Sprintf("delayed-%d", i+1)
		f.jobs[id] = native.StoredJob{ID: id, State: native.StateDelayed, Attempts: i + 1, NextFireAt: now.Add(fire), LastError: "dial tcp 10.0.0.7:25: connection refused", CreatedAt: now.Add(-time.Minute)}
	}
	f.jobs["failed-1"] = native.StoredJob{ID: "failed-1", State: native.StateFailed, Attempts: 5, MaxAttempts: 5, LastError: "smtp: 550 mailbox unavailable", FinishedAt: now.Add(-2 * time.Minute)}
	return f
}

func (f *fakeQueue) Name() string { return "fake" }

func (f *fakeQueue) Counts(context.Context) (native.Counts, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var c native.Counts
	for _, j := range f.jobs {
		switch j.State {
		case native.StateWaiting:
			c.Waiting++
		case native.StateDelayed:
			c.Delayed++
		case native.StateFailed:
			c.Failed++
		}
	}
	c.Paused = f.paused
	return c, nil
}

func (f *fakeQueue) Job(_ context.Context, id string) (native.StoredJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j, ok := f.jobs[id]
	if !ok {
		return j, native.ErrNotFound
	}
	return j, nil
}

func (f *fakeQueue) Jobs(_ context.Context, st native.State, limit int) ([]native.StoredJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []native.StoredJob
	for _, j := range f.jobs {
		if j.State == st {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b native.StoredJob) int { return a.NextFireAt.Compare(b.NextFireAt) })
	return out[:min(limit, len(out))], nil
}

func (f *fakeQueue) act(call, id string, from, to native.State) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call+" "+id)
	j, ok := f.jobs[id]
	if !ok || j.State != from {
		return native.ErrNotFound
	}
	j.State = to
	f.jobs[id] = j
	return nil
}

func (f *fakeQueue) RetryJob(_ context.Context, id string) error {
	return f.act("retry", id, native.StateFailed, native.StateWaiting)
}

func (f *fakeQueue) RunJobNow(_ context.Context, id string) error {
	return f.act("run", id, native.StateDelayed, native.StateWaiting)
}

func (f *fakeQueue) DeleteJob(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "delete "+id)
	delete(f.jobs, id)
	return nil
}

func (f *fakeQueue) Pause(context.Context) error {
	f.mu.Lock()
	f.paused = true
	f.mu.Unlock()
	return nil
}
func (f *fakeQueue) Resume(context.Context) error {
	f.mu.Lock()
	f.paused = false
	f.mu.Unlock()
	return nil
}
func (f *fakeQueue) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// serveFake serves the page for queues on loopback until the test ends.
func serveFake(t *testing.T, queues ...ui.Queue) string {
	t.Helper()
	srv, err := ui.New(ui.Config{Model: cliModel{}, Queues: queues, Refresh: ui.MinRefresh})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + "/"
}

// TestUIBrowserActions drives the queue actions on a queue that has them,
// each behind its confirmation.
func TestUIBrowserActions(t *testing.T) {
	tab := newTab(t, 1280, 900)
	fq := newFakeQueue()
	page := serveFake(t, fq)
	do(t, tab, chromedp.Navigate(page+"#queues"))
	row := func(id string) string {
		return `:is([data-list="delayed"], [data-list="failed"]) li[data-job="` + id + `"]`
	}
	waitFor(t, tab, "the delayed and failed lists", `document.querySelector('`+row("delayed-1")+`') && document.querySelector('`+row("failed-1")+`')`)

	// Cancelling the confirmation does nothing.
	click(t, tab, row("delayed-1")+` button[data-action="run"]`)
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	if txt := eval[string](t, tab, `document.querySelector("#confirm").textContent`); !strings.Contains(txt, "delayed-1") {
		t.Errorf("confirmation does not name the job: %q", txt)
	}
	click(t, tab, `#confirm button[value="cancel"]`)
	waitFor(t, tab, "the dialog to close", `!document.querySelector("#confirm").open`)
	if c := fq.Calls(); len(c) != 0 {
		t.Fatalf("cancelled action reached the queue: %v", c)
	}

	// Confirming runs it, and the list follows.
	click(t, tab, row("delayed-1")+` button[data-action="run"]`)
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	click(t, tab, `#confirm-ok`)
	waitFor(t, tab, "the job to leave the delayed list", `!document.querySelector('`+row("delayed-1")+`') && document.querySelector('[data-queue="fake"] [data-count="waiting"]')?.textContent === "1"`)

	click(t, tab, row("failed-1")+` button[data-action="retry"]`)
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	click(t, tab, `#confirm-ok`)
	waitFor(t, tab, "the failed job to be retried", `!document.querySelector('`+row("failed-1")+`') && document.querySelector('[data-queue="fake"] [data-count="failed"]')?.textContent === "0"`)

	// Pause, confirmed, shows the queue paused.
	click(t, tab, `[data-queue="fake"] button[data-pause]`)
	waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
	click(t, tab, `#confirm-ok`)
	waitFor(t, tab, "the paused badge", `document.querySelector('[data-queue="fake"] .pill.paused')?.hidden === false`)

	if got, want := fq.Calls(), []string{"run delayed-1", "retry failed-1"}; !slices.Equal(got, want) {
		t.Errorf("queue saw %v, want %v", got, want)
	}
}

// TestUIBrowserActionsNative drives the same actions on a real native
// queue on the real Redis, with a worker running its jobs: a delayed job
// shows in the timeline and "run now", confirmed, makes it run; a failed
// job shows with its error and "retry", confirmed, makes it run again and
// complete; "delete" removes a job; pause and resume reach the queue.
func TestUIBrowserActionsNative(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	ctx := context.Background()
	q, err := native.NewQueue(rdb, "emails", native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	runs := map[string]int{}
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Hour)), 5))
	w, err := native.NewWorker(q, rule, func(_ context.Context, j *native.Job) error {
		mu.Lock()
		runs[j.ID]++
		n := runs[j.ID]
		mu.Unlock()
		if j.Name == "bounce" && n == 1 {
			return backoff.Permanent(errors.New("smtp: 550 5.1.1 mailbox unavailable"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
	later, err := q.Enqueue(ctx, []byte("weekly"), native.WithName("digest"), native.WithDelay(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	gone, err := q.Enqueue(ctx, []byte("never"), native.WithName("digest"), native.WithDelay(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	bounced, err := q.Enqueue(ctx, []byte("ada@example.com"), native.WithName("bounce"))
	if err != nil {
		t.Fatal(err)
	}
	waitJob := func(id string, want native.State) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			j, err := q.Job(ctx, id)
			if err == nil && j.State == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s: %v (%v), want %v", id, j.State, err, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitJob(bounced, native.StateFailed)

	tab := newTab(t, 1280, 900)
	page := startUI(t, "-redis", "redis://"+testenv.RedisAddr(), "-queue", "emails", "-prefix", prefix, "-refresh", "250ms")
	do(t, tab, chromedp.Navigate(page+"#queues"))
	row := func(id string) string {
		return `[data-queue="emails"] :is([data-list="delayed"], [data-list="failed"]) li[data-job="` + id + `"]`
	}
	confirm := func(id, action string) {
		t.Helper()
		click(t, tab, row(id)+` button[data-action="`+action+`"]`)
		waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
		if txt := eval[string](t, tab, `document.querySelector("#confirm").textContent`); !strings.Contains(txt, id) {
			t.Errorf("confirmation does not name job %s: %q", id, txt)
		}
		click(t, tab, `#confirm-ok`)
	}

	// The timeline shows the delayed jobs soonest first; the failed list
	// the bounced job with its error.
	waitFor(t, tab, "the delayed and failed lists", `document.querySelector('`+row(later)+`') && document.querySelector('`+row(bounced)+`')`)
	order := eval[[]string](t, tab, `[...document.querySelectorAll('[data-queue="emails"] [data-list="delayed"] li')].map(li => li.dataset.job)`)
	if !slices.Equal(order, []string{later, gone}) {
		t.Errorf("delayed list %v, want %v, soonest first", order, []string{later, gone})
	}
	if txt := eval[string](t, tab, `document.querySelector('`+row(bounced)+`').textContent`); !strings.Contains(txt, "mailbox unavailable") {
		t.Errorf("failed row lacks the error: %q", txt)
	}

	confirm(later, "run")
	waitFor(t, tab, "the job run now to leave the timeline", `!document.querySelector('`+row(later)+`')`)
	waitJob(later, native.StateCompleted)

	confirm(bounced, "retry")
	waitFor(t, tab, "the retried job to leave the failed list", `!document.querySelector('`+row(bounced)+`')`)
	waitJob(bounced, native.StateCompleted)

	confirm(gone, "delete")
	waitFor(t, tab, "the deleted job to leave the timeline", `!document.querySelector('`+row(gone)+`')`)
	if _, err := q.Job(ctx, gone); !errors.Is(err, native.ErrNotFound) {
		t.Errorf("deleted job: %v, want ErrNotFound", err)
	}
	waitFor(t, tab, "the completed count", `document.querySelector('[data-queue="emails"] [data-count="completed"]')?.textContent === "2"`)

	for _, pause := range []bool{true, false} {
		click(t, tab, `[data-queue="emails"] button[data-pause]`)
		waitFor(t, tab, "the confirmation", `document.querySelector("#confirm").open`)
		click(t, tab, `#confirm-ok`)
		waitFor(t, tab, "the paused badge", fmt.Sprintf(`document.querySelector('[data-queue="emails"] .pill.paused')?.hidden === %v`, !pause))
		if p, err := q.Paused(ctx); p != pause || err != nil {
			t.Errorf("queue paused %v (%v), want %v", p, err, pause)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := map[string]int{later: 1, bounced: 2}; fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Errorf("runs %v, want %v", runs, want)
	}
}

// TestUIBrowserScreenshot saves the page as docs/ui.png shows it: the
// curve, the herd and a native queue with jobs in every state.
func TestUIBrowserScreenshot(t *testing.T) {
	tab := newTab(t, 1280, 900)
	var args []string
	rdb := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr()})
	defer rdb.Close()
	if rdb.Ping(context.Background()).Err() == nil {
		prefix := testenv.Prefix(t, rdb)
		populate(t, rdb, prefix)
		args = []string{"-redis", "redis://" + testenv.RedisAddr(), "-queue", "emails", "-prefix", prefix, "-refresh", "250ms"}
	} else if testenv.RequireServers() {
		t.Fatalf("Redis at %s does not answer", testenv.RedisAddr())
	}
	page := startUI(t, args...)
	q := url.Values{"policy": {"jitter(exponential(100ms, 2s))"}, "attempts": {"6"}, "key": {"job-42"}}
	do(t, tab, chromedp.Navigate(page+"?"+q.Encode()))
	waitFor(t, tab, "the page to draw", `document.querySelectorAll("#herd-chart .herd-panel").length === 2`)
	if len(args) > 0 {
		waitFor(t, tab, "the queue's counts", `(document.querySelector('[data-queue="emails"] [data-count="completed"]')?.textContent ?? "–") !== "–"`)
		waitFor(t, tab, "the timeline and the failed jobs", `document.querySelector('[data-list="delayed"] li[data-job]') && document.querySelector('[data-list="failed"] li[data-job]')`)
	}
	png := within(t, tab, chromedp.FullScreenshot(100))
	name := filepath.Join(t.TempDir(), "ui.png")
	if os.Getenv(updateScreenshotEnv) == "1" {
		name = filepath.Join("..", "..", "docs", "ui.png")
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(name, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", name, len(png))
}

// populate fills a native queue with jobs in every state.
func populate(t *testing.T, rdb *redis.Client, prefix string) {
	t.Helper()
	ctx := context.Background()
	q, err := native.NewQueue(rdb, "emails", native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Parse("jitter(exponential(1m, 1h))")), 5))
	var ran sync.WaitGroup
	w, err := native.NewWorker(q, rule, func(_ context.Context, j *native.Job) error {
		defer ran.Done()
		return sendMail(j.Payload)
	})
	if err != nil {
		t.Fatal(err)
	}
	payloads := []string{"ok", "ok", "ok", "ok", "ok", "ok", "ok", "bounce", "flaky", "flaky", "flaky"}
	ran.Add(len(payloads))
	for _, p := range payloads {
		if _, err := q.Enqueue(ctx, []byte(p), native.WithName("welcome-email")); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	werr := make(chan error, 1)
	go func() { werr <- w.Run(wctx) }()
	ran.Wait()
	cancel()
	if err := <-werr; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := q.Enqueue(ctx, []byte("ok"), native.WithName("welcome-email")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Enqueue(ctx, []byte("ok"), native.WithDelay(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	c, err := q.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(c)
	t.Logf("queue for the screenshot: %s", b)
}
