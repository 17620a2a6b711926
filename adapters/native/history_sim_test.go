package native

// The history test's deterministic mode: each history runs on its own
// miniredis, dialled in-process, inside a testing/synctest bubble, so that
// every timer, sleep and the server's clock are the bubble's fake time: a
// history of seconds takes milliseconds, and what it does is a function of
// its seed (up to the Go scheduler's choices among goroutines that are
// ready at the same instant). A crash is a worker abandoned without
// Shutdown (what a kill -9 looks like to Redis) whose process is dead from
// then on: it records nothing more, starts no handler, calls no hook.

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// TestHistory runs seeded random histories against the native queue and
// checks each against the queue's model (history_check_test.go): on
// miniredis under testing/synctest, one shard or three, on a real Redis
// with real worker processes and real faults (history_real_test.go), and
// on a real 3-master Cluster with three shards, one master killed
// (history_cluster_test.go). A failing history is
// reported with its seed, the smallest shape it was cut down to, and the
// command that replays it.
func TestHistory(t *testing.T) {
	t.Run("miniredis", testHistorySim)
	t.Run("miniredis-sharded", testHistorySimSharded)
	t.Run("real", testHistoryReal)
	t.Run("real-sharded", testHistoryRealSharded)
}

// shardedBudget is how many histories the sharded miniredis mode runs by
// default: seeds from -history.first on, of their default shapes, with
// the main queue spread over 3 shards (about 10s; seed 23 caught a part of
// a sharded worker holding outcomes while it waited for a slot another
// part took: see fetchLoop).
const shardedBudget = 30

func testHistorySimSharded(t *testing.T) {
	if *historySeed != 0 {
		testHistorySim(t) // (the shape given says the shards)
		return
	}
	allowed := known()
	caught := map[string][]uint64{}
	n := shardedBudget
	if *historyCount > 0 {
		n = *historyCount
	}
	for seed := *historyFirst; seed < *historyFirst+uint64(n); seed++ {
		sh := defaultShape(seed)
		sh.Shards = 3
		vs, stats := simHistory(t, seed, sh)
		report(t, "miniredis-sharded", seed, sh, vs, allowed, caught, stats.story)
		if t.Failed() {
			break
		}
	}
	t.Logf("%d sharded histories", n)
	logCaught(t, caught)
}

// simBudget is how many histories the miniredis mode runs by default
// (seeds 1 to 40: about 60s under -race on a loaded two-core machine, 12s
// without), and simBudgetTime the most time it may take for them: past it,
// it stops and says how many it ran.
const (
	simBudget     = 40
	simBudgetTime = 90 * time.Second
)

func testHistorySim(t *testing.T) {
	allowed := known()
	if *historySeed != 0 {
		sh := defaultShape(*historySeed)
		if *historyShape != "" {
			var err error
			if sh, err = parseShape(*historyShape); err != nil {
				t.Fatal(err)
			}
		}
		vs, stats := simHistory(t, *historySeed, sh)
		t.Logf("seed %d, shape %s: %s%s", *historySeed, sh, stats, stats.story)
		report(t, "miniredis", *historySeed, sh, vs, allowed, nil, "")
		return
	}
	n, limit := simBudget, simBudgetTime
	if *historyCount > 0 {
		n, limit = *historyCount, 0
	}
	if v := os.Getenv("REBOUND_HISTORY_BUDGET"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("REBOUND_HISTORY_BUDGET=%q: %v, want a duration such as 8h", v, err)
		}
		n, limit = 1<<62, d
	}
	start := time.Now()
	caught := map[string][]uint64{}
	ran := 0
	var jobs, events int
	for seed := *historyFirst; ran < n; seed++ {
		if limit > 0 && time.Since(start) > limit {
			t.Logf("stopped after %d of %d histories: the time budget of %s is spent", ran, n, limit)
			break
		}
		sh := defaultShape(seed)
		vs, stats := simHistory(t, seed, sh)
		ran++
		jobs += stats.jobs
		events += stats.events
		report(t, "miniredis", seed, sh, vs, allowed, caught, stats.story)
		if t.Failed() {
			break
		}
	}
	el := time.Since(start)
	t.Logf("%d histories (%d jobs, %d events) in %s: %.0f histories a minute", ran, jobs, events, el.Round(time.Millisecond), float64(ran)/el.Minutes())
	logCaught(t, caught)
}

// logCaught says which seeds broke which known invariant.
func logCaught(t *testing.T, caught map[string][]uint64) {
	var invs []string
	for inv := range caught {
		invs = append(invs, inv)
	}
	sort.Strings(invs)
	for _, inv := range invs {
		seeds := caught[inv]
		show := seeds
		if len(show) > 10 {
			show = show[:10]
		}
		t.Logf("known violation %s (%s): %d histories, seeds %v", inv, knownViolations[inv], len(seeds), show)
	}
}

// report fails t for every violation not allowed, after shrinking its
// history, and logs (and tallies into caught) the allowed ones.
func report(t *testing.T, mode string, seed uint64, sh shape, vs []violation, allowed map[string]string, caught map[string][]uint64, story string) {
	t.Helper()
	if len(vs) == 0 {
		return
	}
	byInv := summarize(vs)
	var invs []string
	for inv := range byInv {
		invs = append(invs, inv)
	}
	sort.Strings(invs)
	for _, inv := range invs {
		ds := byInv[inv]
		if why, ok := allowed[inv]; ok {
			if caught != nil {
				caught[inv] = append(caught[inv], seed)
			}
			if len(caught[inv]) <= 2 || caught == nil {
				t.Logf("seed %d: known violation %s (%s): %d times, e.g. %s", seed, inv, why, len(ds), ds[0])
			}
			continue
		}
		small, cut := sh, "not cut down: real histories are too slow to shrink"
		if strings.HasPrefix(mode, "miniredis") {
			small = shrink(t, seed, sh, inv)
			cut = "cut down to " + small.String()
		}
		more := ""
		if len(ds) > 3 {
			more = fmt.Sprintf("\n\t... and %d more", len(ds)-3)
		}
		t.Errorf("history seed %d (shape %s, %s) violates %s: %d times:\n\t%s%s\nreplay: %s%s",
			seed, sh, cut, inv, len(ds), strings.Join(ds[:min(3, len(ds))], "\n\t"), more, replay(mode, seed, small), story)
		story = ""
	}
}

func replay(mode string, seed uint64, sh shape) string {
	return fmt.Sprintf("go test ./adapters/native/ -run 'TestHistory/%s$' -history.seed=%d -history.shape=%s -v", mode, seed, sh)
}

// shrink re-runs seed with smaller shapes while the history still violates
// inv, and returns the smallest that did.
func shrink(t *testing.T, seed uint64, sh shape, inv string) shape {
	best := sh
	for tries := 0; tries < 24; {
		progress := false
		for _, c := range best.smaller() {
			tries++
			vs, _ := simHistory(t, seed, c)
			if _, ok := summarize(vs)[inv]; ok {
				best, progress = c, true
				break
			}
			if tries >= 24 {
				break
			}
		}
		if !progress {
			break
		}
	}
	return best
}

// stories is every event of each job a violation of vs names, and what
// the queue stored of it.
func stories(evs []*hEvent, fin hFinal, vs []violation) string {
	var out strings.Builder
	seen := map[string]bool{}
	for _, v := range vs {
		f := strings.Fields(v.detail)
		if len(f) < 2 || f[0] != "job" {
			continue
		}
		id := strings.TrimSuffix(f[1], ":")
		if seen[id] {
			continue
		}
		seen[id] = true
		var b strings.Builder
		for _, e := range evs {
			if e.Job == id {
				fmt.Fprintf(&b, "\n\t%s #%d %-8s %-6s %-12s n=%d %s%s%s%s", fmtAt(e.At), e.Seq, e.Kind, e.Actor, e.Op, e.Attempt,
					cond(e.OK, "ok "), e.Was+" ", e.Outcome+e.Ret, cond(e.Err != "", " err="+e.Err))
			}
		}
		j := fin.jobs[id]
		fmt.Fprintf(&out, "\njob %s: stored %s after %d attempts (cancelled %v, last error %.60q); its events:%s", id, j.State, j.Attempts, j.Cancelled, j.LastError, b.String())
		if len(seen) == 3 {
			break
		}
	}
	return out.String()
}

func cond(b bool, s string) string {
	if b {
		return s
	}
	return ""
}

// simStats is what one history did.
type simStats struct {
	jobs, events, crashes, cuts int
	masterKills                 int // of a Cluster's masters (counted in crashes too)
	counterAt                   int64
	story                       string // the events of the jobs an unexpected violation names
}

func (s simStats) String() string {
	out := fmt.Sprintf("%d jobs, %d events, %d crashes, %d connection cuts, counter from %d", s.jobs, s.events, s.crashes, s.cuts, s.counterAt)
	if s.masterKills > 0 {
		out += fmt.Sprintf(" (%d of the crashes masters killed)", s.masterKills)
	}
	return out
}

// connSet is the in-process connections of one worker's client, which a
// fault cuts.
type connSet struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (s *connSet) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
}

func simClient(m *miniredis.Miniredis, cs *connSet) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: "history", // never dialled: the Dialer connects in-process
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			c, err := m.Dial()
			if err == nil && cs != nil {
				cs.mu.Lock()
				cs.conns = append(cs.conns, c)
				cs.mu.Unlock()
			}
			return c, err
		},
		PoolSize: 8,
		// Its goroutines outlive Close, which a bubble does not allow.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
}

// simHistory runs seed's history of shape sh and checks it.
func simHistory(t *testing.T, seed uint64, sh shape) (vs []violation, stats simStats) {
	synctest.Test(t, func(t *testing.T) {
		vs, stats = simRun(t, seed, sh)
	})
	return vs, stats
}

// openHist opens the history's main queue: of shards shards (one when
// shards is 0 or 1, NewQueue's).
func openHist(ctx context.Context, rdb redis.UniversalClient, name string, shards int, qopts []QueueOption) (*Queue, error) {
	if shards > 1 {
		return NewShardedQueue(ctx, rdb, name, shards, qopts...)
	}
	return NewQueue(rdb, name, qopts...)
}

func simRun(t *testing.T, seed uint64, sh shape) ([]violation, simStats) {
	var stats simStats
	ctx := context.Background()
	m := miniredis.NewMiniRedis()
	defer m.Close()
	admin := simClient(m, nil)
	defer admin.Close()
	h := newHistory()
	rec := h.add
	rule := histRule(seed)
	const name, fifoName = "hist", "hist-fifo"
	qopts := []QueueOption{WithPrefix("h"), WithCompletedRetention(time.Hour, -1), WithFailedRetention(time.Hour, -1)}
	qm, err := openHist(ctx, admin, name, sh.Shards, qopts)
	if err != nil {
		t.Fatal(err)
	}
	if want := max(sh.Shards, 1); qm.Shards() != want {
		t.Fatalf("the main queue has %d shards, want %d", qm.Shards(), want)
	}
	qf, err := NewQueue(admin, fifoName, qopts...)
	if err != nil {
		t.Fatal(err)
	}
	r := actorRand(seed, "setup")
	// A queue that has run a long while: its counter (lease tokens and the
	// delayed sequence) close below a multiple of 4096.
	if r.IntN(2) == 0 {
		stats.counterAt = int64(4096*(1+r.IntN(1000)) - r.IntN(200))
		for _, q := range append(qm.parts(), qf) {
			if err := admin.Set(ctx, q.keys.counter, stats.counterAt, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Workers: slots on the main queue, each of which a fault may crash
	// and restart; one on the FIFO queue.
	type slot struct {
		actor string
		w     *Worker
		rdb   *redis.Client
		conns *connSet
		dead  bool
	}
	var mu sync.Mutex
	slots := make([]*slot, sh.Workers)
	var clients []*redis.Client
	startSlot := func(i, gen int) *slot {
		actor := fmt.Sprintf("w%d.%d", i, gen)
		plan := planWorker(seed, fmt.Sprintf("w%d", i))
		cs := &connSet{}
		rdb := simClient(m, cs)
		clients = append(clients, rdb)
		q, err := openHist(ctx, rdb, name, sh.Shards, qopts)
		if err != nil {
			t.Fatal(err)
		}
		obs := histObserver{actor: actor, rec: rec}
		opts := []WorkerOption{WithConcurrency(plan.Concurrency), WithLease(plan.Lease), WithReclaimInterval(50 * time.Millisecond),
			WithObserver(obs), WithGiveUp(obs.GiveUp), WithErrorHandler(func(error) {})}
		if plan.Prefetch >= 0 {
			opts = append(opts, WithPrefetch(plan.Prefetch))
		}
		if plan.Timeout > 0 {
			opts = append(opts, WithTimeout(plan.Timeout))
		}
		w, err := NewWorker(q, rule, histHandler(seed, "", actor, 1, rec), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		return &slot{actor: actor, w: w, rdb: rdb, conns: cs}
	}
	gens := make([]int, sh.Workers)
	for i := range slots {
		slots[i] = startSlot(i, 0)
	}
	fifoRdb := simClient(m, nil)
	clients = append(clients, fifoRdb)
	qfw, err := NewQueue(fifoRdb, fifoName, qopts...)
	if err != nil {
		t.Fatal(err)
	}
	fobs := histObserver{actor: "fw", rec: rec}
	fw, err := NewWorker(qfw, rule, fifoHandler("", "fw", rec), WithConcurrency(1), WithPrefetch(r.IntN(8)),
		WithObserver(fobs), WithGiveUp(fobs.GiveUp), WithErrorHandler(func(error) {}))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Start(); err != nil {
		t.Fatal(err)
	}

	book := &idBook{}
	var actors sync.WaitGroup
	for i := range sh.Producers {
		actors.Go(func() { produce(ctx, h, qm, seed, fmt.Sprintf("p%d", i), sh.Jobs, book, time.Millisecond) })
	}
	for i := range sh.Operators {
		actors.Go(func() { operate(ctx, h, qm, seed, fmt.Sprintf("o%d", i), sh.Ops, book, time.Millisecond) })
	}
	if sh.Fifo > 0 {
		actors.Go(func() { produceFIFO(ctx, h, qf, seed, sh.Fifo) })
	}
	actors.Go(func() {
		fr := actorRand(seed, "faults")
		for range sh.Faults {
			time.Sleep(time.Duration(10+fr.IntN(80)) * time.Millisecond)
			i := fr.IntN(len(slots))
			mu.Lock()
			s := slots[i]
			if fr.IntN(3) == 0 {
				s.conns.cut()
				stats.cuts++
				mu.Unlock()
				continue
			}
			if !s.dead {
				h.crash(s.actor)
				s.w.abandon()
				s.dead = true
				stats.crashes++
			}
			mu.Unlock()
			time.Sleep(time.Duration(fr.IntN(100)) * time.Millisecond)
			mu.Lock()
			gens[i]++
			slots[i] = startSlot(i, gens[i])
			mu.Unlock()
		}
	})
	// The inspector: the one-state invariant on snapshots while it runs.
	var running []string
	inspectStop := make(chan struct{})
	inspectDone := make(chan struct{})
	go func() {
		defer close(inspectDone)
		for {
			select {
			case <-inspectStop:
				return
			case <-time.After(25 * time.Millisecond):
			}
			for _, q := range append(qm.parts(), qf) {
				_, ps := snapshotProblems(takeSnapshot(t, admin, q))
				if len(ps) > 0 && len(running) < 10 {
					running = append(running, fmt.Sprintf("at %s: %s", time.Now().UTC().Format("15:04:05.000"), ps[0]))
				}
			}
		}
	}()
	actors.Wait()
	close(inspectStop)
	<-inspectDone

	// Drain: every job ends once producers and operators stop.
	fin := hFinal{fifoQueue: fifoName, running: running, ruleMax: rule.MaxAttempts(), jobs: map[string]StoredJob{}}
	_ = qm.Resume(ctx)
	mu.Lock()
	for i, s := range slots {
		if s.dead {
			gens[i]++
			slots[i] = startSlot(i, gens[i])
		}
	}
	mu.Unlock()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pending := int64(0)
		for _, q := range append(qm.parts(), qf) {
			c, err := q.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// A give-up call a crashed worker owed is made by another once
			// its lease ends: the history is over when those calls are made.
			owed, err := admin.ZCard(ctx, q.keys.giveup).Result()
			if err != nil {
				t.Fatal(err)
			}
			pending += c.Waiting + c.Active + c.Delayed + owed
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			fin.drainErr = fmt.Sprintf("%d jobs or owed give-up calls still pending 2 minutes after the history's actors stopped", pending)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range append(slots, &slot{w: fw}) {
		if s.dead {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := s.w.Shutdown(sctx); err != nil {
			t.Errorf("seed %d: shutdown of %s: %v", seed, s.actor, err)
		}
		cancel()
	}
	// The abandoned workers' handlers that ignore their context end too.
	time.Sleep(time.Second)

	ids := map[string]bool{}
	h.mu.Lock()
	evs := append([]*hEvent(nil), h.events...)
	h.mu.Unlock()
	for _, e := range evs {
		if e.Job != "" {
			ids[e.Job] = true
		}
	}
	for id := range ids {
		q := qm
		if strings.HasPrefix(id, "f") {
			q = qf
		}
		if j, err := q.Job(ctx, id); err == nil {
			fin.jobs[id] = j
		}
	}
	for _, q := range append(qm.parts(), qf) {
		_, ps := snapshotProblems(takeSnapshot(t, admin, q))
		fin.problems = append(fin.problems, ps...)
	}
	for _, c := range clients {
		_ = c.Close()
	}
	stats.jobs, stats.events = len(ids), len(evs)
	vs := check(evs, fin)
	var unknown []violation
	for _, v := range vs {
		if _, ok := known()[v.inv]; !ok || *historyStory {
			unknown = append(unknown, v)
		}
	}
	stats.story = stories(evs, fin, unknown)
	return vs, stats
}
