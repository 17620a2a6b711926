package main

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// A bench is everything one benchmark printed over all -count runs.
type bench struct {
	// Name is the full name without the -GOMAXPROCS suffix, e.g.
	// "BenchmarkDelay/full-jitter/rebound".
	Name string
	// Samples holds every value printed per unit ("ns/op", "allocs/op",
	// "p99-ms", ...), one per run.
	Samples map[string][]float64
}

// Median returns the median of the unit's samples and whether there were any.
func (b *bench) Median(unit string) (float64, bool) {
	if b == nil {
		return 0, false
	}
	v := slices.Clone(b.Samples[unit])
	if len(v) == 0 {
		return 0, false
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2], true
	}
	return (v[n/2-1] + v[n/2]) / 2, true
}

// Runs returns how many times the benchmark printed a result.
func (b *bench) Runs() int { return len(b.Samples["ns/op"]) }

// results is the parsed output of one or more go test runs.
type results struct {
	benches map[string]*bench
	order   []string
	// skipped maps a benchmark to the reason it gave for skipping.
	skipped map[string]string
	// failed lists benchmarks that failed, with their last output line.
	failed map[string]string
}

func newResults() *results {
	return &results{benches: map[string]*bench{}, skipped: map[string]string{}, failed: map[string]string{}}
}

var (
	// BenchmarkName-8   	 1000	  1234 ns/op	  0 B/op ...
	benchLine = regexp.MustCompile(`^(Benchmark\S*?)(?:-(\d+))?\s+(\d+)\s+(.*)$`)
	// --- SKIP: BenchmarkName (or --- FAIL:), reason on the indented lines.
	statusLine = regexp.MustCompile(`^\s*--- (SKIP|FAIL): (Benchmark\S+)`)
	// The "file.go:12: " a t.Log line starts with.
	logPrefix = regexp.MustCompile(`^\s+\S+\.go:\d+: `)
)

// parse reads go test -bench output (with or without -v) into r.
func (r *results) parse(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var status, name, lastLog string
	for sc.Scan() {
		line := sc.Text()
		if m := statusLine.FindStringSubmatch(line); m != nil {
			// With -v the reason is logged before the status line; without
			// it, after.
			status, name = m[1], stripProcs(m[2])
			if status == "SKIP" {
				r.skipped[name] = lastLog
			} else {
				r.failed[name] = lastLog
			}
			lastLog = ""
			continue
		}
		if strings.HasPrefix(line, "=== ") {
			lastLog = ""
		} else if status == "" && logPrefix.MatchString(line) {
			lastLog = strings.TrimSpace(logPrefix.ReplaceAllString(line, ""))
		}
		if status != "" && logPrefix.MatchString(line) {
			msg := logPrefix.ReplaceAllString(line, "")
			if status == "SKIP" {
				r.skipped[name] = strings.TrimSpace(msg)
			} else {
				r.failed[name] = strings.TrimSpace(msg)
			}
			continue
		}
		status = ""
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		fields := strings.Fields(m[4])
		if len(fields) < 2 || len(fields)%2 != 0 {
			continue
		}
		b := r.benches[m[1]]
		if b == nil {
			b = &bench{Name: m[1], Samples: map[string][]float64{}}
			r.benches[m[1]] = b
			r.order = append(r.order, m[1])
		}
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			b.Samples[fields[i+1]] = append(b.Samples[fields[i+1]], v)
		}
	}
	return sc.Err()
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

func stripProcs(name string) string { return procsSuffix.ReplaceAllString(name, "") }

// under returns the benchmarks whose name starts with prefix + "/", in the
// order they ran.
func (r *results) under(prefix string) []*bench {
	var out []*bench
	for _, n := range r.order {
		if strings.HasPrefix(n, prefix+"/") || n == prefix {
			out = append(out, r.benches[n])
		}
	}
	return out
}

// skipReasons returns the distinct reasons benchmarks under prefix gave for
// skipping or failing, in a stable order, each once with the benchmarks
// that gave it ("A, B: reason").
func (r *results) skipReasons(prefix string) []string {
	var whys []string
	names := map[string][]string{}
	for _, m := range []map[string]string{r.skipped, r.failed} {
		keys := make([]string, 0, len(m))
		for n := range m {
			keys = append(keys, n)
		}
		sort.Strings(keys)
		for _, n := range keys {
			if !strings.HasPrefix(n, prefix) {
				continue
			}
			why := m[n]
			if why == "" {
				why = "no reason given"
			}
			if _, failed := r.failed[n]; failed && m[n] == r.failed[n] {
				why = "FAILED: " + why
			}
			if _, seen := names[why]; !seen {
				whys = append(whys, why)
			}
			if !slices.Contains(names[why], n) {
				names[why] = append(names[why], n)
			}
		}
	}
	out := make([]string, len(whys))
	for i, why := range whys {
		out[i] = strings.Join(names[why], ", ") + ": " + why
	}
	return out
}
