package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/chart"
)

const (
	maxHerdJobs    = 1_000_000
	maxHerdBuckets = 200
)

func herdHelp(fs *flag.FlagSet) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprint(w, `Usage: rebound herd POLICY [-jobs 1000] [-attempt 3] [-buckets 20] [-seed S] [-svg FILE] [-width 30] [-ascii]

herd shows a thundering herd: a cohort of jobs that all fail at the same
moment, at the same attempt, and where their retries land. It draws two
histograms of the retries' fire times on one scale, with and without
jitter: if POLICY is wrapped in jitter (jitter, equal or proportional), the
comparison is POLICY with its outermost jitter wrappers removed; if POLICY
has no jitter, the comparison is jitter(POLICY). For each it reports the
peak (the most retries in one bucket) and the mean per bucket.

Job i is keyed backoff.Key("job-i") (or "S/job-i" with -seed S), exactly as
the adapters key a job by its ID, so the output is the same on every run.

Flags:
`)
		printFlags(w, fs)
		fmt.Fprint(w, "\n"+policyHelp)
	}
}

// herdOptions are herd's flags.
type herdOptions struct {
	jobs, attempt, buckets int
	seed, svg              string
	width                  int
	ascii                  bool
}

func herdFlags() (*flag.FlagSet, *herdOptions) {
	fs := newFlagSet("herd")
	o := new(herdOptions)
	fs.IntVar(&o.jobs, "jobs", 1000, "number of jobs in the cohort, 1.."+strconv.Itoa(maxHerdJobs))
	fs.IntVar(&o.attempt, "attempt", 3, "the attempt every job just failed (1-based; the first retry follows attempt 1)")
	fs.IntVar(&o.buckets, "buckets", 20, "most histogram buckets, 1.."+strconv.Itoa(maxHerdBuckets)+"; each bucket is a round duration (1, 2, 2.5 or 5 x 10^k, or 15s, 30s, 1m ...)")
	fs.StringVar(&o.seed, "seed", "", "prefix for the job keys: job i is keyed \"`S`/job-i\" instead of \"job-i\"")
	fs.StringVar(&o.svg, "svg", "", "also write the histograms to `FILE` as an SVG a browser shows; - writes only the SVG, to stdout")
	fs.IntVar(&o.width, "width", 30, "width of the longest bar, in terminal cells")
	fs.BoolVar(&o.ascii, "ascii", false, "draw bars with '#' instead of Unicode blocks")
	return fs, o
}

func runHerd(args []string, stdout, stderr io.Writer) int {
	fs, o := herdFlags()
	text, code, ok := parseCommandLine(fs, herdHelp(fs), args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case o.jobs < 1 || o.jobs > maxHerdJobs:
		return usageError(stderr, fs, "-jobs %d is out of range, want 1..%d jobs", o.jobs, maxHerdJobs)
	case o.attempt < 1:
		return usageError(stderr, fs, "-attempt %d is below 1, want the 1-based number of the attempt that failed", o.attempt)
	case o.buckets < 1 || o.buckets > maxHerdBuckets:
		return usageError(stderr, fs, "-buckets %d is out of range, want 1..%d", o.buckets, maxHerdBuckets)
	case o.width < 1 || o.width > 500:
		return usageError(stderr, fs, "-width %d is out of range, want 1..500 cells", o.width)
	}
	p, ok := parsePolicy("herd", text, stderr)
	if !ok {
		return exitUsage
	}
	h := simulate(p, o.jobs, o.attempt, o.buckets, o.seed)

	if o.svg == "-" {
		if err := h.figure().WriteSVG(stdout); err != nil {
			fmt.Fprintf(stderr, "rebound herd: write SVG: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	h.writeText(stdout, o.width, o.ascii)
	if o.svg != "" {
		if err := writeSVGFile(o.svg, h.figure()); err != nil {
			fmt.Fprintf(stderr, "rebound herd: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(stderr, "rebound herd: wrote %s\n", o.svg)
	}
	return exitOK
}

func writeSVGFile(name string, fig chart.Histogram) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("write SVG: %w", err)
	}
	if err := fig.WriteSVG(f); err != nil {
		f.Close()
		return fmt.Errorf("write SVG %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write SVG %s: %w", name, err)
	}
	return nil
}

// herd is a simulated cohort: every job's retry delay under each policy
// compared, bucketed on one time axis.
type herd struct {
	jobs, attempt int
	firstKey      string
	lastKey       string
	width         time.Duration // bucket width
	buckets       int
	series        []series
	note          string // a caveat about the comparison, or ""
}

// series is one policy's histogram of a herd.
type series struct {
	role   string // "without jitter", "with jitter" or "as given"
	policy backoff.Policy
	counts []int
	peak   int // largest count
	peakAt int // bucket of the first largest count
	first  time.Duration
	last   time.Duration
}

// jobKey is the job ID job i of the cohort is keyed by.
func jobKey(seed string, i int) string {
	if seed == "" {
		return "job-" + strconv.Itoa(i)
	}
	return seed + "/job-" + strconv.Itoa(i)
}

// simulate draws the retry delay of every job of the cohort under p and
// under its comparison (p without jitter, or jitter(p)) and buckets them.
func simulate(p backoff.Policy, jobs, attempt, maxBuckets int, seed string) *herd {
	h := &herd{jobs: jobs, attempt: attempt, firstKey: jobKey(seed, 0), lastKey: jobKey(seed, jobs-1)}
	switch base, removed := unjitter(p); {
	case removed:
		h.series = []series{{role: "without jitter", policy: base}, {role: "with jitter", policy: p}}
		if random(base) {
			h.note = fmt.Sprintf("%s still draws its own randomness once the jitter wrapper is removed.", base)
		}
	case !random(p):
		j, _ := backoff.Jitter(p) // p is not nil: Jitter cannot fail
		h.series = []series{{role: "without jitter", policy: p}, {role: "with jitter", policy: j}}
	default:
		h.series = []series{{role: "as given", policy: p}}
		h.note = fmt.Sprintf("%s draws its own jitter and has no unjittered form to compare with.", p)
	}

	srcs := make([]backoff.Source, jobs)
	for i := range srcs {
		srcs[i] = backoff.Key(jobKey(seed, i))
	}
	delays := make([][]time.Duration, len(h.series))
	var hi time.Duration
	for si, s := range h.series {
		delays[si] = make([]time.Duration, jobs)
		for i, src := range srcs {
			d := backoff.Delay(s.policy, attempt, src)
			delays[si][i] = d
			hi = max(hi, d)
		}
	}

	h.width = niceWidth(hi, maxBuckets)
	// ceil(hi / width), written so that it cannot overflow near the
	// largest Duration.
	h.buckets = int(hi / h.width)
	if hi%h.width != 0 || h.buckets == 0 {
		h.buckets++
	}
	for si := range h.series {
		s := &h.series[si]
		s.counts = make([]int, h.buckets)
		s.first, s.last = delays[si][0], delays[si][0]
		for _, d := range delays[si] {
			// Buckets are [start, end); the last one also holds its end.
			s.counts[min(int(d/h.width), h.buckets-1)]++
			s.first, s.last = min(s.first, d), max(s.last, d)
		}
		for b, c := range s.counts {
			if c > s.peak {
				s.peak, s.peakAt = c, b
			}
		}
	}
	return h
}

// niceWidth returns the smallest round duration (1, 2, 2.5 or 5 times a
// power of ten up to a second; 1s, 2s, 5s, 10s, 15s, 30s, 1m ... 24h above, then 1, 2
// or 5 times a power of ten days) that splits [0, span] into at most n
// buckets.
func niceWidth(span time.Duration, n int) time.Duration {
	raw := span / time.Duration(n)
	if span%time.Duration(n) != 0 {
		raw++
	}
	if raw <= 0 {
		return time.Millisecond
	}
	if raw <= time.Second {
		for m := time.Duration(1); ; m *= 10 {
			for _, w := range []time.Duration{m, 2 * m, 5 * m / 2, 5 * m} {
				if w >= raw {
					return w
				}
			}
		}
	}
	for _, w := range []time.Duration{
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
	} {
		if w >= raw {
			return w
		}
	}
	const day = 24 * time.Hour
	for m := time.Duration(1); m <= 100_000; m *= 10 {
		for _, f := range []time.Duration{1, 2, 5} {
			if f*m > 100_000 {
				break // 200000 days would not fit in a Duration
			}
			if w := f * m * day; w >= raw {
				return w
			}
		}
	}
	return raw // beyond 100000 days: no round width is wanted
}

// edge is the label of the start of bucket b. The end of the last bucket
// can lie past the largest Duration (a width of 10000 days over delays near
// it); it is a whole number of hours then, printed without overflow.
func (h *herd) edge(b int) string {
	if b > 0 && h.width > maxDuration/time.Duration(b) {
		if h.width%time.Hour == 0 {
			return strconv.FormatInt(int64(b)*int64(h.width/time.Hour), 10) + "h"
		}
		return trimDur(maxDuration)
	}
	return trimDur(time.Duration(b) * h.width)
}

func (h *herd) window(b int) string { return h.edge(b) + "-" + h.edge(b+1) }

func (h *herd) mean() float64 { return float64(h.jobs) / float64(h.buckets) }

// meanText prints the mean to at most two decimals: 50, 62.5, 8333.33.
func (h *herd) meanText() string {
	s := strconv.FormatFloat(h.mean(), 'f', 2, 64)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

func (h *herd) writeText(w io.Writer, barWidth int, ascii bool) {
	fmt.Fprintf(w, "herd    %d jobs fail together at attempt %d; job keys %q .. %q\n", h.jobs, h.attempt, h.firstKey, h.lastKey)
	for _, s := range h.series {
		fmt.Fprintf(w, "%-16s%s\n", s.role, s.policy)
	}
	fmt.Fprintln(w)

	// The histograms, side by side on one scale: a row per bucket.
	peak := 0
	for _, s := range h.series {
		peak = max(peak, s.peak)
	}
	countW := len(strconv.Itoa(peak))
	labelW := runeLen("fires after")
	for b := range h.buckets {
		labelW = max(labelW, runeLen(h.window(b)))
	}
	colW := make([]int, len(h.series))
	head := padRight("fires after", labelW)
	for i, s := range h.series {
		colW[i] = max(countW+1+barWidth, runeLen(s.role))
		head += "   " + padRight(s.role, colW[i])
	}
	fmt.Fprintln(w, strings.TrimRight(head, " "))
	for b := range h.buckets {
		line := padRight(h.window(b), labelW)
		for i, s := range h.series {
			cell := padLeft(strconv.Itoa(s.counts[b]), countW) + " " + chart.Bar(float64(s.counts[b]), float64(peak), barWidth, ascii)
			line += "   " + padRight(cell, colW[i])
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintln(w)

	// The figures per series.
	rows := [][]string{{""}, {"peak per bucket"}, {"peak / mean"}, {"earliest - latest"}}
	for _, s := range h.series {
		rows[0] = append(rows[0], s.role)
		rows[1] = append(rows[1], fmt.Sprintf("%d at %s", s.peak, h.window(s.peakAt)))
		rows[2] = append(rows[2], strconv.FormatFloat(float64(s.peak)/h.mean(), 'f', 2, 64)+"x")
		rows[3] = append(rows[3], fmtDur(s.first)+" - "+fmtDur(s.last))
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for c, cell := range r {
			widths[c] = max(widths[c], runeLen(cell))
		}
	}
	for _, r := range rows {
		line := ""
		for c, cell := range r {
			line += padRight(cell, widths[c]+3)
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintf(w, "%s%s per bucket: %d jobs spread evenly over %d buckets of %s\n",
		padRight("mean", widths[0]+3), h.meanText(), h.jobs, h.buckets, trimDur(h.width))
	fmt.Fprintln(w)

	if len(h.series) == 2 {
		without, with := h.series[0], h.series[1]
		switch {
		case with.peak < without.peak:
			fmt.Fprintf(w, "jitter cuts the peak from %d to %d retries per %s, %.1fx lower.\n",
				without.peak, with.peak, trimDur(h.width), float64(without.peak)/float64(with.peak))
		default:
			fmt.Fprintf(w, "jitter does not lower the peak here (%d without, %d with, per %s).\n",
				without.peak, with.peak, trimDur(h.width))
		}
	}
	if h.note != "" {
		fmt.Fprintln(w, "note: "+h.note)
	}
}

// figure is the herd as an SVG histogram figure.
func (h *herd) figure() chart.Histogram {
	fig := chart.Histogram{
		Title:  fmt.Sprintf("%d jobs fail together at attempt %d: where their retries land", h.jobs, h.attempt),
		XLabel: "retry fires after (time since the cohort failed)",
		YLabel: "retries per " + trimDur(h.width),
		Edges:  make([]string, h.buckets+1),
	}
	for b := range fig.Edges {
		fig.Edges[b] = h.edge(b)
	}
	colors := map[string]string{"without jitter": "#c0392b", "with jitter": "#2471a3", "as given": "#2471a3"}
	for _, s := range h.series {
		counts := make([]float64, len(s.counts))
		for i, c := range s.counts {
			counts[i] = float64(c)
		}
		fig.Panels = append(fig.Panels, chart.Panel{
			Title:      fmt.Sprintf("%s: %s (peak %d at %s, mean %s per bucket)", s.role, s.policy, s.peak, h.window(s.peakAt), h.meanText()),
			Counts:     counts,
			Color:      colors[s.role],
			Guide:      h.mean(),
			GuideLabel: "mean " + h.meanText(),
		})
	}
	return fig
}
