package bench

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// pathTraceEnv, set to 1, makes the native throughput rounds log how the
// worker talks to Redis, from a go-redis hook on its client: how many
// reserve calls each job costs, how many jobs each asked for and got, the
// round trip of the calls that carried a reserve (with the outcomes
// pipelined in front of it), the fetch loop's time between one reserve's
// reply and the next reserve (waiting for free slots, scheduling), the
// outcome batches that travelled without a reserve, and the wake-up blocks;
// and, from the private server's slow log set to log every command, the
// server time of each script per job. It is a tool for finding where the
// native path's time goes; the report does not set it.
const pathTraceEnv = "REBOUND_BENCH_PATHTRACE"

// The native scripts, told apart by their number of keys.
const (
	nativeReserveKeys  = 8
	nativeFailKeys     = 6
	nativeCompleteKeys = 3
)

// pathTrace collects what the hook saw.
type pathTrace struct {
	rdb              *redis.Client
	mu               sync.Mutex
	reserves         int
	asked, got       int
	short            int // reserves that got fewer jobs than asked: the loop then waits
	reserveRTT       []time.Duration
	gap              []time.Duration // from a reserve's reply to the next reserve's send
	lastReply        time.Time
	outcomesAlone    int // calls or pipelines of outcomes without a reserve
	outcomesAloneRTT []time.Duration
	outcomeCalls     int // fail and complete script calls
	blocks           int // BZPOPMIN calls
}

// tracePath hooks rdb, a private server's client, when pathTraceEnv is
// set, and returns the trace, or nil.
func tracePath(b *testing.B, rdb *redis.Client) *pathTrace {
	if os.Getenv(pathTraceEnv) != "1" {
		return nil
	}
	ctx := context.Background()
	for k, v := range map[string]string{"slowlog-log-slower-than": "0", "slowlog-max-len": "2000000"} {
		if err := rdb.ConfigSet(ctx, k, v).Err(); err != nil {
			b.Fatal(err)
		}
	}
	t := &pathTrace{rdb: rdb}
	rdb.AddHook(t)
	return t
}

// scriptName names a native script by its number of keys.
func scriptName(keys string) string {
	switch keys {
	case strconv.Itoa(nativeReserveKeys):
		return "reserve"
	case "6":
		return "fail"
	case "3":
		return "complete/enqueue"
	case "4":
		return "enqueue_delayed"
	case "5":
		return "enqueue_many"
	case "2":
		return "extend/reclaim"
	}
	return "keys=" + keys
}

// scriptKeys returns the number of keys of an EVALSHA or EVAL command, or -1.
func scriptKeys(c redis.Cmder) int {
	a := c.Args()
	if len(a) < 3 || (c.Name() != "evalsha" && c.Name() != "eval") {
		return -1
	}
	n, ok := a[2].(int)
	if !ok {
		return -1
	}
	return n
}

func (t *pathTrace) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (t *pathTrace) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		start := time.Now()
		err := next(ctx, c)
		t.record(start, time.Now(), []redis.Cmder{c})
		return err
	}
}

func (t *pathTrace) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cs []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cs)
		t.record(start, time.Now(), cs)
		return err
	}
}

// record files one round trip that sent cs from start to end.
func (t *pathTrace) record(start, end time.Time, cs []redis.Cmder) {
	t.mu.Lock()
	defer t.mu.Unlock()
	reserve, outcomes := false, 0
	for _, c := range cs {
		if c.Name() == "bzpopmin" {
			t.blocks++
		}
		switch scriptKeys(c) {
		case nativeReserveKeys:
			reserve = true
			t.reserves++
			a := c.Args()
			asked, _ := a[3+nativeReserveKeys].(int)
			t.asked += asked
			got := 0
			if rc, ok := c.(*redis.Cmd); ok {
				if res, err := rc.Slice(); err == nil && len(res) >= 2 {
					got = (len(res) - 2) / 3
				}
			}
			t.got += got
			if got < asked {
				t.short++
			}
		case nativeFailKeys, nativeCompleteKeys:
			if isEnqueue(c) {
				continue
			}
			outcomes++
			t.outcomeCalls++
		}
	}
	switch {
	case reserve:
		if !t.lastReply.IsZero() {
			t.gap = append(t.gap, start.Sub(t.lastReply))
		}
		t.lastReply = end
		t.reserveRTT = append(t.reserveRTT, end.Sub(start))
	case outcomes > 0:
		t.outcomesAlone++
		t.outcomesAloneRTT = append(t.outcomesAloneRTT, end.Sub(start))
	}
}

// isEnqueue reports a call of the native enqueue script, which takes as
// many keys as complete (jobs, wait, marker) but answers a bare code where
// complete answers a list per job.
func isEnqueue(c redis.Cmder) bool {
	rc, ok := c.(*redis.Cmd)
	if !ok {
		return false
	}
	_, code := rc.Val().(int64)
	return code
}

// log writes the trace per job.
func (t *pathTrace) log(b *testing.B, jobs int) {
	b.Helper()
	if t == nil {
		return
	}
	t.logCalls(b, jobs)
	t.logServerTime(b, jobs)
}

// logCalls logs what the hook saw, per job.
func (t *pathTrace) logCalls(b *testing.B, jobs int) {
	b.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	q := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "-"
		}
		s := slices.Clone(ds)
		slices.Sort(s)
		var sum time.Duration
		for _, d := range s {
			sum += d
		}
		return fmt.Sprintf("mean %s p50 %s p90 %s p99 %s", (sum / time.Duration(len(s))).Round(time.Microsecond),
			s[len(s)/2].Round(time.Microsecond), s[len(s)*9/10].Round(time.Microsecond), s[len(s)*99/100].Round(time.Microsecond))
	}
	n := float64(jobs)
	b.Logf("path per job: %.3f reserves (asked %.1f, got %.1f jobs each; %.0f%% short), %.3f outcome calls, %.3f outcome batches without a reserve, %.4f BZPOPMIN",
		float64(t.reserves)/n, float64(t.asked)/float64(max(t.reserves, 1)), float64(t.got)/float64(max(t.reserves, 1)),
		100*float64(t.short)/float64(max(t.reserves, 1)), float64(t.outcomeCalls)/n, float64(t.outcomesAlone)/n, float64(t.blocks)/n)
	b.Logf("path reserve round trip: %s", q(t.reserveRTT))
	b.Logf("path fetch-loop gap (reply to next reserve): %s", q(t.gap))
	b.Logf("path outcome batches alone, round trip: %s", q(t.outcomesAloneRTT))
}

// logServerTime logs the server time of each script per job, from the
// slow log (read through the hooked client: without holding t.mu).
func (t *pathTrace) logServerTime(b *testing.B, jobs int) {
	b.Helper()
	n := float64(jobs)
	logs, err := t.rdb.SlowLogGet(context.Background(), -1).Result()
	if err != nil {
		b.Fatal(err)
	}
	type agg struct {
		calls int
		us    time.Duration
	}
	by := map[string]*agg{}
	var names []string
	for _, l := range logs {
		name := l.Args[0]
		if (name == "evalsha" || name == "eval") && len(l.Args) > 2 {
			name = scriptName(l.Args[2])
		}
		if by[name] == nil {
			by[name] = &agg{}
			names = append(names, name)
		}
		by[name].calls++
		by[name].us += l.Duration
	}
	slices.SortFunc(names, func(x, y string) int { return cmp.Compare(by[y].us, by[x].us) })
	var sb strings.Builder
	for _, name := range names {
		a := by[name]
		fmt.Fprintf(&sb, " %s %.3f calls %.1f us (%.1f us/call);", name, float64(a.calls)/n,
			float64(a.us.Microseconds())/n, float64(a.us.Microseconds())/float64(a.calls))
	}
	b.Logf("path server time per job (slow log):%s", sb.String())
}

// rtDelayEnv, set to a duration ("300us"), makes every round trip of the
// throughput rounds' clients (native and asynq alike) wait that long before
// it is sent: a controlled stand-in for the longer round trips of a loaded
// machine, to see how each engine's rate depends on its round trips. The
// report does not set it.
const rtDelayEnv = "REBOUND_BENCH_RTDELAY"

// delayRoundTrips hooks rdb when rtDelayEnv is set.
func delayRoundTrips(b *testing.B, rdb *redis.Client) {
	v := os.Getenv(rtDelayEnv)
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("%s=%q: %v", rtDelayEnv, v, err)
	}
	rdb.AddHook(rtDelay(d))
}

// rtDelay is a hook that waits before each round trip.
type rtDelay time.Duration

func (d rtDelay) DialHook(next redis.DialHook) redis.DialHook { return next }

func (d rtDelay) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error {
		time.Sleep(time.Duration(d))
		return next(ctx, c)
	}
}

func (d rtDelay) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cs []redis.Cmder) error {
		time.Sleep(time.Duration(d))
		return next(ctx, cs)
	}
}
