package main

import (
	"fmt"
	"slices"
	"strings"
)

// A scenario is a section filled from whole-run benchmarks against real
// servers (one queue run per iteration), which report their figures with
// b.ReportMetric. The section shows every custom metric its benchmarks
// print, so a new metric needs no change here.
type scenario struct {
	anchor, title string
	// benches are the top-level benchmark names that feed the section, in
	// the order of its rows.
	benches []string
	// rows maps a benchmark of benches to the prefix its rows are named
	// with in place of its own name (e.g. "native/"). A benchmark without
	// an entry names its rows without its name if it is the first of
	// benches, and with it otherwise.
	rows map[string]string
	// intro says what is measured and how to read it.
	intro []string
	// units orders the metric columns that come first; any other metric
	// follows in the order it was printed.
	units []string
	// ratios add columns comparing each row with a sibling; a column whose
	// sibling ran nowhere in the section is left out.
	ratios []ratio
	// missing says why there is nothing yet when no benchmark exists.
	missing string
	// bullmq is set when the section has BullMQ rows, which need the
	// Node packages of bench/bullmq installed before it runs.
	bullmq bool
}

// ratio compares unit between a row and its sibling named base (the rows
// share everything in their name but the last element).
type ratio struct {
	unit, base, label string
	// rebound names the rows that are rebound's own (that name, or it
	// followed by "-" and a variant, such as native-bulk), whose ratio below
	// 1 (or above, when lowerIsBetter) means rebound is slower.
	rebound       string
	lowerIsBetter bool
}

// isRow reports whether leaf, the last element of a row's name, names one
// of the rows of engine: engine itself or a variant of it (engine-...).
func isRow(leaf, engine string) bool {
	return leaf == engine || strings.HasPrefix(leaf, engine+"-")
}

var scenarios = []scenario{
	{
		anchor: "lateness", title: "Retry lateness",
		benches: []string{"BenchmarkNativeRetryLateness", "BenchmarkLateness"},
		rows:    map[string]string{"BenchmarkNativeRetryLateness": "native/", "BenchmarkLateness": ""},
		intro: []string{
			"How late each retry starts after its computed fire time (end of the failed attempt + the",
			"delay), on real servers, under one policy for every engine: `fixed(100ms)`, MaxAttempts 2,",
			"every job failing its first attempt and succeeding on its retry, 32 workers. p50, p99 and",
			"max in ms, and how many retries started **early** (rebound's rule: always 0).",
			"`idle`: 200 jobs whose first runs are spread over 2 s (a few in flight at a time);",
			"`inflight-10k`: 10,000 jobs spread over 5 s (2k arrivals/s, up to 10k in the queue). The",
			"native queue gets its jobs as delayed jobs; asynq and River from a producer on the same",
			"schedule (their own scheduled-job paths would bunch them: whole seconds, a 5 s scheduler).",
			"**asynq** runs through `reboundasynq` (RetryDelay + Middleware) on a private redis-server",
			"with its default intervals (`DelayedTaskCheckInterval` 5 s, `TaskCheckInterval` 1 s) or",
			"both at `100ms`; `round` rounds each fire time up to the whole second asynq stores (the",
			"cost of never firing early), `precise` (`WithPrecise`) holds an early delivery until its",
			"exact time. **River** runs through `reboundriver` on PostgreSQL with its defaults",
			"(`FetchPollInterval` 1 s, `FetchCooldown` 100 ms) or `poll-50ms` (both 50 ms). River's",
			"fetcher also wakes on inserts (at most once per `FetchCooldown`), so while jobs arrive its",
			"retries do not wait for the poll; `quiet` (8 batches of 16 jobs 1.13 s apart, nothing else)",
			"shows a queue that receives nothing. River fetches at most one batch of free workers per",
			"`FetchCooldown`: 32 workers take at most 320 runs/s by default, 640 at 50 ms, so under",
			"`inflight-10k` (4k runs/s offered) its figures are the backlog, not its retry timing.",
			"**BullMQ** (Node, `bench/bullmq`, versions pinned by its lock file) runs on a private",
			"redis-server with `attempts: 2, backoff: {type: 'fixed', delay: 100}` and one Worker of",
			"concurrency 32, its jobs added on the same schedule (one `addBulk` per 5 ms tick); it",
			"computes a retry's fire time from the whole-millisecond `Date.now()`, so a retry can start",
			"up to a millisecond before its time (**early**). It runs fewer attempts per second than the",
			"others (see [throughput](#throughput)): where `inflight-10k` offers more than it runs, its",
			"figures there are its backlog, as River's are.",
		},
		units:   []string{"late-p50-ms", "late-p99-ms", "late-max-ms", "early"},
		missing: "no lateness benchmark (BenchmarkNativeRetryLateness or BenchmarkLateness/<engine>/<config>/<load>) exists in ./bench yet",
		bullmq:  true,
	},
	{
		anchor: "throughput", title: "Throughput",
		benches: []string{"BenchmarkThroughput"},
		intro: []string{
			"Jobs per second end to end where every job fails once and succeeds on its retry: the",
			"native path, asynq and BullMQ each on a fresh private redis-server per round (same binary,",
			"same settings), at 20 and at 100 handlers, with the retry after `0s` (`c20`, `c100`: the",
			"engine's own path) and after `50ms` (`c20-50ms`, `c100-50ms`: the retry waits in the",
			"engine's delayed set, so promotion and wake-ups count); 20k jobs, `fixed(delay)` with",
			"MaxAttempts 2, clock from the worker's start to the last success. Each row is the median",
			"of 3 rounds (one round swings by 10% or more on a shared machine). **redis-us/job** is the",
			"Redis server's CPU (`INFO cpu` user+sys, before and after) per job, **worker-us/job** the",
			"worker process's CPU per job: the cost behind the rate, steadier than the rate itself.",
			"The engines take turns within each round (native, asynq, BullMQ, then the next round), so",
			"a burst of load on the machine hits all of them; **x-asynq** and **redis-x-asynq** are the",
			"medians of the per-round ratios of native to asynq (jobs/s, Redis CPU per job), steadier",
			"than the ratio of the medians in **÷ asynq** and **redis ÷ asynq**.",
			"asynq's `DelayedTaskCheckInterval` is 100 ms (default 5 s); asynq stores a retry's time in",
			"whole seconds, so its 50 ms retries wait up to a second. **BullMQ** (Node, `bench/bullmq`,",
			"versions pinned by its lock file) runs one Worker with that concurrency,",
			"`attempts: 2, backoff: {type: 'fixed', delay}`, the jobs added with `addBulk` before the",
			"clock starts. River, for reference, runs once on PostgreSQL at 20 handlers and `0s`",
			"through `reboundriver` with `FetchCooldown` 5 ms (`FetchPollInterval` 50 ms): River fetches",
			"at most one batch of free workers per cooldown, and its default (100 ms) would cap 20",
			"workers at 200 runs/s, whatever PostgreSQL can do.",
		},
		units: []string{"jobs/s", "redis-us/job", "worker-us/job", "rounds"},
		ratios: []ratio{
			{unit: "jobs/s", base: "asynq", label: "÷ asynq", rebound: "native"},
			{unit: "jobs/s", base: "bullmq", label: "÷ bullmq", rebound: "native"},
			{unit: "redis-us/job", base: "asynq", label: "redis ÷ asynq", rebound: "native", lowerIsBetter: true},
		},
		missing: "no BenchmarkThroughput/<engine> benchmark exists in ./bench yet",
		bullmq:  true,
	},
	{
		anchor: "enqueue", title: "Enqueue",
		benches: []string{"BenchmarkEnqueue"},
		intro: []string{
			"How fast each engine adds 100k jobs to an empty queue on a fresh private redis-server,",
			"no worker running, each job carrying the options of a job that may retry (94-byte",
			"payload; asynq `MaxRetry(1)`, BullMQ `attempts: 2` with a fixed backoff). Rows `p32/...`:",
			"`native` and `asynq` call `Enqueue` once per job from 32 goroutines sharing one client",
			"(native's concurrent calls share script calls, see docs/native.md), `bullmq-add` calls",
			"`Queue.add` from 32 concurrent loops on one connection; `native-bulk` (`EnqueueMany`) and",
			"`bullmq-addbulk` (`Queue.addBulk`) send calls of 1,000 jobs, one after another. Rows",
			"`p1/...`: the same single-job calls from one producer, one after another. **redis-us/job**",
			"is the Redis server's CPU (`INFO` `cpu`, before and after) per job, **client-us/job** the",
			"producer process's CPU per job; each row is the median of 3 rounds, the engines taking",
			"turns within each round; **x-asynq** and **redis-x-asynq** are the medians of the",
			"per-round ratios of native to asynq.",
		},
		units: []string{"jobs/s", "redis-us/job", "client-us/job", "jobs", "rounds", "x-asynq", "redis-x-asynq"},
		ratios: []ratio{
			{unit: "jobs/s", base: "asynq", label: "÷ asynq", rebound: "native"},
			{unit: "redis-us/job", base: "asynq", label: "redis ÷ asynq", rebound: "native", lowerIsBetter: true},
		},
		missing: "no BenchmarkEnqueue/<engine> benchmark exists in ./bench yet",
		bullmq:  true,
	},
	{
		anchor: "promotion", title: "Promotion",
		benches: []string{"BenchmarkPromotion"},
		intro: []string{
			"Due jobs moved from the native delayed set to the due list per second by the native",
			"sweep, with 100k jobs due at once.",
		},
		units:   []string{"promoted/s", "jobs"},
		missing: "no BenchmarkPromotion benchmark exists in ./bench yet (it needs the native path's sweep)",
	},
	{
		anchor: "herd", title: "The herd through a real queue",
		benches: []string{"BenchmarkHerd"},
		intro: []string{
			"10k jobs fail and are retried through the native queue on a private redis-server under",
			"`exponential(1s, 10s)` with and without full jitter; each job's failure is its own time",
			"zero, and the retry's start offset is bucketed in 10 ms over the 1 s window.",
			"**peak/uniform** is the fullest bucket over the even share (10k / 100 buckets); target",
			"<= 1.5 with jitter (the queue must not re-clump what jitter spread). **ideal** is the same",
			"statistic for the delays the policy computed, before the queue had a say: the gap between",
			"the two is the queue's own clumping (the rest is the randomness of 10k draws).",
			"**late-p99-ms** is how late retries started against their computed time while the",
			"queue works through 20k runs: a due retry is taken from the due list ahead of first",
			"attempts still waiting, so it does not queue behind them.",
		},
		units:   []string{"peak/uniform", "ideal", "late-p99-ms", "early", "jobs"},
		missing: "no BenchmarkHerd benchmark exists in ./bench yet",
	},
	{
		anchor: "memory", title: "Memory per waiting retry",
		benches: []string{"BenchmarkMemory"},
		intro: []string{
			"Redis bytes per job waiting for its retry (`INFO memory` used_memory less the client",
			"connection buffers, `mem_clients_normal`, which follow each engine's connection pool and",
			"not its jobs; before and after, on a private redis-server so no other test's keys count),",
			"20k jobs with the same payload that failed once with the same error: native delayed set",
			"vs asynq's retry set vs BullMQ's delayed set, each with its default job IDs, and what 10M",
			"waiting retries would take at that rate. BullMQ keeps the failed attempt's stack trace",
			"with the job (and an entry of its events stream, capped at about 10k): `bullmq` is its",
			"default, `bullmq-no-stack` sets the jobs' `stackTraceLimit` to 0. Target: native <= 0.6×",
			"asynq. Redis keeps a hash in its compact listpack encoding only while every value is at",
			"most 64 bytes (`hash-max-listpack-value`), hence the two payload sizes.",
		},
		units: []string{"bytes/job", "GB/10M", "jobs"},
		ratios: []ratio{
			{unit: "bytes/job", base: "asynq", label: "÷ asynq", rebound: "native", lowerIsBetter: true},
			{unit: "bytes/job", base: "bullmq", label: "÷ bullmq", rebound: "native", lowerIsBetter: true},
		},
		missing: "no BenchmarkMemory/<engine> benchmark exists in ./bench yet",
		bullmq:  true,
	},
}

// scenarioPattern is the -bench pattern selecting the benchmarks of ss.
func scenarioPattern(ss ...scenario) string {
	var names []string
	for _, s := range ss {
		names = append(names, s.benches...)
	}
	return "^(" + strings.Join(names, "|") + ")$"
}

// scenarioAnchors are the names of the scenario sections, for -only.
func scenarioAnchors() []string {
	var out []string
	for _, s := range scenarios {
		out = append(out, s.anchor)
	}
	return out
}

// quickEnv is the environment variable that makes the benchmarks run a
// quick check (the bench package reads it).
const quickEnv = "REBOUND_BENCH_QUICK"

var hiddenUnits = []string{"ns/op", "B/op", "allocs/op"}

func (r *report) writeScenario(m *md, s scenario) {
	m.p("## %s", s.title)
	m.p("")
	m.p("<a id=%q></a>", s.anchor)
	m.p("")
	for _, l := range s.intro {
		m.p("%s", l)
	}
	m.p("")
	if why := r.notRun[s.anchor]; why != "" {
		m.p("**not measured**: %s", why)
		m.p("")
		return
	}
	var bs []*bench
	for _, top := range s.benches {
		bs = append(bs, r.results.under(top)...)
	}
	var units []string
	for _, u := range s.units {
		for _, b := range bs {
			if _, ok := b.Samples[u]; ok {
				units = append(units, u)
				break
			}
		}
	}
	for _, name := range r.results.order {
		b := r.results.benches[name]
		if !slices.Contains(bs, b) {
			continue
		}
		for u := range b.Samples {
			if !slices.Contains(units, u) && !slices.Contains(hiddenUnits, u) {
				units = append(units, u)
			}
		}
	}
	if len(bs) == 0 || len(units) == 0 {
		var prefix string
		if len(s.benches) > 0 {
			prefix = s.benches[0]
		}
		r.notMeasured(m, s.anchor, prefix, s.missing)
		return
	}
	head := "| run |"
	sep := "| --- |"
	for _, u := range units {
		head += " " + u + " |"
		sep += " ---: |"
	}
	var ratios []ratio
	for _, rt := range s.ratios {
		if slices.ContainsFunc(bs, func(b *bench) bool { return strings.HasSuffix(b.Name, "/"+rt.base) }) {
			ratios = append(ratios, rt)
			head += " " + rt.label + " |"
			sep += " ---: |"
		}
	}
	m.p("%s runs |", head)
	m.p("%s ---: |", sep)
	for _, b := range bs {
		name := s.rowName(b.Name)
		row := fmt.Sprintf("| <a id=%q></a>%s |", slug(s.anchor, name), name)
		for _, u := range units {
			v, ok := b.Median(u)
			if !ok {
				row += " — |"
				continue
			}
			row += " " + num(v) + " |"
		}
		for _, rt := range ratios {
			row += " " + r.scenarioRatio(s, rt, b) + " |"
		}
		runs := 0
		for _, u := range units {
			runs = max(runs, len(b.Samples[u]))
		}
		m.p("%s %d |", row, runs)
	}
	m.p("")
	var reasons []string
	for _, top := range s.benches {
		reasons = append(reasons, r.results.skipReasons(top)...)
	}
	if len(reasons) > 0 {
		m.p("Not measured in this run: %s.", strings.Join(reasons, "; "))
		m.p("")
	}
}

// scenarioRatio returns b's cell of the ratio column rt, and records a
// rebound row that is worse than its baseline.
func (r *report) scenarioRatio(s scenario, rt ratio, b *bench) string {
	i := strings.LastIndex(b.Name, "/")
	if i < 0 {
		return "—"
	}
	group, leaf := b.Name[:i], b.Name[i+1:]
	base := r.results.benches[group+"/"+rt.base]
	if base == nil || leaf == rt.base {
		return "—"
	}
	v, ok1 := b.Median(rt.unit)
	bv, ok2 := base.Median(rt.unit)
	if !ok1 || !ok2 || bv == 0 {
		return "—"
	}
	x := v / bv
	if isRow(leaf, rt.rebound) {
		worse := x < 1
		if rt.lowerIsBetter {
			worse = x > 1
		}
		if worse {
			where := strings.TrimPrefix(group, s.benches[0]+"/")
			if where == s.benches[0] {
				where = s.anchor
			} else {
				where = s.anchor + ", " + where
			}
			r.slower = append(r.slower, fmt.Sprintf("[%s](#%s): %s %s %s vs %s %s (%.2f×).",
				where, slug(s.anchor, s.rowName(b.Name)), leaf, num(v), rt.unit, rt.base, num(bv), x))
		}
	}
	return fmt.Sprintf("%.2f×", x)
}

// rowName is the name of the row of benchmark name: see scenario.rows.
func (s scenario) rowName(name string) string {
	for _, top := range s.benches {
		if !strings.HasPrefix(name, top+"/") {
			continue
		}
		if label, ok := s.rows[top]; ok {
			return label + strings.TrimPrefix(name, top+"/")
		}
		if top == s.benches[0] {
			return strings.TrimPrefix(name, top+"/")
		}
	}
	return strings.TrimPrefix(name, "Benchmark")
}
