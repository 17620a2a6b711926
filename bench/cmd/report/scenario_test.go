package main

import (
	"strings"
	"testing"
)

const latenessSample = `BenchmarkNativeRetryLateness/idle-2    	       1	 900000000 ns/op	         0 early	      60.0 late-max-ms	       5.0 late-p50-ms	      52.0 late-p99-ms
=== RUN   BenchmarkLateness/asynq/100ms-round/idle
BenchmarkLateness/asynq/100ms-round/idle-2 	       1	 900000000 ns/op	         0 early	      1099 late-max-ms	       641.7 late-p50-ms	      1098 late-p99-ms
=== RUN   BenchmarkLateness/river/default/idle
    river_engine_test.go:40: PostgreSQL at 127.0.0.1:5432/test does not answer
--- SKIP: BenchmarkLateness/river/default/idle
PASS
`

func latenessScenario(t *testing.T) scenario {
	t.Helper()
	for _, s := range scenarios {
		if s.anchor == "lateness" {
			return s
		}
	}
	t.Fatal("no lateness scenario")
	return scenario{}
}

func TestRowNames(t *testing.T) {
	s := latenessScenario(t)
	for name, want := range map[string]string{
		"BenchmarkNativeRetryLateness/idle":         "native/idle",
		"BenchmarkLateness/asynq/100ms-round/idle":  "asynq/100ms-round/idle",
		"BenchmarkLateness/river/poll-50ms/quiet":   "river/poll-50ms/quiet",
		"BenchmarkSomethingElse/x":                  "SomethingElse/x",
		"BenchmarkLatenessOther/asynq/default/idle": "LatenessOther/asynq/default/idle",
	} {
		if got := s.rowName(name); got != want {
			t.Errorf("rowName(%q) = %q, want %q", name, got, want)
		}
	}
	// Without rows, the first benchmark's rows drop its name and the
	// others keep theirs.
	plain := scenario{benches: []string{"BenchmarkThroughput", "BenchmarkOther"}}
	if got := plain.rowName("BenchmarkThroughput/river"); got != "river" {
		t.Errorf("main row %q, want river", got)
	}
	if got := plain.rowName("BenchmarkOther/x"); got != "Other/x" {
		t.Errorf("other row %q, want Other/x", got)
	}
}

func TestLatenessSectionRowsAndSkips(t *testing.T) {
	r := &report{results: newResults()}
	r.init()
	if err := r.results.parse(strings.NewReader(latenessSample)); err != nil {
		t.Fatal(err)
	}
	var m md
	r.writeScenario(&m, latenessScenario(t))
	out := m.String()
	native := strings.Index(out, `<a id="lateness-native-idle"></a>native/idle | 5 |`)
	asynq := strings.Index(out, `<a id="lateness-asynq-100ms-round-idle"></a>asynq/100ms-round/idle | 642 |`)
	if native < 0 || asynq < 0 {
		t.Fatalf("rows missing or misnamed:\n%s", out)
	}
	if native > asynq {
		t.Errorf("native row after the asynq row, want the order of benches:\n%s", out)
	}
	if !strings.Contains(out, "BenchmarkLateness/river/default/idle: PostgreSQL at 127.0.0.1:5432/test does not answer") {
		t.Errorf("the second benchmark's skip reason is missing:\n%s", out)
	}
}

const throughputSample = `BenchmarkThroughput/c20/native-2 	1	 900000000 ns/op	      9000 jobs/s	        30 redis-us/job
BenchmarkThroughput/c20/asynq-2  	1	 900000000 ns/op	      3000 jobs/s	        60 redis-us/job
BenchmarkThroughput/c20/bullmq-2 	1	 900000000 ns/op	      2000 jobs/s	       120 redis-us/job
BenchmarkThroughput/c20-50ms/native-2 	1	 900000000 ns/op	      6000 jobs/s	        70 redis-us/job
BenchmarkThroughput/c20-50ms/asynq-2  	1	 900000000 ns/op	      3000 jobs/s	        60 redis-us/job
=== RUN   BenchmarkThroughput/c20-50ms/bullmq
    bullmq_peer_test.go:60: BullMQ not measured: node is not installed
--- SKIP: BenchmarkThroughput/c20-50ms/bullmq
=== RUN   BenchmarkThroughput/c100-50ms/bullmq
    bullmq_peer_test.go:60: BullMQ not measured: node is not installed
--- SKIP: BenchmarkThroughput/c100-50ms/bullmq
PASS
`

func scenarioNamed(t *testing.T, anchor string) scenario {
	t.Helper()
	for _, s := range scenarios {
		if s.anchor == anchor {
			return s
		}
	}
	t.Fatalf("no %s scenario", anchor)
	return scenario{}
}

func TestThroughputRatiosAgainstEveryPeer(t *testing.T) {
	r := &report{results: newResults()}
	r.init()
	if err := r.results.parse(strings.NewReader(throughputSample)); err != nil {
		t.Fatal(err)
	}
	var m md
	r.writeScenario(&m, scenarioNamed(t, "throughput"))
	out := m.String()
	for _, want := range []string{
		"| run | jobs/s | redis-us/job | ÷ asynq | ÷ bullmq | redis ÷ asynq | runs |",
		`<a id="throughput-c20-native"></a>c20/native | 9000 | 30 | 3.00× | 4.50× | 0.50× | 1 |`,
		`<a id="throughput-c20-bullmq"></a>c20/bullmq | 2000 | 120 | 0.67× | — | 2.00× | 1 |`,
		// No BullMQ row at 50ms: its cells are empty, not borrowed from 0s.
		`<a id="throughput-c20-50ms-native"></a>c20-50ms/native | 6000 | 70 | 2.00× | — | 1.17× | 1 |`,
		// One line for the reason all the skipped rows share.
		"Not measured in this run: BenchmarkThroughput/c100-50ms/bullmq, BenchmarkThroughput/c20-50ms/bullmq: BullMQ not measured: node is not installed.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q\n%s", want, out)
		}
	}
	// native spends more Redis CPU than asynq at 50ms: listed, and only that.
	if len(r.slower) != 1 || !strings.Contains(r.slower[0], "[throughput, c20-50ms](#throughput-c20-50ms-native): native 70 redis-us/job vs asynq 60 (1.17×)") {
		t.Errorf("slower rows %q, want the 50ms Redis CPU one", r.slower)
	}
}

func TestRatioColumnWithoutItsPeerIsLeftOut(t *testing.T) {
	r := &report{results: newResults()}
	r.init()
	sample := `BenchmarkEnqueue/native-2 	1	 900000000 ns/op	      40000 jobs/s	        20 redis-us/job
BenchmarkEnqueue/asynq-2 	1	 900000000 ns/op	      50000 jobs/s	        10 redis-us/job
BenchmarkEnqueue/native-bulk-2 	1	 900000000 ns/op	      150000 jobs/s	        4 redis-us/job
`
	if err := r.results.parse(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	var m md
	r.writeScenario(&m, scenarioNamed(t, "enqueue"))
	out := m.String()
	for _, want := range []string{
		"| run | jobs/s | redis-us/job | ÷ asynq | redis ÷ asynq | runs |",
		`<a id="enqueue-native-bulk"></a>native-bulk | 150000 | 4 | 3.00× | 0.40× | 1 |`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q\n%s", want, out)
		}
	}
	// native single enqueue is slower and costlier than asynq; the bulk
	// row, a variant of native, is neither.
	if len(r.slower) != 2 || !strings.Contains(r.slower[0], "[enqueue](#enqueue-native): native 40000 jobs/s vs asynq 50000 (0.80×)") {
		t.Errorf("slower rows %q, want native's two", r.slower)
	}
}

func TestOnlySelectsSections(t *testing.T) {
	want, err := parseOnly("core, enqueue")
	if err != nil {
		t.Fatal(err)
	}
	if !want("core") || !want("enqueue") || want("throughput") || want("scenarios") {
		t.Error("-only core,enqueue selects the wrong sections")
	}
	if _, err := parseOnly("core,bulk"); err == nil || !strings.Contains(err.Error(), `unknown section "bulk"`) {
		t.Errorf("unknown section: err %v", err)
	}
	all, _ := parseOnly("")
	if !all("memory") {
		t.Error("no -only must select everything")
	}
}

func TestUnselectedScenarioIsNotMeasured(t *testing.T) {
	r := &report{results: newResults()}
	r.init()
	r.notRun["memory"] = "not selected with -only"
	var m md
	r.writeScenario(&m, scenarioNamed(t, "memory"))
	if !strings.Contains(m.String(), "**not measured**: not selected with -only") {
		t.Errorf("section:\n%s", m.String())
	}
}
