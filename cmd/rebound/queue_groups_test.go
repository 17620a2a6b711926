package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
)

// hostileError is an error text that would clear an operator's screen,
// set the window title and reorder what follows, were it printed raw.
const hostileError = "\x1b]0;pwned\x07boom \u202e 7\x1b[2J\x1b[H"

// failGroups fails jobs of three causes on q for good: 4 dial timeouts to
// different addresses, 3 missing users by different quoted names, and 2
// hostile texts.
func failGroups(t *testing.T, q *native.Queue) {
	t.Helper()
	ctx := context.Background()
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Minute)), 1))
	w, err := native.NewWorker(q, rule, func(_ context.Context, j *native.Job) error {
		return backoff.Permanent(fmt.Errorf("%s", j.Payload))
	})
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for i := range 4 {
		errs = append(errs, fmt.Sprintf("dial tcp 10.0.0.%d:6379: i/o timeout", i+1))
	}
	for i := range 3 {
		errs = append(errs, fmt.Sprintf(`user "u%d" not found`, i*17))
	}
	errs = append(errs, hostileError, hostileError)
	for i, e := range errs {
		if _, err := q.Enqueue(ctx, []byte(e), native.WithID(fmt.Sprintf("job-%d", i)), native.WithName("sync")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := q.Counts(ctx)
		if err == nil && c.Failed == int64(len(errs)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs never failed: %+v, %v", c, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// groups and bulk, as an operator runs them: the groups of the failed
// set, the dry run's count of one, the group retried with its progress,
// the hostile text escaped throughout, and bad input refused.
func TestQueueGroupsAndBulk(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	q := queueAt(t, rdb, native.DefaultPrefix)
	failGroups(t, q)
	url := "redis://" + m.Addr()

	out := queueCLI(t, url, exitOK, "groups", "emails")
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Errorf("groups printed job text raw:\n%q", out)
	}
	timeout := native.GroupID("dial tcp <addr>: i/o timeout")
	for _, want := range []string{
		"9 failed jobs in 3 groups, of 9 failed jobs read (1 request)",
		timeout + "  4",
		"dial tcp <addr>: i/o timeout",
		`user "<q>" not found`,
		`\x1b]<n>;pwned\x07boom \u202e <n>`,
		"act on a group: rebound queue bulk emails retry -state failed -group " + timeout,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("groups output lacks %q:\n%s", want, out)
		}
	}
	// JSON: the fingerprint exact.
	var js struct {
		Groups []struct {
			ID, Fingerprint string
			Count           int
		}
		Scanned int
		Next    string
	}
	if err := json.Unmarshal([]byte(queueCLI(t, url, exitOK, "-json", "groups", "emails", "-n", "2")), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Groups) != 2 || js.Groups[0].ID != timeout || js.Groups[0].Count != 4 || js.Scanned != 9 || js.Next != "" {
		t.Errorf("groups -json -n 2: %+v", js)
	}
	// Cut short by -most: the cursor to go on from.
	out = queueCLI(t, url, exitOK, "groups", "emails", "-most", "5")
	if !strings.Contains(out, "stopped after 5 of 9 failed jobs (-most)") || !strings.Contains(out, "-cursor ") {
		t.Errorf("groups -most 5:\n%s", out)
	}
	cursor := out[strings.LastIndex(out, "-cursor ")+len("-cursor "):]
	cursor = cursor[:strings.IndexAny(cursor, " \n")]
	if out := queueCLI(t, url, exitOK, "groups", "emails", "-cursor", cursor); !strings.Contains(out, "of 4 failed jobs read") {
		t.Errorf("groups from the cursor:\n%s", out)
	}

	// The dry run changes nothing.
	out = queueCLI(t, url, exitOK, "bulk", "emails", "retry", "-state", "failed", "-group", timeout)
	if !strings.Contains(out, "4 failed jobs of group "+timeout+" match (of 9 read); nothing changed: add -yes to retry them") {
		t.Errorf("dry run:\n%s", out)
	}
	if c, _ := q.Counts(context.Background()); c.Failed != 9 {
		t.Fatalf("after the dry run: %+v, want 9 failed still", c)
	}
	out = queueCLI(t, url, exitOK, "bulk", "emails", "retry", "-state", "failed", "-group", timeout, "-yes", "-reset")
	for _, want := range []string{"4 failed jobs of group " + timeout + " match (of 9 read); retrying:", "  9 read, 4 retried, 0 skipped", "4 jobs retried, 0 skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("bulk retry lacks %q:\n%s", want, out)
		}
	}
	if c, _ := q.Counts(context.Background()); c.Failed != 5 || c.Waiting != 4 {
		t.Errorf("after the retry: %+v, want 5 failed, 4 waiting", c)
	}
	// The hostile jobs by error text, deleted; described escaped.
	out = queueCLI(t, url, exitOK, "bulk", "emails", "rm", "-state", "failed", "-error", "\x1b[2J", "-yes")
	if strings.ContainsRune(out, 0x1b) || !strings.Contains(out, `with an error holding '\x1b[2J'`) || !strings.Contains(out, "2 jobs deleted") {
		t.Errorf("bulk rm by hostile error text:\n%q", out)
	}
	// Cancel the waiting ones, by ID prefix and time, in JSON.
	var bo bulkOut
	if err := json.Unmarshal([]byte(queueCLI(t, url, exitOK, "-json", "bulk", "emails", "cancel", "-state", "waiting", "-id", "job-", "-from", "1h", "-yes")), &bo); err != nil {
		t.Fatal(err)
	}
	if bo.Done != 4 || bo.Matched != 4 || bo.DryRun {
		t.Errorf("bulk cancel -json: %+v, want 4 done", bo)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bulk", "emails", "retry"}, "missing -state"},
		{[]string{"bulk", "emails", "retry", "-state", "waiting"}, "retry does not apply to waiting jobs"},
		{[]string{"bulk", "emails", "rm", "-state", "active"}, "rm does not apply to active jobs"},
		{[]string{"bulk", "emails", "explode", "-state", "failed"}, `action "explode" is unknown`},
		{[]string{"bulk", "emails", "rm", "-state", "failed", "-reset"}, "-reset is for retry only"},
		{[]string{"bulk", "emails", "rm", "-state", "failed", "-from", "yesterday"}, `-from "yesterday" is not a time`},
		{[]string{"bulk", "emails", "rm", "-state", "failed", "-from", "1h", "-to", "2h"}, "-to"},
		{[]string{"groups", "emails", "-n", "0"}, "-n 0 is not positive"},
		{[]string{"groups", "emails", "-cursor", "bogus"}, "not a cursor"},
	} {
		stdout, stderr, code := rebound(t, append([]string{"queue", "-redis", url}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("rebound queue %q: exit %d, %q%q; want exit %d saying %q", c.args, code, stdout, stderr, exitUsage, c.want)
		}
	}
}
