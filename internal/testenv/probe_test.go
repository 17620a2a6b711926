package testenv

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRedisDownAskedOnce points the tests at a "Redis" that accepts and
// drops every connection: the first test to ask skips with the reason, and
// so do the next ones, at once, without dialling again; the summary counts
// them all.
func TestRedisDownAskedOnce(t *testing.T) {
	t.Setenv(RequireServersEnv, "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var dials atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			dials.Add(1)
			_ = c.Close()
		}
	}()
	t.Setenv("REBOUND_REDIS_ADDR", l.Addr().String())
	const tests = 10
	skips := 0
	for i := range tests {
		t.Run("", func(t *testing.T) {
			defer func() {
				if t.Skipped() {
					skips++
				}
			}()
			Redis(t)
			t.Errorf("test %d: Redis(t) returned a client of a server that drops every connection, want a skip", i)
		})
	}
	if skips != tests {
		t.Errorf("%d of %d tests skipped, want all", skips, tests)
	}
	first := dials.Load()
	if first == 0 {
		t.Fatal("no test dialled the server: the test shows nothing")
	}
	if first > 3 {
		t.Errorf("%d tests dialled the server %d times, want Redis asked once per process (one ping, no retries)", tests, first)
	}
	s := Summary()
	for _, want := range []string{"skipped 10 tests", "10 need Redis at " + l.Addr().String(), RequireServersEnv + "=1"} {
		if !strings.Contains(s, want) {
			t.Errorf("Summary() = %q, want it to contain %q", s, want)
		}
	}
}
