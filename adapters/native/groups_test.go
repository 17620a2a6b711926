package native

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/internal/testenv"
)

func TestFailureGroups(t *testing.T) {
	runBackends(t, []backendTest{
		{"groups in steps", testFailureGroupsSteps},
		{"bulk retry of a group", testBulkRetryGroup},
		{"bulk on the waiting lists", testBulkWaiting},
		{"bulk on the waiting lists, the cursor's job taken", testBulkWaitingCursorGone},
		{"bulk cancel and delete of delayed jobs", testBulkDelayed},
		{"bad input", testBulkBadInput},
	})
}

// failMany enqueues one job per text of errs, named name-i (i from 0), and
// fails each for good with its text, through the worker's fail script. It
// returns the jobs' IDs, in the order of errs.
func failMany(t *testing.T, q *Queue, name string, errs []string) []string {
	t.Helper()
	ctx := context.Background()
	ids := make([]string, len(errs))
	text := map[string]string{}
	for i, e := range errs {
		id, err := q.Enqueue(ctx, nil, WithID(fmt.Sprintf("%s-%03d", name, i)), WithName(name))
		if err != nil {
			t.Fatal(err)
		}
		ids[i], text[id] = id, e
	}
	w := idle(t, q, fixedRule(t, time.Millisecond, 3))
	for left := len(errs); left > 0; {
		jobs, toks, _, err := w.reserve(min(left, 50))
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			t.Fatalf("reserve gave no jobs with %d to fail", left)
		}
		for i, j := range jobs {
			e, ok := text[j.ID]
			if !ok {
				t.Fatalf("reserved job %s, not one of failMany's", j.ID)
			}
			res, err := w.fail(ctx, j.ID, toks[i], backoff.Decision{Outcome: backoff.OutcomePermanent}, 3, e, keepMeta, false)
			if code := (tc{t}).code(res, err); code != 2 {
				t.Fatalf("fail %s: code %d, want 2 (failed)", j.ID, code)
			}
		}
		left -= len(jobs)
	}
	return ids
}

// threeCauses are 12 failures of three causes: 6 timeouts to different
// addresses, 4 missing users by different quoted names, 2 of one text.
func threeCauses() []string {
	var errs []string
	for i := range 6 {
		errs = append(errs, fmt.Sprintf("dial tcp 10.0.%d.7:6379: i/o timeout after %ds", i, i+1))
	}
	for i := range 4 {
		errs = append(errs, fmt.Sprintf(`user "u%d-%s" not found`, i, strings.Repeat("x", i)))
	}
	return append(errs, "payment declined", "payment declined")
}

func testFailureGroupsSteps(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "groups")
	ids := failMany(t, q, "g", threeCauses())

	// Steps of 5 jobs: three calls, each cut short but the last.
	var all GroupPage
	calls := 0
	for cursor := ""; ; calls++ {
		g, err := q.FailureGroups(ctx, Filter{}, ScanOptions{Cursor: cursor, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if g.Scanned > 5 || g.Total != 12 {
			t.Fatalf("call %d read %d jobs of %d, want at most 5 of 12", calls, g.Scanned, g.Total)
		}
		if g.Reached.IsZero() {
			t.Errorf("call %d: Reached is zero, want the finish time of its last job", calls)
		}
		if calls == 0 {
			all = g
		} else {
			all.Merge(g)
		}
		if g.Next == "" {
			break
		}
		cursor = g.Next
	}
	if calls != 2 || all.Scanned != 12 || all.Matched != 12 || all.Next != "" {
		t.Fatalf("%d calls after the first, %d read, %d matched, next %q; want 2 more, 12, 12, done", calls, all.Scanned, all.Matched, all.Next)
	}
	want := []struct {
		fp    string
		count int
		last  string
	}{
		{"dial tcp <addr>: i/o timeout after <n>s", 6, ids[5]},
		{`user "<q>" not found`, 4, ids[9]},
		{"payment declined", 2, ids[11]},
	}
	if len(all.Groups) != len(want) {
		t.Fatalf("groups %+v, want %d", all.Groups, len(want))
	}
	for i, w := range want {
		g := all.Groups[i]
		if g.Fingerprint != w.fp || g.Count != w.count {
			t.Errorf("group %d: %q x%d, want %q x%d", i, g.Fingerprint, g.Count, w.fp, w.count)
		}
		// First and last seen are the group's earliest and latest finish
		// times; the example is the job that failed last.
		var first, last time.Time
		for _, id := range ids {
			j, err := q.Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if Fingerprint(j.LastError) != w.fp {
				continue
			}
			if first.IsZero() || j.FinishedAt.Before(first) {
				first = j.FinishedAt
			}
			if j.FinishedAt.After(last) {
				last = j.FinishedAt
			}
		}
		if !g.FirstSeen.Equal(first) || !g.LastSeen.Equal(last) {
			t.Errorf("group %q seen %v..%v, want %v..%v", g.Fingerprint, g.FirstSeen, g.LastSeen, first, last)
		}
		if j, err := q.Job(ctx, g.ExampleID); err != nil || !j.FinishedAt.Equal(last) || j.LastError != g.ExampleError {
			t.Errorf("group %q: example %q (%v), want a job that failed last in it, its error whole", g.Fingerprint, g.ExampleID, err)
		}
	}

	// One call that reads them all; a filter by name.
	one, err := q.FailureGroups(ctx, Filter{State: StateFailed}, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if one.Next != "" || len(one.Groups) != 3 || one.Groups[0].Count != 6 {
		t.Errorf("one call: %+v, want the three groups, to the end", one)
	}
	for _, g := range one.Groups {
		if g.ID != GroupID(g.Fingerprint) || len(g.ID) != 16 {
			t.Errorf("group %q: ID %q, want GroupID of its fingerprint", g.Fingerprint, g.ID)
		}
		if p, err := q.CountMatching(ctx, Filter{State: StateFailed, Group: g.ID}, ScanOptions{}); err != nil || p.Matched != g.Count {
			t.Errorf("CountMatching of group %s: %+v, %v; want %d", g.ID, p, err, g.Count)
		}
	}
	if g, err := q.FailureGroups(ctx, Filter{Error: "payment"}, ScanOptions{}); err != nil || len(g.Groups) != 1 || g.Groups[0].Count != 2 || g.Scanned != 12 {
		t.Errorf("groups of errors holding payment: %+v, %v; want one group of 2, 12 read", g, err)
	}
}

func testBulkRetryGroup(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "bulk-retry")
	ids := failMany(t, q, "r", threeCauses())
	f := Filter{State: StateFailed, Fingerprint: "dial tcp <addr>: i/o timeout after <n>s"}

	// The dry run's count, in steps.
	count := 0
	for cursor := ""; ; {
		p, err := q.CountMatching(ctx, f, ScanOptions{Cursor: cursor, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		count += p.Matched
		if cursor = p.Next; cursor == "" {
			break
		}
	}
	if count != 6 {
		t.Fatalf("CountMatching: %d, want the 6 timeouts", count)
	}
	// A job of the group moves on before the bulk reaches it: it is
	// skipped, not an error.
	if _, err := q.Delete(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	var steps []BulkProgress
	total, err := q.Bulk(ctx, BulkRetry, f, BulkOptions{ScanOptions: ScanOptions{Limit: 3}, Retry: RetryOptions{ResetAttempts: true}},
		func(p BulkProgress) { steps = append(steps, p) })
	if err != nil {
		t.Fatal(err)
	}
	if total.Done != 5 || total.Matched != 5 || total.Scanned != 11 || total.Next != "" {
		t.Errorf("Bulk retry: %+v, want 5 done of 11 read", total)
	}
	if len(steps) != 4 || steps[len(steps)-1].Done != 5 || steps[0].Next == "" {
		t.Errorf("progress %+v, want 4 steps of at most 3 jobs, the last with all 5 done", steps)
	}
	for i, id := range ids[1:] {
		j, err := q.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]State{true: StateWaiting, false: StateFailed}[i < 5]; j.State != want {
			t.Errorf("job %s (%q) is %v, want %v", id, j.LastError, j.State, want)
		}
		if i < 5 && j.Attempts != 0 {
			t.Errorf("job %s retried with attempts %d, want them reset", id, j.Attempts)
		}
	}
	if c, _ := q.Counts(ctx); c.Failed != 6 || c.Waiting != 5 {
		t.Errorf("counts %+v, want 6 failed, 5 waiting", c)
	}
}

func testBulkWaiting(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "bulk-wait")
	var keep, drop []string
	for i := range 20 {
		name := "keep"
		if i%3 != 0 {
			name = "drop"
		}
		id, err := q.Enqueue(ctx, nil, WithID(fmt.Sprintf("w%02d", i)), WithName(name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "keep" {
			keep = append(keep, id)
		} else {
			drop = append(drop, id)
		}
	}
	f := Filter{State: StateWaiting, Name: "drop"}
	if p, err := q.CountMatching(ctx, f, ScanOptions{}); err != nil || p.Matched != len(drop) || p.Total != 20 {
		t.Fatalf("count: %+v, %v; want %d of 20", p, err, len(drop))
	}
	// Steps of 4: a step whose jobs all leave keeps its cursor, and the
	// next reads on from the first job left in line.
	total, err := q.Bulk(ctx, BulkDelete, f, BulkOptions{ScanOptions: ScanOptions{Limit: 4}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if total.Done != len(drop) || total.Scanned != 20 {
		t.Errorf("Bulk delete: %+v, want %d done of 20 read", total, len(drop))
	}
	page, err := q.List(ctx, StateWaiting, ListOptions{OldestFirst: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(page.Jobs); !slices.Equal(got, keep) {
		t.Errorf("left waiting: %v, want %v", got, keep)
	}
	// Cancel the rest, one job per step: every step's jobs leave.
	total, err = q.Bulk(ctx, BulkCancel, Filter{State: StateWaiting}, BulkOptions{ScanOptions: ScanOptions{Limit: 1}}, nil)
	if err != nil || total.Done != len(keep) {
		t.Errorf("Bulk cancel: %+v, %v; want %d done", total, err, len(keep))
	}
	if c, _ := q.Counts(ctx); c.Waiting != 0 || c.Failed != int64(len(keep)) {
		t.Errorf("counts %+v, want none waiting, %d failed (cancelled)", c, len(keep))
	}
}

func testBulkWaitingCursorGone(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "bulk-gone")
	for i := range 10 {
		name := map[bool]string{true: "keep", false: "drop"}[i%2 == 0]
		if _, err := q.Enqueue(ctx, nil, WithID(fmt.Sprintf("w%02d", i)), WithName(name)); err != nil {
			t.Fatal(err)
		}
	}
	f := Filter{State: StateWaiting, Name: "drop"}
	step, err := q.BulkStep(ctx, BulkDelete, f, BulkOptions{ScanOptions: ScanOptions{Limit: 4}})
	if err != nil || step.Done != 2 || step.Next == "" {
		t.Fatalf("first step: %+v, %v; want 2 deleted of 4 read, a cursor", step, err)
	}
	// The cursor names w02, the last job read that stayed in line; a
	// worker takes it (here: it is deleted) before the next step.
	if _, err := q.Delete(ctx, "w02"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.CountMatching(ctx, f, ScanOptions{Cursor: step.Next}); !errors.Is(err, ErrCursorGone) {
		t.Errorf("a count from the gone cursor: %v, want ErrCursorGone", err)
	}
	done := step.Done
	for cursor := step.Next; cursor != ""; {
		step, err := q.BulkStep(ctx, BulkDelete, f, BulkOptions{ScanOptions: ScanOptions{Cursor: cursor, Limit: 4}})
		if err != nil {
			t.Fatalf("a step from the gone cursor: %v, want it to start again at the front", err)
		}
		done, cursor = done+step.Done, step.Next
	}
	page, err := q.List(ctx, StateWaiting, ListOptions{OldestFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(page.Jobs); done != 5 || !slices.Equal(got, []string{"w00", "w04", "w06", "w08"}) {
		t.Errorf("deleted %d, left %v; want 5 deleted, the kept ones but w02 left", done, got)
	}
}

func testBulkDelayed(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "bulk-delayed")
	base := time.Now()
	for i := range 10 {
		if _, err := q.Enqueue(ctx, nil, WithID(fmt.Sprintf("d%02d", i)), WithDelay(time.Duration(i+1)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// Those firing 3h..6h from now (d02..d05), by the time range.
	f := Filter{State: StateDelayed, From: base.Add(3*time.Hour - time.Minute), To: base.Add(6*time.Hour + time.Minute)}
	p, err := q.CountMatching(ctx, f, ScanOptions{})
	if err != nil || p.Matched != 4 || p.Scanned != 6 || p.Next != "" {
		t.Fatalf("count in range: %+v, %v; want 4 matched, 6 read (the list ends past the range)", p, err)
	}
	total, err := q.Bulk(ctx, BulkCancel, f, BulkOptions{ScanOptions: ScanOptions{Limit: 2}}, nil)
	if err != nil || total.Done != 4 {
		t.Fatalf("Bulk cancel: %+v, %v; want 4", total, err)
	}
	for i := range 10 {
		j, _ := q.Job(ctx, fmt.Sprintf("d%02d", i))
		if want := map[bool]State{true: StateFailed, false: StateDelayed}[i >= 2 && i <= 5]; j.State != want {
			t.Errorf("d%02d is %v, want %v", i, j.State, want)
		}
	}
	total, err = q.Bulk(ctx, BulkDelete, Filter{State: StateDelayed}, BulkOptions{}, nil)
	if err != nil || total.Done != 6 {
		t.Errorf("Bulk delete: %+v, %v; want 6", total, err)
	}
}

func testBulkBadInput(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "bulk-bad")
	for _, c := range []struct {
		a    BulkAction
		f    Filter
		o    ScanOptions
		want string
	}{
		{BulkRetry, Filter{State: StateWaiting}, ScanOptions{}, "retry does not apply to waiting jobs"},
		{BulkDelete, Filter{State: StateActive}, ScanOptions{}, "delete does not apply to active jobs"},
		{BulkCancel, Filter{State: StateCompleted}, ScanOptions{}, "cancel does not apply to completed jobs"},
		{BulkDelete, Filter{State: StateFailed}, ScanOptions{Limit: MaxScan + 1}, "Limit 20001 is out of range"},
		{BulkDelete, Filter{State: StateFailed}, ScanOptions{Cursor: "nope"}, "not a cursor"},
		{BulkDelete, Filter{State: StateFailed, From: time.Unix(10, 0), To: time.Unix(5, 0)}, ScanOptions{}, "is before Filter.From"},
		{BulkAction(9), Filter{State: StateFailed}, ScanOptions{}, "BulkAction(9) does not apply"},
	} {
		_, err := q.BulkStep(ctx, c.a, c.f, BulkOptions{ScanOptions: c.o})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("BulkStep(%v, %v, %+v): %v, want an error saying %q", c.a, c.f, c.o, err, c.want)
		}
	}
	if _, err := q.FailureGroups(ctx, Filter{State: StateDelayed}, ScanOptions{}); err == nil || !strings.Contains(err.Error(), "want StateFailed") {
		t.Errorf("FailureGroups of delayed jobs: %v, want an error", err)
	}
	if _, err := q.CountMatching(ctx, Filter{State: StateFailed}, ScanOptions{Cursor: encodeCursor(StateFailed, "asc", "1", "x")}); !errors.Is(err, ErrBadCursor) {
		t.Errorf("a cursor of the other order: %v, want ErrBadCursor", err)
	}
}

// TestFailureGroups100k measures, on the real Redis, one FailureGroups
// call (the most jobs a call reads by default) and one CountMatching
// call over 100,000 failed jobs of 50 causes, and a whole grouping of
// them. The times are logged, not asserted. It runs when
// REBOUND_GROUPS_SCALE is set (to the number of failed jobs, 100000 for
// the figures in docs/cli.md).
func TestFailureGroups100k(t *testing.T) {
	n := 0
	if _, err := fmt.Sscan(os.Getenv("REBOUND_GROUPS_SCALE"), &n); err != nil || n <= 0 {
		t.Skip("set REBOUND_GROUPS_SCALE=100000 to measure groups over that many failed jobs")
	}
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "scale", WithFailedRetention(7*24*time.Hour, 10_000_000))
	// The keys go by UNLINK, freed in the background: a DEL of a hash of
	// a million records would hold the shared Redis for a while. (This
	// cleanup runs before testenv's.)
	t.Cleanup(func() {
		iter := rdb.Scan(context.Background(), 0, prefix+"*", 1000).Iterator()
		for iter.Next(context.Background()) {
			rdb.Unlink(context.Background(), iter.Val())
		}
	})
	start := time.Now()
	fillFailed(t, q, n)
	t.Logf("failed %d jobs in %s", n, time.Since(start).Round(time.Millisecond))

	timed := func(what string, tries int, f func() error) {
		var worst, total time.Duration
		for range tries {
			s := time.Now()
			if err := f(); err != nil {
				t.Fatal(err)
			}
			d := time.Since(s)
			total, worst = total+d, max(worst, d)
		}
		t.Logf("%d failed jobs: %s: mean %s, worst %s (%d tries)", n, what, (total / time.Duration(tries)).Round(10*time.Microsecond), worst.Round(10*time.Microsecond), tries)
	}
	timed(fmt.Sprintf("one FailureGroups call reading %d jobs", DefaultScan), 5, func() error {
		_, err := q.FailureGroups(ctx, Filter{}, ScanOptions{})
		return err
	})
	timed(fmt.Sprintf("one CountMatching call by fingerprint reading %d jobs", DefaultScan), 5, func() error {
		_, err := q.CountMatching(ctx, Filter{State: StateFailed, Fingerprint: "dial tcp <addr>: i/o timeout after <n>s (cause <n>)"}, ScanOptions{})
		return err
	})
	var all GroupPage
	calls := 0
	timed("the whole failed set grouped, call after call", 1, func() error {
		for cursor := ""; ; calls++ {
			g, err := q.FailureGroups(ctx, Filter{}, ScanOptions{Cursor: cursor})
			if err != nil {
				return err
			}
			all.Merge(g)
			if cursor = g.Next; cursor == "" {
				return nil
			}
		}
	})
	if all.Scanned != n || len(all.Groups) != 1 {
		t.Errorf("grouped %d jobs into %d groups in %d calls, want %d into 1", all.Scanned, len(all.Groups), calls+1, n)
	}
	t.Logf("%d calls", calls+1)
	var done int
	timed(fmt.Sprintf("one BulkStep retrying the group's jobs, reading %d", DefaultBulkScan), 3, func() error {
		p, err := q.BulkStep(ctx, BulkRetry, Filter{State: StateFailed, Group: all.Groups[0].ID}, BulkOptions{})
		done += p.Done
		return err
	})
	if done != 3*DefaultBulkScan {
		t.Errorf("3 bulk steps retried %d jobs, want %d", done, 3*DefaultBulkScan)
	}
}

// fillFailed fails n jobs of one cause (dial timeouts to addresses and
// causes that differ, so that every fingerprint is folded) with a worker
// at concurrency 64.
func fillFailed(t *testing.T, q *Queue, n int) {
	t.Helper()
	ctx := context.Background()
	for from := 0; from < n; from += 10000 {
		batch := make([]EnqueueParams, 0, 10000)
		for i := from; i < min(n, from+10000); i++ {
			batch = append(batch, EnqueueParams{Payload: []byte("p"), Options: []EnqueueOption{WithID(fmt.Sprintf("j%07d", i)), WithName("scale"), WithMaxAttempts(1)}})
		}
		if _, err := q.EnqueueMany(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	w := startWorker(t, q, fixedRule(t, time.Millisecond, 1), func(_ context.Context, j *Job) error {
		return backoff.Permanent(fmt.Errorf("dial tcp 10.0.%d.%d:6379: i/o timeout after %dms (cause %d)", len(j.ID)%250, j.ID[len(j.ID)-1], len(j.ID)*7, j.ID[len(j.ID)-2]))
	}, WithConcurrency(64))
	for deadline := time.Now().Add(5*time.Minute + time.Duration(n)*time.Millisecond); ; {
		c, err := q.Counts(ctx)
		if err == nil && c.Failed == int64(n) {
			// Stopped, so that it neither loads Redis while the calls
			// are timed nor fails the jobs a bulk retry sends back.
			if err := w.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %+v failed, want %d", c, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
