package bench

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// commandStatsEnv, set to 1, makes the throughput and enqueue rounds log the Redis
// commands they cost per job (INFO commandstats, before and after): calls
// and server microseconds per job for each command, the commands scripts
// run included (Redis counts them under their own names as well as under
// EVALSHA); and, where /proc has them, the context switches per job of the
// redis-server and of this process (voluntary: a thread went to sleep
// waiting, so each is a wake-up; involuntary: it was preempted). It is a
// tool for finding where an engine's time goes; the report does not set it.
const commandStatsEnv = "REBOUND_BENCH_COMMANDSTATS"

// commandStats maps a command to its cumulative calls and microseconds;
// the entries "ctxsw:redis" and "ctxsw:self" hold the context switches
// (voluntary in calls, involuntary in usec) of the server and this process.
type commandStats map[string]struct{ calls, usec float64 }

// readCommandStats reads INFO commandstats, or nothing when
// commandStatsEnv is not set.
func readCommandStats(b *testing.B, rdb *redis.Client) commandStats {
	b.Helper()
	if os.Getenv(commandStatsEnv) != "1" {
		return nil
	}
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	out := commandStats{}
	for _, line := range strings.Split(info, "\n") {
		// cmdstat_evalsha:calls=40,usec=1234,usec_per_call=30.85,...
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found {
			continue
		}
		var s struct{ calls, usec float64 }
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				s.calls = n
			case "usec":
				s.usec = n
			}
		}
		out[name] = s
	}
	if pid := infoNumbers(b, rdb, "server", "process_id"); len(pid) == 1 {
		if v, n, ok := contextSwitches(int(pid[0])); ok {
			out["ctxsw:redis"] = struct{ calls, usec float64 }{v, n}
		}
	}
	if v, n, ok := contextSwitches(os.Getpid()); ok {
		out["ctxsw:self"] = struct{ calls, usec float64 }{v, n}
	}
	return out
}

// contextSwitches sums the voluntary and involuntary context switches of
// every thread of process pid, from /proc; ok is false where it cannot.
func contextSwitches(pid int) (voluntary, involuntary float64, ok bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, 0, false
	}
	for _, t := range tasks {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue // the thread ended meanwhile
		}
		for _, line := range strings.Split(string(raw), "\n") {
			k, v, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			switch k {
			case "voluntary_ctxt_switches":
				voluntary += n
			case "nonvoluntary_ctxt_switches":
				involuntary += n
			}
		}
	}
	return voluntary, involuntary, true
}

// logCommandStats logs, busiest first, each command's calls and
// microseconds per job between two readings.
func logCommandStats(b *testing.B, before, after commandStats, jobs int) {
	b.Helper()
	if after == nil {
		return
	}
	type row struct {
		name        string
		calls, usec float64
	}
	var rows []row
	var switches strings.Builder
	for _, who := range []string{"redis", "self"} {
		a, ok := after["ctxsw:"+who]
		if !ok {
			continue
		}
		bf := before["ctxsw:"+who]
		fmt.Fprintf(&switches, " %s %.2f voluntary %.2f involuntary;", who, (a.calls-bf.calls)/float64(jobs), (a.usec-bf.usec)/float64(jobs))
	}
	if switches.Len() > 0 {
		b.Logf("context switches per job:%s", switches.String())
	}
	for name, a := range after {
		if strings.HasPrefix(name, "ctxsw:") {
			continue
		}
		d := row{name, a.calls - before[name].calls, a.usec - before[name].usec}
		if d.calls > 0 {
			rows = append(rows, d)
		}
	}
	slices.SortFunc(rows, func(x, y row) int { return cmp.Compare(y.usec, x.usec) })
	var sb strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&sb, " %s %.3f calls %.2f us;", r.name, r.calls/float64(jobs), r.usec/float64(jobs))
	}
	b.Logf("commandstats per job:%s", sb.String())
}
