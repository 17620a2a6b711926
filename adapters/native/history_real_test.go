package native

// The history test's real mode: a redis-server of the test's own (AOF on,
// fsync always, on a free loopback port), main queue workers in processes
// of their own (this test binary, re-run with REBOUND_HISTORY_WORKER set:
// see TestMain), each behind a TCP proxy of the test's, and real faults: a
// worker killed with SIGKILL, a worker stopped with SIGSTOP past its lease
// and its deadline and then resumed, Redis killed and restarted from its
// AOF, and a proxy that delays, stalls or cuts a worker's connections.
// Workers write their events to a file, one JSON line a write, so a kill
// loses none that happened; events of different processes are ordered by
// the machine's clock.

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/internal/testenv"
)

// historyWorkerEnv, when set, makes this test binary a history worker
// process: the variable holds its configuration (workerConfig, as JSON).
const historyWorkerEnv = "REBOUND_HISTORY_WORKER"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(historyWorkerEnv); cfg != "" {
		os.Exit(historyWorkerMain(cfg))
	}
	testenv.Main(m) // ends the run with one line of what was skipped for want of a server
}

// workerConfig is what a history worker process runs.
type workerConfig struct {
	Addr, Prefix, Queue, Actor, Events string
	Seed                               uint64
	Plan                               workerPlan
	// Nodes, for a history on a Cluster: each node's address and the
	// address of this worker's proxy to it (Addr is then unused); Shards,
	// the main queue's shards.
	Nodes  map[string]string `json:",omitempty"`
	Shards int               `json:",omitempty"`
}

// client is the worker's client: to one Redis, or to the Cluster through
// its proxies (every node it is told of, by MOVED or the slot map, dialled
// through the proxy to that node).
func (c *workerConfig) client() redis.UniversalClient {
	if len(c.Nodes) == 0 {
		return redis.NewClient(&redis.Options{Addr: c.Addr, PoolSize: 20})
	}
	var addrs []string
	for a := range c.Nodes {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 20,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if p, ok := c.Nodes[addr]; ok {
				addr = p
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}})
}

// realScale is how much longer the real mode's handlers, leases and
// timeouts are than the miniredis mode's: a loaded machine (two cores,
// -race) must not expire a lease that no fault touched.
const realScale = 5

// historyWorkerMain runs one worker process until SIGTERM (then a graceful
// Shutdown) or SIGKILL.
func historyWorkerMain(cfg string) int {
	var c workerConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		fmt.Fprintf(os.Stderr, "history worker: bad %s: %v\n", historyWorkerEnv, err)
		return 2
	}
	f, err := os.OpenFile(c.Events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "history worker: %v\n", err)
		return 2
	}
	var mu sync.Mutex
	var seq int64
	rec := func(e *hEvent) bool {
		mu.Lock()
		defer mu.Unlock()
		seq++
		e.Seq, e.At, e.Proc = seq, time.Now().UnixNano(), c.Actor
		b, _ := json.Marshal(e)
		_, _ = f.Write(append(b, '\n')) // one write a line: a kill loses none written
		return true
	}
	rdb := c.client()
	octx, ocancel := context.WithTimeout(context.Background(), 20*time.Second)
	q, err := openHist(octx, rdb, c.Queue, c.Shards, []QueueOption{WithPrefix(c.Prefix), WithCompletedRetention(time.Hour, -1), WithFailedRetention(time.Hour, -1)})
	ocancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "history worker: %v\n", err)
		return 2
	}
	obs := histObserver{proc: c.Actor, actor: c.Actor, rec: rec}
	opts := []WorkerOption{WithConcurrency(c.Plan.Concurrency), WithLease(c.Plan.Lease), WithReclaimInterval(100 * time.Millisecond),
		WithObserver(obs), WithGiveUp(obs.GiveUp), WithErrorHandler(func(error) {})}
	if c.Plan.Prefetch >= 0 {
		opts = append(opts, WithPrefetch(c.Plan.Prefetch))
	}
	if c.Plan.Timeout > 0 {
		opts = append(opts, WithTimeout(c.Plan.Timeout))
	}
	w, err := NewWorker(q, histRule(c.Seed), histHandler(c.Seed, c.Actor, c.Actor, realScale, rec), opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "history worker: %v\n", err)
		return 2
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	if err := w.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "history worker: %v\n", err)
		return 2
	}
	<-sig
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Shutdown(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "history worker: shutdown: %v\n", err)
	}
	_ = f.Close()
	return 0
}

// realBudget is how many real histories CI runs, and the most time they
// take.
const (
	realBudget     = 20
	realBudgetTime = 150 * time.Second
)

func testHistoryReal(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if testenv.RequireServers() {
			t.Fatalf("redis-server is required (%s=1) to start a Redis of the test's own: %v", testenv.RequireServersEnv, err)
		}
		t.Skipf("redis-server is not installed (%v); set %s=1 to make this a failure", err, testenv.RequireServersEnv)
	}
	runReal(t, "real", realEnv{bin: bin}, realShape, realBudget, realBudgetTime)
}

// realEnv is the Redis real histories run on: a redis-server that each
// history starts of its own (bin), or the Cluster the mode started (cc
// and its nodes), shared by its histories, each under a prefix of its own.
type realEnv struct {
	bin   string
	cc    *redis.ClusterClient
	nodes *testenv.ClusterNodes
}

// runReal runs a real mode's histories: the one -history.seed names, or
// n from -history.first on (-history.n more, REBOUND_HISTORY_BUDGET for a
// time), stopping past limit.
func runReal(t *testing.T, mode string, env realEnv, shapeOf func(uint64) shape, n int, limit time.Duration) {
	allowed := known()
	if *historySeed != 0 {
		sh := shapeOf(*historySeed)
		if *historyShape != "" {
			var err error
			if sh, err = parseShape(*historyShape); err != nil {
				t.Fatal(err)
			}
		}
		if env.cc != nil && sh.Shards < 2 {
			sh.Shards = 3 // (a Cluster's mode runs sharded histories)
		}
		vs, stats := realHistory(t, env, *historySeed, sh)
		t.Logf("seed %d, shape %s: %s%s", *historySeed, sh, stats, stats.story)
		report(t, mode, *historySeed, sh, vs, allowed, nil, "")
		return
	}
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
	ran, jobs, faults, masters := 0, 0, 0, 0
	for seed := *historyFirst; ran < n; seed++ {
		if limit > 0 && time.Since(start) > limit {
			t.Logf("stopped after %d of %d histories: the time budget of %s is spent", ran, n, limit)
			break
		}
		sh := shapeOf(seed)
		vs, stats := realHistory(t, env, seed, sh)
		ran++
		jobs += stats.jobs
		faults += stats.crashes + stats.cuts
		masters += stats.masterKills
		report(t, mode, seed, sh, vs, allowed, caught, stats.story)
		if t.Failed() {
			break
		}
	}
	el := time.Since(start)
	kills := ""
	if env.cc != nil {
		kills = fmt.Sprintf(", %d of them masters killed", masters)
	}
	t.Logf("%d %s histories (%d jobs, %d faults%s) in %s: %.1f histories a minute", ran, mode, jobs, faults, kills, el.Round(time.Millisecond), float64(ran)/el.Minutes())
	logCaught(t, caught)
}

// realShape is the shape of seed's real history: no FIFO queue (its fire
// times are the server's clock, which a test process cannot compute to
// the millisecond) and at least one fault.
func realShape(seed uint64) shape {
	s := defaultShape(seed)
	s.Workers = max(2, s.Workers)
	s.Faults = 2 + s.Faults
	s.Fifo = 0
	s.Jobs += 10
	return s
}

// redisProc is a redis-server of the test's own, with an AOF it restarts
// from.
type redisProc struct {
	bin, dir string
	port     int
	cmd      *exec.Cmd
}

func (r *redisProc) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

func (r *redisProc) start() error {
	r.cmd = exec.Command(r.bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(r.port), "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "")
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.addr()})
	defer c.Close()
	for deadline := time.Now().Add(20 * time.Second); c.Ping(context.Background()).Err() != nil; {
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on %s did not answer within 20s", r.addr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// kill9 kills the server as a crash would.
func (r *redisProc) kill9() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
	r.cmd = nil
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proxy is a loopback TCP proxy between one worker and Redis that can
// delay every chunk, stall (hold every byte, as a network that drops
// packets until it heals) and cut every connection.
type proxy struct {
	ln      net.Listener
	target  string
	delay   atomic.Int64 // ns before each chunk is passed on
	stalled atomic.Bool
	mu      sync.Mutex
	conns   []net.Conn
	wg      sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Go(func() { p.pump(u, c) })
			p.wg.Go(func() { p.pump(c, u) })
		}
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) pump(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for p.stalled.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		if d := p.delay.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// proxySet is one worker's proxies, one to each node; a fault acts on
// them all.
type proxySet []*proxy

func (ps proxySet) setDelay(d time.Duration) {
	for _, p := range ps {
		p.delay.Store(int64(d))
	}
}

func (ps proxySet) stall(on bool) {
	for _, p := range ps {
		p.stalled.Store(on)
	}
}

func (ps proxySet) cut() {
	for _, p := range ps {
		p.cut()
	}
}

func (p *proxy) close() {
	_ = p.ln.Close()
	p.stalled.Store(false)
	p.cut()
	p.wg.Wait()
}

// workerProc is one history worker process.
type workerProc struct {
	actor, events string
	cmd           *exec.Cmd
	done          chan struct{}
}

// realHistory runs seed's history of shape sh with worker processes of
// its own, on a Redis of its own or on env's Cluster, and checks it.
func realHistory(t *testing.T, env realEnv, seed uint64, sh shape) ([]violation, simStats) {
	var stats simStats
	ctx := context.Background()
	dir := t.TempDir()
	const name = "hist"
	prefix := "h"
	var rp *redisProc
	var admin redis.UniversalClient
	var targets []string // the nodes workers reach, each through a proxy
	if env.cc != nil {
		// Histories share the Cluster: each keeps to a prefix of its own.
		prefix = fmt.Sprintf("h%d", seed)
		admin, targets = env.cc, env.nodes.Addrs
	} else {
		rp = &redisProc{bin: env.bin, dir: dir, port: freePort(t)}
		if err := rp.start(); err != nil {
			t.Fatal(err)
		}
		defer rp.kill9()
		c := redis.NewClient(&redis.Options{Addr: rp.addr(), MaxRetries: 10})
		defer c.Close()
		admin, targets = c, []string{rp.addr()}
	}
	h := newHistory()
	rule := histRule(seed)
	qm, err := openHist(ctx, admin, name, sh.Shards, []QueueOption{WithPrefix(prefix), WithCompletedRetention(time.Hour, -1), WithFailedRetention(time.Hour, -1)})
	if err != nil {
		t.Fatal(err)
	}
	// shardOn is the index of each node's shard (-1: none), and masterOf
	// the node of each shard: on a Cluster, the shards are on distinct
	// masters.
	shardOn := make([]int, len(targets))
	masterOf := make([]int, qm.Shards())
	for i := range shardOn {
		shardOn[i] = -1
	}
	if env.cc != nil {
		owner, _, err := slotOwners(ctx, env.cc)
		if err != nil {
			t.Fatal(err)
		}
		for s, part := range qm.parts() {
			masterOf[s] = slices.Index(targets, owner(keySlot(part.tag)))
			if masterOf[s] < 0 || shardOn[masterOf[s]] >= 0 {
				t.Fatalf("seed %d: shards %q are not on %d distinct masters of %v (shard %d's slot %d on %q)",
					seed, qm.ShardTags(), qm.Shards(), targets, s, keySlot(part.tag), owner(keySlot(part.tag)))
			}
			shardOn[masterOf[s]] = s
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	procs := make([]*workerProc, sh.Workers)
	proxies := make([]proxySet, sh.Workers) // worker i's, one to each node
	gens := make([]int, sh.Workers)
	for i := range proxies {
		for _, a := range targets {
			p := newProxy(t, a)
			defer p.close()
			proxies[i] = append(proxies[i], p)
		}
	}
	startProc := func(i int) *workerProc {
		actor := fmt.Sprintf("w%d.%d", i, gens[i])
		plan := planWorker(seed, fmt.Sprintf("w%d", i))
		plan.Lease *= realScale
		plan.Timeout *= realScale
		wp := &workerProc{actor: actor, events: filepath.Join(dir, actor+".events"), done: make(chan struct{})}
		wc := workerConfig{Addr: proxies[i][0].addr(), Prefix: prefix, Queue: name, Actor: actor, Events: wp.events, Seed: seed, Plan: plan, Shards: sh.Shards}
		if env.cc != nil {
			wc.Nodes = map[string]string{}
			for k, a := range targets {
				wc.Nodes[a] = proxies[i][k].addr()
			}
		}
		cfg, _ := json.Marshal(wc)
		wp.cmd = exec.Command(self, "-test.run=^$")
		wp.cmd.Env = append(os.Environ(), historyWorkerEnv+"="+string(cfg))
		logf, err := os.Create(filepath.Join(dir, actor+".log"))
		if err != nil {
			t.Fatal(err)
		}
		wp.cmd.Stdout, wp.cmd.Stderr = logf, logf
		if err := wp.cmd.Start(); err != nil {
			t.Fatalf("start worker process: %v", err)
		}
		go func() { _ = wp.cmd.Wait(); _ = logf.Close(); close(wp.done) }()
		return wp
	}
	for i := range procs {
		procs[i] = startProc(i)
	}
	var all []*workerProc
	all = append(all, procs...)
	defer func() {
		for _, wp := range all {
			_ = wp.cmd.Process.Signal(syscall.SIGCONT)
			_ = wp.cmd.Process.Kill()
			<-wp.done
		}
	}()

	book := &idBook{}
	var actors sync.WaitGroup
	for i := range sh.Producers {
		actors.Go(func() { produce(ctx, h, qm, seed, fmt.Sprintf("p%d", i), sh.Jobs, book, 10*time.Millisecond) })
	}
	for i := range sh.Operators {
		actors.Go(func() { operate(ctx, h, qm, seed, fmt.Sprintf("o%d", i), sh.Ops, book, 10*time.Millisecond) })
	}
	var faultLog []string
	actors.Go(func() {
		fr := actorRand(seed, "faults")
		// On a Cluster, Redis's fault is one master killed: at least one
		// in each history (the draws of fr stay those of the mode of one
		// Redis).
		mr := actorRand(seed, "master kill")
		forced := mr.IntN(max(1, sh.Faults))
		for f := range sh.Faults {
			time.Sleep(time.Duration(150+fr.IntN(500)) * time.Millisecond)
			i := fr.IntN(len(procs))
			mu.Lock()
			wp := procs[i]
			mu.Unlock()
			plan := planWorker(seed, fmt.Sprintf("w%d", i))
			lease := plan.Lease * realScale
			k := fr.IntN(6)
			if env.cc != nil && f == forced {
				k = 2
			}
			switch k {
			case 0: // kill -9, and a new process later
				h.add(&hEvent{Kind: "crash", Proc: wp.actor, Actor: wp.actor}) // (just before: the process may write until it dies)
				_ = wp.cmd.Process.Kill()
				<-wp.done
				stats.crashes++
				faultLog = append(faultLog, "kill "+wp.actor)
				time.Sleep(time.Duration(fr.IntN(400)) * time.Millisecond)
				mu.Lock()
				gens[i]++
				procs[i] = startProc(i)
				all = append(all, procs[i])
				mu.Unlock()
			case 1: // SIGSTOP past its lease (and any deadline), then SIGCONT
				p := h.mark()
				_ = wp.cmd.Process.Signal(syscall.SIGSTOP)
				time.Sleep(lease + time.Duration(200+fr.IntN(600))*time.Millisecond)
				_ = wp.cmd.Process.Signal(syscall.SIGCONT)
				h.add(&hEvent{Kind: "stall", Actor: wp.actor, StartAt: p.at})
				stats.cuts++
				faultLog = append(faultLog, "stop "+wp.actor)
			case 2: // Redis killed and restarted from its AOF
				p := h.mark()
				if env.cc != nil {
					// One master killed with SIGKILL: its shard's calls fail
					// or wait meanwhile (their outcome unknown, as across a
					// restart of one Redis); the others' go on. Down for up to
					// 3 s: past the cluster's node timeout (2 s) its peers
					// mark it failed.
					m := mr.IntN(len(targets))
					down := time.Duration(200+mr.IntN(2800)) * time.Millisecond
					env.nodes.Kill(m)
					time.Sleep(down)
					env.nodes.Restart(m)
					h.add(&hEvent{Kind: "stall", Actor: "*", StartAt: p.at})
					stats.crashes++
					stats.masterKills++
					faultLog = append(faultLog, fmt.Sprintf("kill master %d (shard %d) for %s", m, shardOn[m], down))
					break
				}
				rp.kill9()
				time.Sleep(time.Duration(fr.IntN(300)) * time.Millisecond)
				if err := rp.start(); err != nil {
					t.Errorf("seed %d: restart Redis from its AOF: %v", seed, err)
				}
				h.add(&hEvent{Kind: "stall", Actor: "*", StartAt: p.at})
				stats.crashes++
				faultLog = append(faultLog, "redis restart")
			case 3: // the proxy delays every chunk a while
				proxies[i].setDelay(time.Duration(2+fr.IntN(30)) * time.Millisecond)
				time.Sleep(time.Duration(200+fr.IntN(800)) * time.Millisecond)
				proxies[i].setDelay(0)
				stats.cuts++
				faultLog = append(faultLog, "delay "+wp.actor)
			case 4: // the proxy holds every byte past the lease
				p := h.mark()
				proxies[i].stall(true)
				time.Sleep(lease + time.Duration(fr.IntN(500))*time.Millisecond)
				proxies[i].stall(false)
				h.add(&hEvent{Kind: "stall", Actor: wp.actor, StartAt: p.at})
				stats.cuts++
				faultLog = append(faultLog, "stall "+wp.actor)
			case 5: // the proxy cuts every connection
				proxies[i].cut()
				stats.cuts++
				faultLog = append(faultLog, "cut "+wp.actor)
			}
		}
	})
	actors.Wait()

	fin := hFinal{ruleMax: rule.MaxAttempts(), jobs: map[string]StoredJob{}}
	for try := 0; qm.Resume(ctx) != nil && try < 50; try++ {
		time.Sleep(100 * time.Millisecond)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		// A give-up call a killed worker owed is made by another once
		// its lease ends: the history is over when those calls are made too.
		c, err := qm.Counts(ctx)
		owed := int64(0)
		var oerr error
		for _, part := range qm.parts() {
			n, err := admin.ZCard(ctx, part.keys.giveup).Result()
			owed += n
			oerr = cmp.Or(oerr, err)
		}
		if err == nil && oerr == nil && c.Waiting+c.Active+c.Delayed == 0 && owed == 0 {
			break
		}
		if time.Now().After(deadline) {
			fin.drainErr = fmt.Sprintf("jobs still pending 90s after the history's actors stopped: %+v, %d give-up calls owed (%v, %v)", c, owed, err, oerr)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	for _, wp := range procs {
		_ = wp.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, wp := range procs {
		select {
		case <-wp.done:
		case <-time.After(20 * time.Second):
			t.Errorf("seed %d: worker %s did not exit 20s after SIGTERM", seed, wp.actor)
		}
	}
	for _, wp := range all {
		evs, err := readEvents(wp.events)
		if err != nil {
			t.Errorf("seed %d: events of %s: %v", seed, wp.actor, err)
		}
		h.merge(evs)
	}
	mu.Unlock()

	ids := map[string]bool{}
	for _, e := range h.events {
		if e.Job != "" {
			ids[e.Job] = true
		}
	}
	for id := range ids {
		if j, err := qm.Job(ctx, id); err == nil {
			fin.jobs[id] = j
		}
	}
	for _, part := range qm.parts() {
		_, ps := snapshotProblems(takeSnapshot(t, admin, part))
		fin.problems = append(fin.problems, ps...)
	}
	stats.jobs, stats.events = len(ids), len(h.events)
	vs := check(h.events, fin)
	var unknown []violation
	for _, v := range vs {
		if _, ok := known()[v.inv]; !ok || *historyStory {
			unknown = append(unknown, v)
		}
	}
	stats.story = stories(h.events, fin, unknown)
	if stats.story != "" {
		stats.story = "\nfaults: " + strings.Join(faultLog, ", ") + stats.story
	}
	return vs, stats
}

// readEvents reads a worker process's events file; a last line cut by a
// kill is skipped.
func readEvents(path string) ([]*hEvent, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*hEvent
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		var e hEvent
		if json.Unmarshal(line, &e) == nil {
			out = append(out, &e)
		}
	}
}
