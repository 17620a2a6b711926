package bench

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
)

// privateRedis starts a redis-server of its own on a free loopback port,
// with persistence off, for measurements that must not see other tests'
// keys (INFO memory deltas). It is stopped when b ends. Without a
// redis-server binary the benchmark is skipped (failed under
// REBOUND_REQUIRE_SERVERS=1).
func privateRedis(b *testing.B) *redis.Client {
	b.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if testenv.RequireServers() {
			b.Fatalf("redis-server is required (%s=1) but not installed: %v", testenv.RequireServersEnv, err)
		}
		b.Skipf("redis-server is not installed (%v): the memory figures need a private server", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	dieWithBench(cmd)
	if err := cmd.Start(); err != nil {
		b.Fatalf("start redis-server: %v", err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), PoolSize: 64})
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	for i := 0; ; i++ {
		if err := c.Ping(ctx).Err(); err == nil {
			break
		} else if i == 100 {
			b.Fatalf("private redis-server on port %d did not answer: %v", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c
}

// infoNumbers reads the numeric fields of one INFO section, all from the
// same reply, in the order asked; a field missing or not a number fails b.
func infoNumbers(b *testing.B, c *redis.Client, section string, fields ...string) []float64 {
	b.Helper()
	info, err := c.Info(context.Background(), section).Result()
	if err != nil {
		b.Fatal(err)
	}
	out := make([]float64, len(fields))
	for i, f := range fields {
		found := false
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), f+":"); ok {
				if out[i], err = strconv.ParseFloat(v, 64); err != nil {
					b.Fatalf("INFO %s: %s: %v", section, f, err)
				}
				found = true
				break
			}
		}
		if !found {
			b.Fatalf("INFO %s has no %s", section, f)
		}
	}
	return out
}

// redisVersion returns the server's version, for the log.
func redisVersion(c *redis.Client) string {
	info, err := c.Info(context.Background(), "server").Result()
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return "unknown"
}

// parallel runs f(i) for i in [0, n) on workers goroutines and returns the
// first error.
func parallel(n, workers int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		next  = make(chan int)
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// waitFor polls cond every 20ms until it holds or timeout passes.
func waitFor(b *testing.B, timeout time.Duration, what string, cond func() (bool, error)) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			b.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: not done after %s", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustRule(b *testing.B, spec string, maxAttempts int) (backoff.Policy, backoff.Rule) {
	b.Helper()
	p, err := backoff.Parse(spec)
	if err != nil {
		b.Fatal(err)
	}
	r, err := backoff.NewRule(p, maxAttempts)
	if err != nil {
		b.Fatal(err)
	}
	return p, r
}
