package testenv

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster starts a Redis Cluster of three masters from the installed
// redis-server, on loopback ports, with its files in t's temporary
// directories, and stops it when t ends. It returns a cluster client once
// every master agrees on the slot map. It skips t (fails it under
// REBOUND_REQUIRE_SERVERS=1) when redis-server is not installed.
func Cluster(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc, _ := startCluster(t, false)
	return cc
}

// ClusterNodes are the processes of a cluster DurableCluster started.
type ClusterNodes struct {
	t     testing.TB
	bin   string
	args  [][]string
	cmds  []*exec.Cmd
	Addrs []string // each node's address, node i serving slots i*16384/3 to (i+1)*16384/3-1
}

// Kill kills node i with SIGKILL, as a crash would, and waits for it to
// exit.
func (n *ClusterNodes) Kill(i int) {
	n.t.Helper()
	if n.cmds[i] == nil {
		n.t.Fatalf("node %d is not running", i)
	}
	_ = n.cmds[i].Process.Kill()
	_ = n.cmds[i].Wait()
	n.cmds[i] = nil
}

// Restart starts node i again, on its port and from its files (its
// cluster configuration and append-only file), and waits until it answers
// and the cluster is ok again.
func (n *ClusterNodes) Restart(i int) {
	n.t.Helper()
	cmd := exec.Command(n.bin, n.args[i]...)
	if err := cmd.Start(); err != nil {
		n.t.Fatalf("restart cluster node %d: %v", i, err)
	}
	n.cmds[i] = cmd
	c := redis.NewClient(&redis.Options{Addr: n.Addrs[i]})
	defer c.Close()
	ctx := context.Background()
	waitFor(n.t, "cluster node "+n.Addrs[i]+" to answer after its restart", func() bool {
		info, err := c.ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
}

// DurableCluster starts a cluster as Cluster does, but one whose nodes
// write every change to an append-only file fsynced before each reply
// (appendfsync always), and keep serving their own slots while another
// master is down (cluster-require-full-coverage no): a node killed with
// Kill and restarted with Restart comes back with every write it
// acknowledged.
func DurableCluster(t testing.TB) (*redis.ClusterClient, *ClusterNodes) {
	t.Helper()
	return startCluster(t, true)
}

func startCluster(t testing.TB, durable bool) (*redis.ClusterClient, *ClusterNodes) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		missing(t, "redis-server (to start a local cluster)", err)
	}
	ctx := context.Background()
	addrs := make([]string, 3)
	nodes := make([]*redis.Client, 3)
	cn := &ClusterNodes{t: t, bin: bin, args: make([][]string, 3), cmds: make([]*exec.Cmd, 3), Addrs: addrs}
	for i := range nodes {
		port := clusterPort(t)
		dir := t.TempDir()
		args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "2000", "--dir", dir, "--save", "", "--appendonly", "no"}
		if durable {
			args = append(args[:len(args)-1], "yes", "--appendfsync", "always", "--cluster-require-full-coverage", "no")
		}
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatalf("start cluster node: %v", err)
		}
		cn.args[i], cn.cmds[i] = args, cmd
		t.Cleanup(func() {
			if c := cn.cmds[i]; c != nil {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		})
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		nodes[i] = redis.NewClient(&redis.Options{Addr: addrs[i]})
		t.Cleanup(func() { _ = nodes[i].Close() })
		waitFor(t, "cluster node "+addrs[i]+" to answer", func() bool { return nodes[i].Ping(ctx).Err() == nil })
	}
	for i, n := range nodes {
		lo, hi := i*16384/len(nodes), (i+1)*16384/len(nodes)-1
		if err := n.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			t.Fatalf("give slots %d..%d to %s: %v", lo, hi, addrs[i], err)
		}
		if i > 0 {
			if err := n.ClusterMeet(ctx, "127.0.0.1", strings.TrimPrefix(addrs[0], "127.0.0.1:")).Err(); err != nil {
				t.Fatalf("cluster meet: %v", err)
			}
		}
	}
	waitFor(t, "the cluster to be ok", func() bool {
		for _, n := range nodes {
			info, err := n.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") {
				return false
			}
		}
		// And every node's slot map names each range's master by the
		// address it listens on: right after the meet, under load, a node
		// can report the cluster ok while its map still lacks a master's
		// address (a test reading the map then found no node for a slot).
		for _, n := range nodes {
			shards, err := n.ClusterShards(ctx).Result()
			if err != nil || len(shards) != len(nodes) {
				return false
			}
			for _, sh := range shards {
				named := false
				for _, m := range sh.Nodes {
					if m.Role == "master" && len(sh.Slots) > 0 && slices.Contains(addrs, net.JoinHostPort(m.IP, strconv.FormatInt(m.Port, 10))) {
						named = true
					}
				}
				if !named {
					return false
				}
			}
		}
		return true
	})
	// A native worker holds a connection for its wake-up block and one per
	// handler finishing at once; suites run several workers of concurrency
	// 16 on one node, more than the client's default pool of 5 per CPU per
	// node, so size it as a deployment would.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: 100})
	t.Cleanup(func() { _ = cc.Close() })
	waitFor(t, "the cluster client to see every master", func() bool {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }) == nil
	})
	return cc, cn
}

// clusterPort returns a free loopback port whose cluster bus port (10000
// above it) is free too.
func clusterPort(t testing.TB) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port > 65535-10000 {
			continue
		}
		if bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000)); err == nil {
			_ = bus.Close()
			return port
		}
	}
	t.Fatal("no free loopback port with a free cluster bus port")
	return 0
}

// waitFor polls ok every 20ms for up to 20s, failing t if it never holds.
func waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
