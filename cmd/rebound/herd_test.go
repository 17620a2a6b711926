package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rebound-go/rebound/backoff"
)

// histogram parses the side-by-side rows of herd's text output: the bucket
// labels and, per series, the counts.
func histogram(t *testing.T, out string) (labels []string, counts [][]int) {
	t.Helper()
	lines := strings.Split(out, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "fires after") {
			start = i + 1
			break
		}
	}
	if start < 0 {
		t.Fatalf("no histogram in output:\n%s", out)
	}
	for _, l := range lines[start:] {
		if l == "" {
			break
		}
		f := strings.Fields(l)
		labels = append(labels, f[0])
		var row []int
		for _, x := range f[1:] {
			if n, err := strconv.Atoi(x); err == nil {
				row = append(row, n)
			}
		}
		if counts == nil {
			counts = make([][]int, len(row))
		}
		if len(row) != len(counts) {
			t.Fatalf("row %q has %d counts, want %d", l, len(row), len(counts))
		}
		for s, n := range row {
			counts[s] = append(counts[s], n)
		}
	}
	return labels, counts
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

func TestHerdUnjitteredAgainstJitter(t *testing.T) {
	out, errOut, code := rebound(t, "herd", "exponential(100ms, 2s)", "-jobs", "1000", "-attempt", "3")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	golden(t, "herd-exponential.golden", out)

	for _, want := range []string{
		`herd    1000 jobs fail together at attempt 3; job keys "job-0" .. "job-999"` + "\n",
		"without jitter  exponential(100ms, 2s)\n",
		"with jitter     jitter(exponential(100ms, 2s))\n",
		"380ms-400ms   1000 ██████████████████████████████",
		"peak per bucket     1000 at 380ms-400ms",
		"peak / mean         20.00x",
		"earliest - latest   400ms - 400ms",
		"mean                50 per bucket: 1000 jobs spread evenly over 20 buckets of 20ms\n",
		"jitter cuts the peak from 1000 to ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	labels, counts := histogram(t, out)
	if len(labels) != 20 || labels[0] != "0s-20ms" || labels[19] != "380ms-400ms" {
		t.Errorf("buckets %q, want 20 of 20ms from 0s to 400ms", labels)
	}
	if len(counts) != 2 {
		t.Fatalf("%d series, want 2", len(counts))
	}
	for s, c := range counts {
		if sum(c) != 1000 {
			t.Errorf("series %d counts %d jobs, want 1000", s, sum(c))
		}
	}
	// Without jitter the herd is one spike at 4 x 100ms; with full jitter
	// every bucket of [0, 400ms] gets some of it and none gets a spike.
	if counts[0][19] != 1000 {
		t.Errorf("unjittered spike = %d in the last bucket, want all 1000", counts[0][19])
	}
	for b, n := range counts[1] {
		if n == 0 || n > 100 {
			t.Errorf("jittered bucket %s has %d jobs, want a spread of about 50", labels[b], n)
		}
	}
	// The counts are backoff's keyed delays, bucketed: recount them here.
	p := backoff.Must(backoff.Parse("jitter(exponential(100ms, 2s))"))
	want := make([]int, 20)
	for i := range 1000 {
		d := backoff.Delay(p, 3, backoff.Key("job-"+strconv.Itoa(i)))
		want[min(int(d/(20*time.Millisecond)), 19)]++
	}
	for b := range want {
		if counts[1][b] != want[b] {
			t.Errorf("jittered bucket %s = %d, want %d", labels[b], counts[1][b], want[b])
		}
	}
}

// TestHerdJitteredEqualsUnjittered checks the comparison is symmetric: a
// jittered policy is compared with its curve, an unjittered one with its
// jittered self, and both give the same chart.
func TestHerdJitteredEqualsUnjittered(t *testing.T) {
	a, _, _ := rebound(t, "herd", "exponential(100ms, 2s)", "-jobs", "300", "-attempt", "5", "-buckets", "12")
	b, _, _ := rebound(t, "herd", "jitter(exponential(100ms, 2s))", "-jobs", "300", "-attempt", "5", "-buckets", "12")
	if a != b {
		t.Errorf("herd of a policy and of jitter(policy) differ:\n%s\n%s", a, b)
	}
}

func TestHerdUnwrapsNestedJitter(t *testing.T) {
	out, _, code := rebound(t, "herd", "proportional(0.2, equal(linear(1s, 1s, 10s)))", "-jobs", "200", "-attempt", "4", "-buckets", "10")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out, "without jitter  linear(1s, 1s, 10s)\n") {
		t.Errorf("the comparison is not the curve with every outer jitter wrapper removed:\n%s", out)
	}
	if !strings.Contains(out, "earliest - latest   4s - 4s") {
		t.Errorf("unjittered retries do not all land at linear's 4s:\n%s", out)
	}
	_, counts := histogram(t, out)
	if sum(counts[0]) != 200 || sum(counts[1]) != 200 {
		t.Errorf("counts %v do not add up to 200 jobs each", counts)
	}
}

func TestHerdSeed(t *testing.T) {
	args := []string{"herd", "jitter(fixed(1s))", "-jobs", "100", "-buckets", "5"}
	plain, _, _ := rebound(t, args...)
	seeded, _, _ := rebound(t, append(args, "-seed", "run-7")...)
	again, _, _ := rebound(t, append(args, "-seed", "run-7")...)
	if seeded != again {
		t.Error("the same -seed gave different output")
	}
	if !strings.Contains(seeded, `job keys "run-7/job-0" .. "run-7/job-99"`) {
		t.Errorf("seeded keys not shown:\n%s", seeded)
	}
	_, pc := histogram(t, plain)
	_, sc := histogram(t, seeded)
	if slicesEqual(pc[1], sc[1]) {
		t.Errorf("-seed did not change the jittered draw: %v", pc[1])
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestHerdDecorrelatedStandsAlone(t *testing.T) {
	out, _, code := rebound(t, "herd", "decorrelated(100ms, 10s)", "-jobs", "500", "-attempt", "4")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	_, counts := histogram(t, out)
	if len(counts) != 1 || sum(counts[0]) != 500 {
		t.Errorf("want one series of 500 jobs, got %v", counts)
	}
	if !strings.Contains(out, "note: decorrelated(100ms, 10s) draws its own jitter and has no unjittered form to compare with.") {
		t.Errorf("no note on the missing comparison:\n%s", out)
	}
}

func TestHerdZeroDelay(t *testing.T) {
	out, _, code := rebound(t, "herd", "fixed(0s)", "-jobs", "10")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	labels, counts := histogram(t, out)
	if len(labels) != 1 || counts[0][0] != 10 || counts[1][0] != 10 {
		t.Errorf("want one bucket holding all 10 jobs in both series, got %q %v", labels, counts)
	}
	if !strings.Contains(out, "jitter does not lower the peak here") {
		t.Errorf("no honest verdict for a zero delay:\n%s", out)
	}
}

func TestNiceWidth(t *testing.T) {
	tests := []struct {
		span time.Duration
		n    int
		want time.Duration
	}{
		{0, 20, time.Millisecond},
		{400 * time.Millisecond, 20, 20 * time.Millisecond},
		{399 * time.Millisecond, 20, 20 * time.Millisecond},
		{401 * time.Millisecond, 20, 25 * time.Millisecond},
		{time.Second, 4, 250 * time.Millisecond},
		{5, 2, 5},
		{8 * time.Second, 10, time.Second},
		{7 * time.Second, 1, 10 * time.Second},
		{20 * time.Minute, 10, 2 * time.Minute},
		{25 * time.Minute, 10, 5 * time.Minute},
		{48 * time.Hour, 10, 6 * time.Hour},
		{30 * 24 * time.Hour, 10, 5 * 24 * time.Hour},
		{maxDuration, 1, maxDuration},
		{maxDuration, 20, 10000 * 24 * time.Hour},
		{maxDuration, 200, 1000 * 24 * time.Hour},
		{maxDuration, 2, 100000 * 24 * time.Hour},
		{7, 3, 5},
	}
	for _, tt := range tests {
		got := niceWidth(tt.span, tt.n)
		if got != tt.want {
			t.Errorf("niceWidth(%s, %d) = %s, want %s", tt.span, tt.n, got, tt.want)
		}
		if buckets := tt.span/got + min(tt.span%got, 1); int64(buckets) > int64(tt.n) {
			t.Errorf("niceWidth(%s, %d) = %s makes %d buckets", tt.span, tt.n, got, buckets)
		}
	}
}

// svgBars walks an SVG with encoding/xml, failing on any malformation, and
// returns each panel's bar titles ("EDGE–EDGE: COUNT").
func svgBars(t *testing.T, doc []byte) [][]string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var (
		panels  [][]string
		inBar   bool
		inTitle bool
		title   string
		root    xml.Name
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root.Local == "" {
				root = el.Name
			}
			class := ""
			for _, a := range el.Attr {
				if a.Name.Local == "class" {
					class = a.Value
				}
			}
			switch {
			case el.Name.Local == "g" && class == "panel":
				panels = append(panels, nil)
			case el.Name.Local == "rect" && class == "bar":
				inBar, title = true, ""
			case el.Name.Local == "title" && inBar:
				inTitle = true
			}
		case xml.CharData:
			if inTitle {
				title += string(el)
			}
		case xml.EndElement:
			switch {
			case el.Name.Local == "title":
				inTitle = false
			case el.Name.Local == "rect" && inBar:
				panels[len(panels)-1] = append(panels[len(panels)-1], title)
				inBar = false
			}
		}
	}
	if root.Space != "http://www.w3.org/2000/svg" || root.Local != "svg" {
		t.Errorf("root element %v, want svg in the SVG namespace", root)
	}
	return panels
}

func TestHerdSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "herd.svg")
	out, errOut, code := rebound(t, "herd", "jitter(exponential(100ms, 2s))", "-svg", path)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if errOut != "rebound herd: wrote "+path+"\n" {
		t.Errorf("stderr = %q, want the file it wrote", errOut)
	}
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	panels := svgBars(t, doc)
	labels, counts := histogram(t, out)
	if len(panels) != 2 {
		t.Fatalf("%d panels, want 2 (without and with jitter)", len(panels))
	}
	for p, bars := range panels {
		if len(bars) != len(labels) {
			t.Fatalf("panel %d has %d bars, want one per bucket (%d)", p, len(bars), len(labels))
		}
		// The SVG shows the same numbers as the text.
		for b, title := range bars {
			want := strings.Replace(labels[b], "-", "–", 1) + ": " + strconv.Itoa(counts[p][b])
			if title != want {
				t.Errorf("panel %d bar %d = %q, want %q", p, b, title, want)
			}
		}
	}
	if panels[0][19] != "380ms–400ms: 1000" {
		t.Errorf("spike bar = %q, want all 1000 jobs at 380ms–400ms", panels[0][19])
	}
	for _, want := range []string{
		"without jitter: exponential(100ms, 2s) (peak 1000 at 380ms-400ms, mean 50 per bucket)",
		"with jitter: jitter(exponential(100ms, 2s)) (peak ",
		">retries per 20ms</text>",
		">retry fires after (time since the cohort failed)</text>",
		">mean 50</text>",
		">400ms</text>",
	} {
		if !bytes.Contains(doc, []byte(want)) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestHerdSVGToStdout(t *testing.T) {
	out, errOut, code := rebound(t, "herd", "fixed(1s)", "-jobs", "50", "-buckets", "4", "-svg", "-")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out, "<?xml") {
		t.Fatalf("stdout is not only the SVG:\n%.200s", out)
	}
	panels := svgBars(t, []byte(out))
	if len(panels) != 2 || len(panels[0]) != 4 || panels[0][3] != "750ms–1s: 50" {
		t.Errorf("bars %q, want 2 panels of 4 with the fixed spike at 750ms–1s", panels)
	}
}

func TestHerdSVGWriteFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "herd.svg")
	_, errOut, code := rebound(t, "herd", "fixed(1s)", "-jobs", "5", "-svg", path)
	if code != exitFail {
		t.Errorf("exit %d, want %d", code, exitFail)
	}
	if !strings.HasPrefix(errOut, "rebound herd: write SVG: open "+path) {
		t.Errorf("stderr = %q, want the failed path", errOut)
	}
}

func TestUnjitterAndRandom(t *testing.T) {
	tests := []struct {
		policy, base string
		removed      bool
		random       bool
	}{
		{"fixed(1s)", "fixed(1s)", false, false},
		{"linear(1s, 1s, 5s)", "linear(1s, 1s, 5s)", false, false},
		{"decorrelated(1s, 5s)", "decorrelated(1s, 5s)", false, true},
		{"jitter(exponential(1s, 1m))", "exponential(1s, 1m)", true, true},
		{"proportional(0.5, equal(jitter(fixed(2s))))", "fixed(2s)", true, true},
		{"jitter(decorrelated(1s, 5s))", "decorrelated(1s, 5s)", true, true},
	}
	for _, tt := range tests {
		p := backoff.Must(backoff.Parse(tt.policy))
		for _, in := range []backoff.Policy{p, backoff.Spec{Policy: p}} {
			base, removed := unjitter(in)
			if base.String() != tt.base || removed != tt.removed {
				t.Errorf("unjitter(%s) = %s, %v; want %s, %v", in, base, removed, tt.base, tt.removed)
			}
			if random(in) != tt.random {
				t.Errorf("random(%s) = %v, want %v", in, !tt.random, tt.random)
			}
		}
	}
	if random(backoff.Spec{}) {
		t.Error("an empty Spec counts as random")
	}
}

// Example_herd shows a small cohort of a fixed delay against its jittered
// self.
func Example_herd() {
	run([]string{"herd", "fixed(1s)", "-jobs", "40", "-buckets", "4", "-width", "10", "-ascii"}, os.Stdout, os.Stderr)
	// Output:
	// herd    40 jobs fail together at attempt 3; job keys "job-0" .. "job-39"
	// without jitter  fixed(1s)
	// with jitter     jitter(fixed(1s))
	//
	// fires after   without jitter   with jitter
	// 0s-250ms       0               11 ###
	// 250ms-500ms    0               12 ###
	// 500ms-750ms    0                8 ##
	// 750ms-1s      40 ##########     9 ##
	//
	//                     without jitter   with jitter
	// peak per bucket     40 at 750ms-1s   12 at 250ms-500ms
	// peak / mean         4.00x            1.20x
	// earliest - latest   1s - 1s          17.85ms - 944ms
	// mean                10 per bucket: 40 jobs spread evenly over 4 buckets of 250ms
	//
	// jitter cuts the peak from 40 to 12 retries per 250ms, 3.3x lower.
}

func TestHerdMeanText(t *testing.T) {
	tests := []struct {
		jobs, buckets int
		want          string
	}{{1000, 20, "50"}, {500, 8, "62.5"}, {1_000_000, 120, "8333.33"}, {1, 3, "0.33"}}
	for _, tt := range tests {
		if got := (&herd{jobs: tt.jobs, buckets: tt.buckets}).meanText(); got != tt.want {
			t.Errorf("mean of %d jobs over %d buckets = %q, want %q", tt.jobs, tt.buckets, got, tt.want)
		}
	}
}

// labelBounds parses a bucket label "START-END". An END past the largest
// Duration (the top of the last bucket may be) is returned as maxDuration
// with past set.
func labelBounds(t *testing.T, label string) (start, end time.Duration, past bool) {
	t.Helper()
	a, b, ok := strings.Cut(label, "-")
	if !ok {
		t.Fatalf("bucket label %q is not START-END", label)
	}
	start, err := time.ParseDuration(a)
	if err != nil {
		t.Fatalf("bucket label %q: start: %v", label, err)
	}
	end, err = time.ParseDuration(b)
	if err != nil {
		h, herr := strconv.ParseInt(strings.TrimSuffix(b, "h"), 10, 64)
		if !strings.HasSuffix(b, "h") || herr != nil || h <= int64(maxDuration/time.Hour) {
			t.Fatalf("bucket label %q: end: %v", label, err)
		}
		return start, maxDuration, true
	}
	return start, end, false
}

// TestHerdLongestDelays: delays up to the largest Duration, in every policy
// kind and under jitter, give a histogram that makes sense: the buckets
// asked for (not one bucket holding everything), contiguous labels from 0s
// that never go negative, every job counted, and the unjittered spike in
// the last bucket, whose window holds it.
func TestHerdLongestDelays(t *testing.T) {
	const most = "2562047h47m16.854775807s"
	for _, tt := range []struct {
		policy  string
		attempt string
		spike   time.Duration // the unjittered delay
	}{
		{"fixed(2562047h)", "3", 2562047 * time.Hour},
		{"fixed(" + most + ")", "3", maxDuration},
		{"exponential(1ns, " + most + ")", "64", maxDuration},
		{"exponential(" + most + ", " + most + ")", "9223372036854775807", maxDuration},
		{"linear(0s, " + most + ", " + most + ")", "2", maxDuration},
		{"jitter(fixed(" + most + "))", "1", maxDuration},
		{"equal(exponential(1h, " + most + "))", "9223372036854775807", maxDuration},
		{"proportional(1, linear(1s, 1000h, " + most + "))", "5000", maxDuration},
		{"decorrelated(" + most + ", " + most + ")", "7", maxDuration},
	} {
		for _, buckets := range []int{20, 1, 7, 200} {
			name := fmt.Sprintf("%s -attempt %s -buckets %d", tt.policy, tt.attempt, buckets)
			out, errOut, code := rebound(t, "herd", tt.policy, "-jobs", "300", "-attempt", tt.attempt, "-buckets", strconv.Itoa(buckets))
			if code != exitOK || errOut != "" {
				t.Fatalf("%s: exit %d, stderr %q", name, code, errOut)
			}
			labels, counts := histogram(t, out)
			if want := min(buckets, 2); len(labels) < want || len(labels) > buckets {
				t.Errorf("%s: %d buckets, want %d..%d:\n%s", name, len(labels), want, buckets, out)
			}
			prevEnd := time.Duration(0)
			for i, l := range labels {
				start, end, past := labelBounds(t, l)
				if start != prevEnd || end <= start || (past && i != len(labels)-1) {
					t.Fatalf("%s: bucket %d is %q after one ending at %v:\n%s", name, i, l, prevEnd, out)
				}
				prevEnd = end
			}
			if prevEnd < tt.spike {
				t.Errorf("%s: the last bucket ends at %v, before the delay %v", name, prevEnd, tt.spike)
			}
			for s, c := range counts {
				if sum(c) != 300 {
					t.Errorf("%s: series %d counts %d jobs, want 300", name, s, sum(c))
				}
			}
			if strings.HasPrefix(tt.policy, "decorrelated") {
				continue // one series, as given
			}
			// The first series is the unjittered curve: one spike, in the
			// last bucket.
			if c := counts[0]; c[len(c)-1] != 300 {
				t.Errorf("%s: unjittered counts %v, want all 300 in the last bucket", name, c)
			}
			if strings.Contains(out, "over 1 buckets") && buckets > 1 {
				t.Errorf("%s: one bucket for everything:\n%s", name, out)
			}
		}
	}
}
