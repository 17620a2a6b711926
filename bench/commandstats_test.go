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

// commandStatsEnv, set to 1, makes the throughput rounds log the Redis
// commands they cost per job (INFO commandstats, before and after): calls
// and server microseconds per job for each command, the commands scripts
// run included (Redis counts them under their own names as well as under
// EVALSHA). It is a tool for finding where an engine's Redis time goes; the
// report does not set it.
const commandStatsEnv = "REBOUND_BENCH_COMMANDSTATS"

// commandStats maps a command to its cumulative calls and microseconds.
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
	return out
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
	for name, a := range after {
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
