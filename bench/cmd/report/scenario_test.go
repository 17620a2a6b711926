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
