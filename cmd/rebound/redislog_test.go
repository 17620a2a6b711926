package main

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// cliEnv names the arguments a child process of TestRedisDownOneMessage
// runs rebound with, through the test binary.
const cliEnv = "REBOUND_TEST_CLI_ARGS"

// TestRedisDownOneMessage runs rebound against a Redis that is not there,
// in a process of its own (go-redis writes its log to the process's
// stderr), and wants rebound's own message alone on stderr: no go-redis
// pool lines before it.
func TestRedisDownOneMessage(t *testing.T) {
	if args := os.Getenv(cliEnv); args != "" {
		os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "redis://" + l.Addr().String()
	_ = l.Close() // nothing listens there now
	for _, args := range [][]string{
		{"breaker", "-redis", url},
		{"queue", "-redis", url, "ls", "emails"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRedisDownOneMessage$")
		cmd.Env = append(os.Environ(), cliEnv+"="+strings.Join(args, "\x1f"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("rebound %s: %v, want it to exit with a failure status", strings.Join(args, " "), err)
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "rebound "+args[0]) || !strings.Contains(lines[0], "connection refused") {
			t.Errorf("rebound %s with Redis down wrote to stderr:\n%s\nwant one line, rebound's own message naming the refused connection", strings.Join(args, " "), stderr.String())
		}
	}
}
