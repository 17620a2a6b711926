package native

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/conformance"
	"github.com/rebound-go/rebound/internal/testenv"
)

// freePort returns a loopback port that is free, together with the port
// 10000 above it (the cluster bus).
func freePort(t *testing.T) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port
	}
	t.Fatal("no free loopback port pair for a cluster node")
	return 0
}

// startCluster starts a three-master Redis Cluster from redis-server on
// loopback ports, its files in a temporary directory, and stops it when t
// ends. It skips t (fails it under REBOUND_REQUIRE_SERVERS=1) when
// redis-server is not installed.
func startCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if testenv.RequireServers() {
			t.Fatalf("redis-server is required (%s=1) to start a local cluster: %v", testenv.RequireServersEnv, err)
		}
		t.Skipf("redis-server not installed (%v); set %s=1 to make this a failure", err, testenv.RequireServersEnv)
	}
	ctx := context.Background()
	var nodes []*redis.Client
	var addrs []string
	for i := range 3 {
		port := freePort(t)
		dir := t.TempDir()
		cmd := exec.Command(bin,
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "2000",
			"--dir", dir, "--save", "", "--appendonly", "no",
			"--protected-mode", "no")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start cluster node %d: %v", i, err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		addr := "127.0.0.1:" + strconv.Itoa(port)
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = c.Close() })
		deadline := time.Now().Add(10 * time.Second)
		for c.Ping(ctx).Err() != nil {
			if time.Now().After(deadline) {
				t.Fatalf("cluster node %s never answered", addr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		nodes = append(nodes, c)
		addrs = append(addrs, addr)
	}
	// Three masters, a third of the 16384 slots each, then introduce them.
	for i, c := range nodes {
		lo, hi := i*16384/3, (i+1)*16384/3-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			t.Fatalf("assign slots %d-%d to %s: %v", lo, hi, addrs[i], err)
		}
	}
	for _, c := range nodes[1:] {
		host, port, _ := net.SplitHostPort(addrs[0])
		if err := c.ClusterMeet(ctx, host, port).Err(); err != nil {
			t.Fatalf("cluster meet: %v", err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		for _, c := range nodes {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("local cluster never reached cluster_state:ok")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A worker holds a connection for its wake-up block and one per
	// handler finishing at once; the suite runs several workers of
	// concurrency 16 on one node, more than the cluster client's default
	// pool of 5 per CPU per node, so size it as a deployment would.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 100})
	t.Cleanup(func() { _ = cc.Close() })
	// Every master must agree on the slot map before the first script runs.
	deadline = time.Now().Add(10 * time.Second)
	for {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster client: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cc
}

func TestConformanceCluster(t *testing.T) {
	cc := startCluster(t)
	h := &harness{name: "native/cluster", rdb: cc, prefix: "rbt", lateness: 100 * time.Millisecond}
	conformance.Run(t, h)

	// The suite's queues ("conf{N}:q", braces escaped in the tag) landed on
	// more than one master, and each queue's keys on exactly one.
	ctx := context.Background()
	masters := map[string]bool{}
	for i := 1; i <= h.n; i++ {
		k := newKeys("rbt", fmt.Sprintf("conf{%d}:q", i))
		slot := cc.ClusterKeySlot(ctx, k.wait).Val()
		for _, key := range []string{k.due, k.active, k.delayed, k.failed, k.completed, k.marker, k.jobs, k.counter, k.control} {
			if s := cc.ClusterKeySlot(ctx, key).Val(); s != slot {
				t.Errorf("key %s in slot %d, its queue's wait list in %d", key, s, slot)
			}
		}
		for j, r := range [][2]int64{{0, 5460}, {5461, 10921}, {10922, 16383}} {
			if slot >= r[0] && slot <= r[1] {
				masters[strconv.Itoa(j)] = true
			}
		}
	}
	t.Logf("%d queues spread over %d of 3 masters", h.n, len(masters))
}
