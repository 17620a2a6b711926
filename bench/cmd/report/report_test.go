package main

import (
	"strings"
	"testing"

	"github.com/rebound-go/rebound/bench/outage"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/rebound-go/rebound/bench
BenchmarkDelay/fixed/rebound-2         	 5000000	        20.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkDelay/fixed/rebound-2         	 5000000	        30.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkDelay/fixed/rebound-2         	 5000000	        10.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkDelay/fixed/cenkalti-2        	 5000000	        10.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkDelay/exponential/rebound-2   	 5000000	        10.00 ns/op	       0 B/op	       0 allocs/op
BenchmarkDelay/exponential/cenkalti-2  	 5000000	        40.00 ns/op	      16 B/op	       1 allocs/op
BenchmarkInstructions/proportional/rebound-keyed	1	136.0 instr/op
BenchmarkInstructions/proportional/cenkalti	1	124.0 instr/op
BenchmarkInstructions/exponential/rebound	1	50.0 instr/op
BenchmarkInstructions/exponential/go-retry	1	52.0 instr/op
=== RUN   BenchmarkMemory/native
--- SKIP: BenchmarkMemory/native
    memory_test.go:40: Redis at 127.0.0.1:6379 does not answer
BenchmarkThroughput/native-2           	       1	 900000000 ns/op	      1500 jobs/s
BenchmarkThroughput/asynq-2            	       1	 900000000 ns/op	      1000 jobs/s
=== RUN   BenchmarkThroughput/river
    throughput_test.go:37: River is not measured yet
--- SKIP: BenchmarkThroughput/river
PASS
`

func parsed(t *testing.T) *results {
	t.Helper()
	r := newResults()
	if err := r.parse(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseMediansAndUnits(t *testing.T) {
	r := parsed(t)
	b := r.benches["BenchmarkDelay/fixed/rebound"]
	if b == nil {
		t.Fatalf("no fixed/rebound among %v", r.order)
	}
	if got, _ := b.Median("ns/op"); got != 20 {
		t.Errorf("median of 20, 30, 10 = %v, want 20", got)
	}
	if b.Runs() != 3 {
		t.Errorf("%d runs, want 3", b.Runs())
	}
	if got, _ := r.benches["BenchmarkDelay/exponential/cenkalti"].Median("allocs/op"); got != 1 {
		t.Errorf("allocs/op %v, want 1", got)
	}
	if got, _ := r.benches["BenchmarkThroughput/native"].Median("jobs/s"); got != 1500 {
		t.Errorf("custom metric jobs/s %v, want 1500", got)
	}
	if _, ok := (&bench{Samples: map[string][]float64{}}).Median("ns/op"); ok {
		t.Error("a median of nothing")
	}
	reasons := r.skipReasons("BenchmarkMemory")
	if len(reasons) != 1 || !strings.Contains(reasons[0], "does not answer") {
		t.Errorf("skip reasons %q, want the Redis one", reasons)
	}
}

func TestReportRatiosAndSlowerRows(t *testing.T) {
	rep := &report{results: parsed(t), command: "go run ./bench/cmd/report"}
	rep.init()
	rep.notRun["contention"] = "not selected"
	var out strings.Builder
	rep.write(&out)
	md := out.String()
	for _, want := range []string{
		`<a id="core-exponential-cenkalti"></a>exponential | cenkalti | 40 | 40–40 | 1 | 16 | 4.00× |`,
		"cenkalti is faster at 10 ns/op (rebound 2.00× its time)",
		`<a id="throughput-native"></a>native | 1500 | 1.50× |`,
		"**not measured**: skipped: BenchmarkMemory/native: Redis at 127.0.0.1:6379 does not answer",
		"**not measured**: no BenchmarkHerd benchmark exists",
		"Not measured in this run: BenchmarkThroughput/river: River is not measured yet.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q\n%s", want, md)
		}
	}
	if strings.Contains(md, "- [throughput") {
		t.Error("native beats asynq in the sample, yet it is listed as slower")
	}
}

func TestShellQuote(t *testing.T) {
	got := shellJoin([]string{"go", "test", "-run", "^$", "-bench", "^(A|B)$"})
	if want := `go test -run '^$' -bench '^(A|B)$'`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestOutageSectionHasNoFormatErrors renders the outage section of a run
// and checks that no text went through a format verb by mistake (a bare %
// in an intro line once printed "2%!o(MISSING)f").
func TestOutageSectionHasNoFormatErrors(t *testing.T) {
	rep := &report{results: parsed(t), command: "go run ./bench/cmd/report"}
	rep.init()
	rep.outage = &outage.Report{}
	var m md
	rep.writeOutage(&m)
	text := m.String()
	if !strings.Contains(text, "at most 2% of plain") {
		t.Errorf("outage intro lacks its target in words:\n%s", text)
	}
	if strings.Contains(text, "%!") {
		t.Errorf("outage section has a format error:\n%s", text)
	}
}

// TestInstructionsSection: the callgrind counts get their own table, with
// the ratio to rebound's row, and a peer with fewer instructions than a
// rebound row is listed where rebound is slower; one with more is not.
func TestInstructionsSection(t *testing.T) {
	rep := &report{results: parsed(t)}
	var out strings.Builder
	rep.write(&out)
	text := out.String()
	for _, want := range []string{
		`<a id="core-instructions-proportional-cenkalti"></a>proportional | cenkalti | 124 | 0.91× |`,
		`<a id="core-instructions-exponential-go-retry"></a>exponential | go-retry | 52 | 1.04× |`,
		"[core instructions, proportional](#core-instructions-proportional-rebound-keyed): `rebound-keyed` takes 136 instructions per call, cenkalti 124 (rebound 1.10× its count).",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(text, "[core instructions, exponential]") {
		t.Error("exponential, where rebound counts fewer instructions, is listed where rebound is slower")
	}
	rep = &report{results: newResults(), notRun: map[string]string{"core-instructions": "valgrind is not on PATH"}}
	out.Reset()
	rep.write(&out)
	if !strings.Contains(out.String(), "**not measured**: valgrind is not on PATH") {
		t.Error("a run without valgrind does not say why the counts are missing")
	}
}
