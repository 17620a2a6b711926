package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/ui"
)

// cliPlanRows runs rebound plan and returns its table rows, whitespace
// collapsed: "1 55.41ms 55.41ms 00:00:00.055 █▏".
func cliPlanRows(t *testing.T, args ...string) []string {
	t.Helper()
	out, errOut, code := rebound(t, append([]string{"plan"}, args...)...)
	if code != exitOK {
		t.Fatalf("rebound plan %q: exit %d: %s", args, code, errOut)
	}
	lines := strings.Split(out, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "attempt  ") })
	var rows []string
	for _, l := range lines[i+1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		rows = append(rows, strings.Join(strings.Fields(l), " "))
	}
	return rows
}

// cliHerd runs rebound herd -ascii and returns each series' bucket counts
// and its summary lines.
func cliHerd(t *testing.T, args ...string) (counts [][]int, out string) {
	t.Helper()
	out, errOut, code := rebound(t, append([]string{"herd", "-ascii"}, args...)...)
	if code != exitOK {
		t.Fatalf("rebound herd %q: exit %d: %s", args, code, errOut)
	}
	lines := strings.Split(out, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "fires after") })
	for _, l := range lines[i+1:] {
		if strings.TrimSpace(l) == "" {
			break
		}
		var row []int
		for _, f := range strings.Fields(l)[1:] {
			if n, err := strconv.Atoi(f); err == nil {
				row = append(row, n)
			}
		}
		for len(counts) < len(row) {
			counts = append(counts, nil)
		}
		for s, n := range row {
			counts[s] = append(counts[s], n)
		}
	}
	return counts, out
}

// uiPolicies are the policies the page and the CLI are compared on: every
// curve, every wrapper, nesting, caps reached early and durations that run
// to days.
var uiPolicies = []string{
	"fixed(250ms)",
	"fixed(0s)",
	"exponential(100ms, 2s)",
	"jitter(exponential(100ms, 2s))",
	"equal(linear(1s, 500ms, 4s))",
	"proportional(0.2, exponential(1s, 1m))",
	"decorrelated(100ms, 10s)",
	"jitter(decorrelated(1s, 1m))",
	"proportional(0.1, jitter(linear(1s, 1s, 30s)))",
	"exponential(1h, 168h)",
}

// TestUIModelMatchesPlan checks that the page's schedule is what rebound
// plan prints for the same policy, key and first failure, and that its
// exact values are the core's.
func TestUIModelMatchesPlan(t *testing.T) {
	from := time.Date(2025, 3, 31, 23, 58, 30, 0, time.FixedZone("", 2*3600))
	for _, policy := range uiPolicies {
		for _, key := range []string{"job-42", "tenant 7/order:99"} {
			c, err := cliModel{}.Curve(ui.Query{Policy: policy, Retries: 12, Key: key, From: from, HerdJobs: 10, HerdAttempt: 1, HerdBuckets: 5})
			if err != nil {
				t.Fatalf("%s: %v", policy, err)
			}
			cli := cliPlanRows(t, policy, "-n", "12", "-key", key, "-from", from.Format(time.RFC3339Nano))
			if len(c.Plan) != len(cli) {
				t.Fatalf("%s: page tables %d rows, rebound plan %d", policy, len(c.Plan), len(cli))
			}
			p := backoff.Must(backoff.Parse(policy))
			steps := backoff.Schedule(p, backoff.Key(key), 12)
			for i, s := range c.Plan {
				row := strings.Join([]string{strconv.Itoa(s.Attempt), s.Delay.Text, s.Total.Text, s.FiresAt}, " ")
				if !strings.HasPrefix(cli[i]+" ", row+" ") {
					t.Errorf("%s key %q row %d: page %q, rebound plan %q", policy, key, i+1, row, cli[i])
				}
				if s.Delay.NS != strconv.FormatInt(int64(steps[i].Delay), 10) || s.Total.NS != strconv.FormatInt(int64(steps[i].Total), 10) {
					t.Errorf("%s row %d: page %s/%s ns, core %d/%d", policy, i+1, s.Delay.NS, s.Total.NS, steps[i].Delay, steps[i].Total)
				}
			}
			if c.Text != p.String() || c.Max.Text != fmtDur(p.Max()) || c.Random != random(p) {
				t.Errorf("%s: text %q, max %q, random %v", policy, c.Text, c.Max.Text, c.Random)
			}
			// The steady schedule is the plan of the policy without its jitter.
			base, removed := unjitter(p)
			if removed != (c.Steady != nil) {
				t.Fatalf("%s: steady schedule given = %v, want %v", policy, c.Steady != nil, removed)
			}
			if removed {
				want := cliPlanRows(t, base.String(), "-n", "12", "-key", key, "-from", from.Format(time.RFC3339Nano))
				for i, s := range c.Steady {
					if row := strings.Join([]string{strconv.Itoa(s.Attempt), s.Delay.Text, s.Total.Text, s.FiresAt}, " "); !strings.HasPrefix(want[i]+" ", row+" ") {
						t.Errorf("%s steady row %d: %q, rebound plan of %s %q", policy, i+1, row, base, want[i])
					}
				}
			}
		}
	}
}

func TestUIModelNoRetries(t *testing.T) {
	c, err := cliModel{}.Curve(ui.Query{Policy: "jitter(fixed(1s))", Retries: 0, HerdJobs: 5, HerdAttempt: 1, HerdBuckets: 3})
	if err != nil || c.Plan != nil || c.Steady != nil || c.Herd.Jobs != 5 {
		t.Errorf("MaxAttempts 1: plan %v, steady %v, herd of %d, err %v; want no schedule and a herd", c.Plan, c.Steady, c.Herd.Jobs, err)
	}
}

// TestUIModelMatchesHerd checks that the page's histograms, peaks and
// verdict are what rebound herd prints.
func TestUIModelMatchesHerd(t *testing.T) {
	for _, policy := range uiPolicies {
		for _, attempt := range []int{1, 3, 9} {
			c, err := cliModel{}.Curve(ui.Query{Policy: policy, Retries: 1, HerdJobs: 1000, HerdAttempt: attempt, HerdBuckets: 20})
			if err != nil {
				t.Fatal(err)
			}
			counts, out := cliHerd(t, policy, "-attempt", strconv.Itoa(attempt))
			h := c.Herd
			if len(h.Series) != len(counts) {
				t.Fatalf("%s: %d series, rebound herd %d", policy, len(h.Series), len(counts))
			}
			for i, s := range h.Series {
				if got := s.Counts; !slices.Equal(got, counts[i]) {
					t.Errorf("%s attempt %d, %s: page %v, rebound herd %v", policy, attempt, s.Role, got, counts[i])
				}
				for _, want := range []string{
					s.Role + " ", s.Policy,
					strconv.Itoa(s.Peak) + " at " + s.PeakWindow,
					s.PeakFactor, s.First.Text + " - " + s.Last.Text,
				} {
					if !strings.Contains(out, want) {
						t.Errorf("%s attempt %d: page's %q is not in rebound herd's output:\n%s", policy, attempt, want, out)
					}
				}
			}
			head := "herd    1000 jobs fail together at attempt " + strconv.Itoa(attempt) + "; job keys \"" + h.FirstKey + "\" .. \"" + h.LastKey + "\"\n"
			mean := h.MeanText + " per bucket: 1000 jobs spread evenly over " + strconv.Itoa(len(h.Edges)-1) + " buckets of " + h.Bucket.Text
			if !strings.HasPrefix(out, head) || !strings.Contains(out, mean) {
				t.Errorf("%s: page's keys or buckets (%q, %q) differ from rebound herd's:\n%s", policy, head, mean, out)
			}
			if h.Verdict != "" && !strings.Contains(out, "\n"+h.Verdict+"\n") || h.Verdict == "" && len(h.Series) == 2 {
				t.Errorf("%s: verdict %q is not rebound herd's:\n%s", policy, h.Verdict, out)
			}
			if h.Note != "" && !strings.Contains(out, "note: "+h.Note) {
				t.Errorf("%s: note %q is not rebound herd's", policy, h.Note)
			}
		}
	}
}

// TestUIModelPolicyError checks that a bad policy is reported with the
// CLI's message and caret.
func TestUIModelPolicyError(t *testing.T) {
	for _, bad := range []string{
		"exponential(100ms, 2x)",
		"exponential(1s, 100ms)",
		"jitter(exponential(1s, 1m)",
		"proportional(1.5, fixed(1s))",
		"fixed(1µs) extra", // the caret counts characters, not bytes
		"",
	} {
		_, err := cliModel{}.Curve(ui.Query{Policy: bad, Retries: 3, HerdJobs: 1, HerdAttempt: 1, HerdBuckets: 1})
		var pe *ui.PolicyError
		if !errors.As(err, &pe) {
			t.Fatalf("%q: error %v, want a *ui.PolicyError", bad, err)
		}
		_, errOut, _ := rebound(t, "plan", bad)
		lines := strings.SplitAfter(errOut, "\n")
		if pe.Message != strings.TrimSuffix(strings.TrimPrefix(lines[0], "rebound plan: "), "\n") {
			t.Errorf("%q: message %q, CLI %q", bad, pe.Message, lines[0])
		}
		if pe.Caret != lines[1]+lines[2] {
			t.Errorf("%q: caret\n%sCLI\n%s%s", bad, pe.Caret, lines[1], lines[2])
		}
		var se *backoff.SyntaxError
		_, perr := backoff.Parse(bad)
		errors.As(perr, &se)
		if pe.Offset != se.Offset || pe.Column != len([]rune(bad[:se.Offset])) || pe.Input != bad {
			t.Errorf("%q: offset %d column %d, want %d and %d", bad, pe.Offset, pe.Column, se.Offset, len([]rune(bad[:se.Offset])))
		}
	}
}

func TestUIBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-addr", "0.0.0.0:0"}, "-addr 0.0.0.0:0 is not a loopback address; the page shows job payloads and errors and can act on queues, so serving it beyond this machine needs -remote"},
		{[]string{"-addr", ":8080"}, "is not a loopback address"},
		{[]string{"-addr", "8080"}, `-addr "8080" is not host:port`},
		{[]string{"-token", "0123456789abcdef"}, "-token is for -remote"},
		{[]string{"-remote", "-token", "short"}, "-token is 5 characters, want at least 16"},
		{[]string{"-queue", "emails"}, "-queue needs -redis URL"},
		{[]string{"-redis", "redis://127.0.0.1:6379"}, "-redis needs at least one -queue NAME"},
		{[]string{"-redis", "http://x", "-queue", "q"}, `-redis "http://x": `},
		{[]string{"-redis", "redis://127.0.0.1:6379", "-queue", ""}, `-queue "": native: queue name is empty`},
		{[]string{"-redis", "redis://127.0.0.1:6379", "-queue", "a", "-prefix", "x{y"}, "contains '{' or '}'"},
		{[]string{"-refresh", "0s"}, "-refresh 0s is below 250ms, the shortest interval"},
		{[]string{"-refresh", "1ns"}, "-refresh 1ns is below 250ms, the shortest interval"},
		{[]string{"-refresh", "-1s"}, "-refresh -1s is below 250ms"},
		{[]string{"-remote", "-token", "ééééééééé"}, "-token is 9 characters, want at least 16"},
		{[]string{"fixed(1s)", "fixed(2s)"}, "want at most one POLICY"},
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := serveUI(context.Background(), tt.args, &out, &errb, func(string) { t.Errorf("%q: served", tt.args) })
		if code != exitUsage || !strings.Contains(errb.String(), tt.want) || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and %q", tt.args, code, out.String(), errb.String(), exitUsage, tt.want)
		}
	}
}

func TestUIBadPolicyShowsCaret(t *testing.T) {
	_, errOut, code := rebound(t, "ui", "exponential(100ms, 2x)")
	want := "rebound ui: invalid policy at offset 19: expected a duration such as 100ms, found \"2x\"\n" +
		"    exponential(100ms, 2x)\n" +
		"                       ^\n"
	if code != exitUsage || !strings.HasPrefix(errOut, want) {
		t.Errorf("exit %d, stderr\n%s\nwant\n%s", code, errOut, want)
	}
}

func TestUIRedisDown(t *testing.T) {
	var out, errb bytes.Buffer
	code := serveUI(context.Background(), []string{"-redis", "redis://127.0.0.1:1", "-queue", "q"}, &out, &errb, nil)
	if code != exitFail || !strings.Contains(errb.String(), "rebound ui: Redis at 127.0.0.1:1 does not answer") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

func TestUIHelpDocumentsEveryFlag(t *testing.T) {
	out, errOut, code := rebound(t, "ui", "-h")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	fs, _ := uiFlags()
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(out, "  -"+f.Name+" ") && !strings.Contains(out, "  -"+f.Name+"\n") {
			t.Errorf("help does not document -%s", f.Name)
		}
	})
	for _, want := range []string{"Usage: rebound ui [POLICY]", "loopback", "-remote", "jitter(P)"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if via, _, _ := rebound(t, "help", "ui"); via != out {
		t.Error("rebound help ui differs from rebound ui -h")
	}
	if list, _, _ := rebound(t, "-h"); !strings.Contains(list, "  ui     ") {
		t.Errorf("rebound -h does not list ui:\n%s", list)
	}
}

// serveCommand runs rebound ui until the test ends and returns the address
// it printed and its output so far.
func serveCommand(t *testing.T, args ...string) (page string, stdout *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout = new(bytes.Buffer)
	var stderr bytes.Buffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() { done <- serveUI(ctx, args, stdout, &stderr, func(u string) { ready <- u }) }()
	select {
	case page = <-ready:
	case code := <-done:
		cancel()
		t.Fatalf("exit %d before serving: %s", code, stderr.String())
	}
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("rebound ui exited %d after its context ended: %s", code, stderr.String())
		}
	})
	return page, stdout
}

func TestUIServes(t *testing.T) {
	page, out := serveCommand(t, "jitter(exponential(100ms, 2s))")
	u, err := url.Parse(page)
	if err != nil || u.Hostname() != "127.0.0.1" || u.Port() == "0" || u.Query().Get("policy") != "jitter(exponential(100ms, 2s))" {
		t.Fatalf("printed address %q, want 127.0.0.1, a real port and the policy", page)
	}
	if !strings.Contains(out.String(), "rebound ui: serving "+page+"\n") {
		t.Errorf("stdout %q does not print the address", out.String())
	}
	res, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `<script src="/app.js" defer></script>`) {
		t.Errorf("GET page = %d", res.StatusCode)
	}
	res, err = http.Get(strings.TrimSuffix(page, "?"+u.RawQuery) + "api/curve?policy=fixed(1s)&attempts=3&from=2025-01-01T00:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Text string
		Plan []struct{ FiresAt string }
	}
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if c.Text != "fixed(1s)" || len(c.Plan) != 2 || c.Plan[1].FiresAt != "00:00:02.000" {
		t.Errorf("curve %+v", c)
	}
}

func TestUIRemoteNeedsToken(t *testing.T) {
	page, out := serveCommand(t, "-remote")
	u, _ := url.Parse(page)
	token := u.Query().Get("token")
	if len(token) < ui.MinTokenLen || !strings.Contains(out.String(), "the page needs its token, "+token) {
		t.Fatalf("address %q and output %q: want a generated token printed", page, out.String())
	}
	bare := *u
	bare.RawQuery = ""
	res, err := http.Get(bare.String())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET without the token = %d, want 401", res.StatusCode)
	}
	jar := &cookieJar{}
	client := &http.Client{Jar: jar}
	res, err = client.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.RawQuery != "" {
		t.Errorf("GET the printed address = %d at %s, want 200 without the token in the address", res.StatusCode, res.Request.URL)
	}

	page, _ = serveCommand(t, "-remote", "-token", "correct-horse-battery-staple")
	if u, _ := url.Parse(page); u.Query().Get("token") != "correct-horse-battery-staple" {
		t.Errorf("address %q does not carry the given token", page)
	}
}

// cookieJar keeps the cookies of one host.
type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, c []*http.Cookie) { j.cookies = append(j.cookies, c...) }
func (j *cookieJar) Cookies(*url.URL) []*http.Cookie         { return j.cookies }
