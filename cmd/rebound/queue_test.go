package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
)

// queueAt is a native queue "emails" on rdb, under prefix.
func queueAt(t *testing.T, rdb redis.UniversalClient, prefix string) *native.Queue {
	t.Helper()
	q, err := native.NewQueue(rdb, "emails", native.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// sendMail is the test queues' handler: a "bounce" fails for good, a
// "flaky" fails to be retried, anything else is sent.
func sendMail(payload []byte) error {
	switch string(payload) {
	case "bounce":
		return backoff.Permanent(errors.New("smtp: 550 5.1.1 mailbox unavailable"))
	case "flaky":
		return errors.New("dial tcp 10.0.0.7:25: connect: connection refused")
	}
	return nil
}

// fillQueue puts jobs in every state but active: a completed one, a
// failed one (permanent), a retry ten minutes away, one enqueued with a
// delay and a waiting one. Its worker's rule retries after fixed(10m).
func fillQueue(t *testing.T, q *native.Queue) {
	t.Helper()
	ctx := context.Background()
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(10*time.Minute)), 5))
	w, err := native.NewWorker(q, rule, func(_ context.Context, j *native.Job) error { return sendMail(j.Payload) })
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for _, j := range []struct{ id, payload string }{{"welcome-1", `{"to":"ada@example.com"}`}, {"welcome-2", "bounce"}, {"welcome-3", "flaky"}} {
		if _, err := q.Enqueue(ctx, []byte(j.payload), native.WithID(j.id), native.WithName("welcome"),
			native.WithMetadata(map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := q.Counts(ctx)
		if err == nil && c.Completed == 1 && c.Failed == 1 && c.Delayed == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs never ran: %+v, %v", c, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, []byte("weekly"), native.WithID("digest-1"), native.WithName("digest"), native.WithDelay(24*time.Hour), native.WithMaxAttempts(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, []byte{0xff, 0x00, 0x01}, native.WithID("fresh-1")); err != nil {
		t.Fatal(err)
	}
}

// The queue command's output, on a miniredis whose clock the test sets
// (the times shown are the server's): tables, JSON, and bad input.
func TestQueueGolden(t *testing.T) {
	golden(t, "queue.golden", queueGoldenRun(t, 1))
}

// TestQueueGoldenSharded runs the golden session on a queue of three
// shards (NewShardedQueue): the command opens it as its layout says and
// prints what it prints for the queue of one shard, but for the cursors,
// whose form differs.
func TestQueueGoldenSharded(t *testing.T) {
	mask := func(s string) string {
		return regexp.MustCompile(`(?m)(-cursor |"Next": ?")[A-Za-z0-9_-]+`).ReplaceAllString(s, "${1}CURSOR")
	}
	one, three := mask(queueGoldenRun(t, 1)), mask(queueGoldenRun(t, 3))
	if one != three {
		t.Errorf("the session on a queue of 3 shards differs from the one of 1 shard:\n--- 1 shard\n%s\n--- 3 shards\n%s", one, three)
	}
}

// queueGoldenRun runs the golden session on a queue "emails" of shards
// shards and returns its output.
func queueGoldenRun(t *testing.T, shards int) string {
	m := miniredis.RunT(t)
	m.SetTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q, err := native.NewShardedQueue(context.Background(), rdb, "emails", shards)
	if err != nil {
		t.Fatal(err)
	}
	fillQueue(t, q)
	m.SetTime(time.Date(2026, 3, 1, 12, 1, 30, 0, time.UTC))

	url := "redis://" + m.Addr()
	var b strings.Builder
	for _, args := range [][]string{
		{"counts", "emails"},
		{"ls", "emails"},
		{"ls", "emails", "-state", "delayed", "-oldest"},
		{"ls", "emails", "-state", "delayed", "-n", "1"},
		{"ls", "emails", "-state", "completed"},
		{"ls", "emails", "-state", "waiting"},
		{"ls", "emails", "-state", "active"},
		{"show", "emails", "welcome-2"},
		{"show", "emails", "fresh-1"},
		{"show", "emails", "welcome-1", "-json"},
		{"ls", "emails", "-state", "delayed", "-json", "-oldest"},
		{"counts", "emails", "-json"},
		{"run", "emails", "digest-1"},
		{"run", "emails", "digest-1"},
		{"rm", "emails", "nope"},
		{"ls", "emails", "-state", "failed", "-cursor", "bogus"},
		{"retry", "emails", "welcome-1"},
		{"retry", "emails", "-error", "*refused*"},
		{"retry", "emails", "-all", "-reset", "-json"},
		{"cancel", "emails", "welcome-3"},
		{"cancel", "emails", "welcome-3"},
		{"retry", "emails", "welcome-3", "-reset"},
		{"pause", "emails"},
		{"counts", "emails"},
		{"resume", "emails"},
		{"rm", "emails", "welcome-3"},
		// Bad input.
		{},
		{"frobnicate", "emails"},
		{"ls"},
		{"ls", "emails", "-state", "dead"},
		{"ls", "emails", "-n", "0"},
		{"show", "emails"},
		{"show", "emails", "a", "b"},
		{"retry", "emails"},
		{"retry", "emails", "welcome-1", "-all"},
		{"retry", "emails", "-all", "-name", "x"},
		{"pause", "emails", "extra"},
	} {
		full := append([]string{"queue", "-redis", url}, args...)
		stdout, stderr, code := rebound(t, full...)
		fmt.Fprintf(&b, "$ rebound queue %s\n%s%sexit %d\n\n", strings.Join(args, " "), stdout, stderr, code)
	}
	// -redis missing, and a Redis that does not answer.
	for _, args := range [][]string{
		{"queue", "counts", "emails"},
		{"queue", "-redis", "redis://127.0.0.1:1", "-timeout", "300ms", "counts", "emails"},
		{"queue", "-redis", "mysql://x", "counts", "emails"},
	} {
		stdout, stderr, code := rebound(t, args...)
		fmt.Fprintf(&b, "$ rebound %s\n%s%sexit %d\n\n", strings.Join(args, " "), stdout, stderr, code)
	}
	return strings.ReplaceAll(b.String(), m.Addr(), "MINIREDIS")
}

// queueCLI runs rebound queue on url and returns its output, failing the
// test unless it exits with code.
func queueCLI(t *testing.T, url string, code int, args ...string) string {
	t.Helper()
	stdout, stderr, got := rebound(t, append([]string{"queue", "-redis", url}, args...)...)
	if got != code {
		t.Fatalf("rebound queue %q: exit %d, want %d\nstdout: %s\nstderr: %s", args, got, code, stdout, stderr)
	}
	return stdout
}

// The commands act on a real Redis (and a Cluster, by a URL with addr=
// parameters) as the queue's methods do.
func TestQueueCommands(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		rdb := testenv.Redis(t)
		prefix := testenv.Prefix(t, rdb)
		queueFlow(t, rdb, "redis://"+testenv.RedisAddr(), prefix)
	})
	t.Run("cluster", func(t *testing.T) {
		cc := testenv.Cluster(t)
		addrs := cc.Options().Addrs
		url := "redis://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr=")
		queueFlow(t, cc, url, "rbt-cli")
	})
}

func queueFlow(t *testing.T, rdb redis.UniversalClient, url, prefix string) {
	ctx := context.Background()
	q := queueAt(t, rdb, prefix)
	fillQueue(t, q)
	p := []string{"-prefix", prefix}
	state := func(id string) native.StoredJob {
		t.Helper()
		j, err := q.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}

	var list struct {
		Jobs []struct{ ID, State, LastError string }
		Next string
	}
	if err := json.Unmarshal([]byte(queueCLI(t, url, exitOK, append(p, "ls", "emails", "-state", "delayed", "-json", "-n", "1", "-oldest")...)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Jobs) != 1 || list.Jobs[0].ID != "welcome-3" || list.Next == "" {
		t.Fatalf("first page %+v, want welcome-3 and a cursor", list)
	}
	out := queueCLI(t, url, exitOK, append(p, "ls", "emails", "-state", "delayed", "-oldest", "-n", "1", "-cursor", list.Next)...)
	if !strings.Contains(out, "digest-1") || strings.Contains(out, "welcome-3") || strings.Contains(out, "more jobs") {
		t.Errorf("second page:\n%s\nwant digest-1 alone", out)
	}

	queueCLI(t, url, exitOK, append(p, "run", "emails", "digest-1")...)
	if j := state("digest-1"); j.State != native.StateWaiting {
		t.Errorf("digest-1 after run: %v, want waiting", j.State)
	}
	queueCLI(t, url, exitUsage, append(p, "run", "emails", "digest-1")...)

	queueCLI(t, url, exitOK, append(p, "retry", "emails", "-name", "welc*", "-reset")...)
	if j := state("welcome-2"); j.State != native.StateWaiting || j.Attempts != 0 {
		t.Errorf("welcome-2 after retry -reset: %v with %d attempts, want waiting with 0", j.State, j.Attempts)
	}

	queueCLI(t, url, exitOK, append(p, "cancel", "emails", "welcome-3")...)
	if j := state("welcome-3"); j.State != native.StateFailed || !j.Cancelled {
		t.Errorf("welcome-3 after cancel: %+v, want failed and cancelled", j)
	}
	queueCLI(t, url, exitUsage, append(p, "cancel", "emails", "welcome-3")...)

	queueCLI(t, url, exitOK, append(p, "pause", "emails")...)
	if c, _ := q.Counts(ctx); !c.Paused {
		t.Error("not paused after pause")
	}
	if out := queueCLI(t, url, exitOK, append(p, "counts", "emails")...); !strings.Contains(out, "paused") {
		t.Errorf("counts of a paused queue:\n%s", out)
	}
	queueCLI(t, url, exitOK, append(p, "resume", "emails")...)
	if c, _ := q.Counts(ctx); c.Paused {
		t.Error("paused after resume")
	}

	queueCLI(t, url, exitOK, append(p, "rm", "emails", "welcome-1")...)
	if _, err := q.Job(ctx, "welcome-1"); !errors.Is(err, native.ErrNotFound) {
		t.Errorf("welcome-1 after rm: %v, want ErrNotFound", err)
	}
	queueCLI(t, url, exitUsage, append(p, "rm", "emails", "welcome-1")...)
	if out := queueCLI(t, url, exitOK, append(p, "show", "emails", "welcome-3")...); !strings.Contains(out, "cancelled by an operator") {
		t.Errorf("show of a cancelled job:\n%s", out)
	}
}
