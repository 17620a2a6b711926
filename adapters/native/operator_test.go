package native

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	"github.com/rebound-go/rebound/reboundtest"
)

// operatorTests are the operator actions' tests. Each runs on the real
// Redis and miniredis (TestOperator) and on a three-master Cluster
// (TestOperatorCluster), each on queues of its own.
var operatorTests = []backendTest{
	{"ListSorted", testListSorted},
	{"ListTies", testListTies},
	{"ListWaiting", testListWaiting},
	{"ListBadInput", testListBadInput},
	{"Retry", testRetry},
	{"RetryFailed", testRetryFailed},
	{"RetryFailedSteps", testRetryFailedSteps},
	{"Delete", testDelete},
	{"RunNow", testRunNow},
	{"CancelWaiting", testCancelWaiting},
	{"CancelRunning", testCancelRunning},
	{"CancelBeforeRenewal", testCancelBeforeRenewal},
	{"Pause", testPause},
	{"ActionsWhileWorkersRun", testActionsWhileWorkersRun},
}

func TestOperator(t *testing.T) { runBackends(t, operatorTests) }

func TestOperatorCluster(t *testing.T) { runCluster(t, operatorTests, "rbt-op") }

// failJob enqueues a job named name (with opts) and fails its first
// attempt for good with text errText, through the worker's own fail
// script.
func failJob(t *testing.T, q *Queue, name, errText string, opts ...EnqueueOption) string {
	t.Helper()
	ctx := context.Background()
	id, err := q.Enqueue(ctx, []byte("p-"+name), append([]EnqueueOption{WithName(name)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	w := idle(t, q, fixedRule(t, time.Millisecond, 3))
	for {
		j, tok := reserveOne(t, w)
		res, err := w.fail(ctx, j.ID, tok, backoff.Decision{Outcome: backoff.OutcomePermanent}, 3, errText, keepMeta, false)
		if code := (tc{t}).code(res, err); code != 2 {
			t.Fatalf("fail %s: code %d, want 2 (failed)", j.ID, code)
		}
		if j.ID == id {
			return id
		}
		t.Fatalf("reserved job %s, want the fresh %s: the queue was not empty", j.ID, id)
	}
}

func ids(jobs []StoredJob) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// listAll pages through state with limit per page and returns every ID.
func listAll(t *testing.T, q *Queue, state State, limit int, oldest bool) []string {
	t.Helper()
	var all []string
	cursor := ""
	for range 1000 {
		p, err := q.List(context.Background(), state, ListOptions{Limit: limit, Cursor: cursor, OldestFirst: oldest})
		if err != nil {
			t.Fatalf("List(%s, cursor %q): %v", state, cursor, err)
		}
		if len(p.Jobs) > limit {
			t.Fatalf("List(%s) gave %d jobs, above the limit %d", state, len(p.Jobs), limit)
		}
		all = append(all, ids(p.Jobs)...)
		if p.Next == "" {
			return all
		}
		if len(p.Jobs) < limit {
			t.Fatalf("List(%s) gave a short page (%d of %d) with a next cursor", state, len(p.Jobs), limit)
		}
		cursor = p.Next
	}
	t.Fatal("List never reached its last page")
	return nil
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// Delayed jobs page by fire time, newest (latest) first or soonest first,
// each with its fire time and record but no payload; active jobs by lease
// deadline; failed jobs by finish time.
func testListSorted(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "list-sorted")
	var soonest []string
	for i := range 7 {
		id, err := q.Enqueue(ctx, []byte("payload"), WithID(fmt.Sprintf("d%d", i)), WithName("digest"),
			WithDelay(time.Duration(i+1)*time.Hour), WithMetadata(map[string]string{"k": "v"}))
		if err != nil {
			t.Fatal(err)
		}
		soonest = append(soonest, id)
	}
	for _, limit := range []int{1, 2, 3, 7, 100} {
		if got := listAll(t, q, StateDelayed, limit, true); !slices.Equal(got, soonest) {
			t.Errorf("limit %d, soonest first: %v, want %v", limit, got, soonest)
		}
		if got := listAll(t, q, StateDelayed, limit, false); !slices.Equal(got, reversed(soonest)) {
			t.Errorf("limit %d, newest first: %v, want %v", limit, got, reversed(soonest))
		}
	}
	p, err := q.List(ctx, StateDelayed, ListOptions{Limit: 2, OldestFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := q.Job(ctx, "d0")
	if err != nil {
		t.Fatal(err)
	}
	got := p.Jobs[0]
	if got.Payload != nil || got.Name != "digest" || got.State != StateDelayed || !got.NextFireAt.Equal(want.NextFireAt) ||
		!got.CreatedAt.Equal(want.CreatedAt) || got.Metadata["k"] != "v" {
		t.Errorf("listed job %+v, want %+v without its payload", got, want)
	}
	if got.NextFireAt.Before(time.Now().Add(50 * time.Minute)) {
		t.Errorf("listed job fires at %v, want about an hour from now", got.NextFireAt)
	}

	// Active jobs by lease deadline, each with its deadline.
	w := idle(t, q, fixedRule(t, time.Millisecond, 3))
	if err := q.RunNow(ctx, "d0"); err != nil {
		t.Fatal(err)
	}
	if err := q.RunNow(ctx, "d1"); err != nil {
		t.Fatal(err)
	}
	reserveOne(t, w)
	reserveOne(t, w)
	p, err = q.List(ctx, StateActive, ListOptions{})
	if err != nil || len(p.Jobs) != 2 || p.Next != "" {
		t.Fatalf("active jobs %v, next %q (%v); want d0 and d1 on one page", ids(p.Jobs), p.Next, err)
	}
	for _, j := range p.Jobs {
		if j.State != StateActive || j.LeaseDeadline.Before(time.Now()) || j.Attempts != 1 {
			t.Errorf("active job %+v: want state active, a lease deadline ahead and 1 attempt", j)
		}
	}

	// Failed jobs latest first, with their errors.
	f1 := failJob(t, q, "a", "first failure")
	time.Sleep(3 * time.Millisecond)
	f2 := failJob(t, q, "b", "second failure")
	p, err = q.List(ctx, StateFailed, ListOptions{})
	if err != nil || !slices.Equal(ids(p.Jobs), []string{f2, f1}) {
		t.Fatalf("failed jobs %v (%v), want %v", ids(p.Jobs), err, []string{f2, f1})
	}
	if p.Jobs[0].LastError != "second failure" || p.Jobs[0].FinishedAt.IsZero() || p.Jobs[0].Cancelled {
		t.Errorf("failed job %+v: want its error, its finish time, not cancelled", p.Jobs[0])
	}
	checkInvariants(t, rdb, q)
}

// Jobs of equal score page by ID, as Redis orders them, and a page goes
// on after its cursor's position even when that job left the set.
func testListTies(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "list-ties")
	var all []string
	for i := range 9 {
		id := fmt.Sprintf("t%d", i)
		if _, err := q.Enqueue(ctx, nil, WithID(id)); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
	}
	// Three finish times, three jobs each: ties within each.
	for i, id := range all {
		if err := rdb.ZAddXX(ctx, q.keys.failed, redis.Z{Score: float64(1_000_000 + i/3), Member: id}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{1, 2, 4} {
		if got := listAll(t, q, StateFailed, limit, true); !slices.Equal(got, all) {
			t.Errorf("limit %d, oldest first: %v, want %v", limit, got, all)
		}
		if got := listAll(t, q, StateFailed, limit, false); !slices.Equal(got, reversed(all)) {
			t.Errorf("limit %d, newest first: %v, want %v", limit, got, reversed(all))
		}
	}
	// The cursor's own job deleted between pages: the next page still
	// starts right after it.
	p, err := q.List(ctx, StateFailed, ListOptions{Limit: 4, OldestFirst: true})
	if err != nil || !slices.Equal(ids(p.Jobs), all[:4]) {
		t.Fatalf("first page %v (%v), want %v", ids(p.Jobs), err, all[:4])
	}
	if _, err := q.Delete(ctx, "t3"); err != nil {
		t.Fatal(err)
	}
	p, err = q.List(ctx, StateFailed, ListOptions{Limit: 4, OldestFirst: true, Cursor: p.Next})
	if err != nil || !slices.Equal(ids(p.Jobs), all[4:8]) {
		t.Fatalf("page after the deleted cursor job: %v (%v), want %v", ids(p.Jobs), err, all[4:8])
	}
	if all[0] != "t0" || !p.Jobs[0].Cancelled || p.Jobs[0].LastError != ErrCancelled.Error() {
		t.Errorf("cancelled job listed as %+v, want Cancelled and ErrCancelled's text", p.Jobs[0])
	}
}

// Waiting jobs page in run order (the due list, then the wait list) or
// its reverse; a cursor whose job left the lists is ErrCursorGone.
func testListWaiting(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "list-waiting")
	var wait, due []string
	for i := range 5 {
		id, err := q.Enqueue(ctx, nil, WithID(fmt.Sprintf("w%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		wait = append(wait, id)
	}
	for i := range 3 {
		id, err := q.Enqueue(ctx, nil, WithID(fmt.Sprintf("u%d", i)), WithDelay(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if err := q.RunNow(ctx, id); err != nil {
			t.Fatal(err)
		}
		due = append(due, id)
	}
	runOrder := append(slices.Clone(due), wait...)
	for _, limit := range []int{1, 2, 3, 8, 20} {
		if got := listAll(t, q, StateWaiting, limit, true); !slices.Equal(got, runOrder) {
			t.Errorf("limit %d, run order: %v, want %v", limit, got, runOrder)
		}
		if got := listAll(t, q, StateWaiting, limit, false); !slices.Equal(got, reversed(runOrder)) {
			t.Errorf("limit %d, newest first: %v, want %v", limit, got, reversed(runOrder))
		}
	}
	// A worker takes jobs from the front between pages: in run order the
	// page goes on where it was.
	p, err := q.List(ctx, StateWaiting, ListOptions{Limit: 4, OldestFirst: true})
	if err != nil || !slices.Equal(ids(p.Jobs), runOrder[:4]) {
		t.Fatalf("first page %v (%v), want %v", ids(p.Jobs), err, runOrder[:4])
	}
	w := idle(t, q, fixedRule(t, time.Millisecond, 3))
	reserveOne(t, w)
	reserveOne(t, w)
	p, err = q.List(ctx, StateWaiting, ListOptions{Limit: 4, OldestFirst: true, Cursor: p.Next})
	if err != nil || !slices.Equal(ids(p.Jobs), runOrder[4:8]) || p.Next != "" {
		t.Fatalf("second page %v, next %q (%v); want %v and no more", ids(p.Jobs), p.Next, err, runOrder[4:8])
	}
	// The cursor's job gone: the page cannot know where it was.
	p, err = q.List(ctx, StateWaiting, ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	last := p.Jobs[len(p.Jobs)-1].ID
	if _, err := q.Cancel(ctx, last); err != nil {
		t.Fatal(err)
	}
	_, err = q.List(ctx, StateWaiting, ListOptions{Limit: 2, Cursor: p.Next})
	if !errors.Is(err, ErrCursorGone) || !strings.Contains(err.Error(), last) {
		t.Errorf("page after a cursor whose job left: %v, want ErrCursorGone naming %s", err, last)
	}
	checkInvariants(t, rdb, q)
}

func testListBadInput(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "list-bad")
	for range 3 {
		if _, err := q.Enqueue(ctx, nil, WithDelay(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := q.List(ctx, StateDelayed, ListOptions{Limit: 1})
	if err != nil || p.Next == "" {
		t.Fatalf("first page: next %q, %v", p.Next, err)
	}
	for _, c := range []struct {
		state State
		opts  ListOptions
		is    error
		says  string
	}{
		{StateDelayed, ListOptions{Limit: -1}, nil, "Limit -1 is out of range, want 1..1000"},
		{StateDelayed, ListOptions{Limit: 1001}, nil, "Limit 1001 is out of range"},
		{State(9), ListOptions{}, nil, "State(9) is not a state"},
		{StateDelayed, ListOptions{Cursor: "not a cursor!"}, ErrBadCursor, "not a cursor List returned"},
		{StateDelayed, ListOptions{Cursor: encodeCursor(StateDelayed, "desc", "x", "id")}, ErrBadCursor, "not a cursor"},
		{StateFailed, ListOptions{Cursor: p.Next}, ErrBadCursor, "it pages delayed jobs newest first, not failed jobs newest first"},
		{StateDelayed, ListOptions{Cursor: p.Next, OldestFirst: true}, ErrBadCursor, "not delayed jobs oldest first"},
		{StateWaiting, ListOptions{Cursor: encodeCursor(StateWaiting, "desc", "elsewhere", "id")}, ErrBadCursor, "not a cursor"},
		{StateWaiting, ListOptions{Cursor: encodeCursor(StateWaiting, "desc", "wait", "nobody")}, ErrCursorGone, "list again from the first page"},
	} {
		_, err := q.List(ctx, c.state, c.opts)
		if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("List(%v, %+v) = %v, want an error saying %q (is %v)", c.state, c.opts, err, c.says, c.is)
		}
	}
}

// wantRefused checks that err is a StateError for action on id, found in
// state, and matches ErrWrongState.
func wantRefused(t *testing.T, err error, action, id string, state State) {
	t.Helper()
	var se *StateError
	if !errors.As(err, &se) || !errors.Is(err, ErrWrongState) || se.State != state || se.ID != id || se.Action != action {
		t.Errorf("%s %s: %v, want a *StateError (ErrWrongState) finding it %s", action, id, err, state)
	}
}

func wantNotFound(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("%s: %v, want ErrNotFound", what, err)
	}
}

// unchanged checks that the queue's keys are as they were.
func unchanged(t *testing.T, rdb redis.UniversalClient, q *Queue, before snapshot, what string) {
	t.Helper()
	after := takeSnapshot(t, rdb, q)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("%s changed the queue:\nbefore %v\nafter  %v", what, before, after)
	}
}

func testRetry(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "retry")
	kept := failJob(t, q, "a", "boom", WithMaxAttempts(2))
	reset := failJob(t, q, "b", "bang")
	if err := q.Retry(ctx, kept, RetryOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := q.Retry(ctx, reset, RetryOptions{ResetAttempts: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id       string
		attempts int
		err      string
	}{{kept, 1, "boom"}, {reset, 0, "bang"}} {
		j, err := q.Job(ctx, c.id)
		if err != nil || j.State != StateWaiting || j.Attempts != c.attempts || j.LastError != c.err || !j.FinishedAt.IsZero() {
			t.Errorf("retried job %+v (%v): want waiting, %d attempts, last error %q, no finish time", j, err, c.attempts, c.err)
		}
	}
	// They run again, in the order they were sent back, with their
	// attempts going on from where they were.
	w := idle(t, q, fixedRule(t, time.Millisecond, 3))
	j1, _ := reserveOne(t, w)
	j2, _ := reserveOne(t, w)
	if j1.ID != kept || j1.Attempt != 2 || j1.MaxAttempts != 2 || j2.ID != reset || j2.Attempt != 1 {
		t.Errorf("ran %s attempt %d of %d, then %s attempt %d; want %s attempt 2 of 2, then %s attempt 1",
			j1.ID, j1.Attempt, j1.MaxAttempts, j2.ID, j2.Attempt, kept, reset)
	}
	checkInvariants(t, rdb, q)

	// Bad input changes nothing.
	waiting, err := q.Enqueue(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := takeSnapshot(t, rdb, q)
	wantRefused(t, q.Retry(ctx, waiting, RetryOptions{}), "retry", waiting, StateWaiting)
	wantRefused(t, q.Retry(ctx, kept, RetryOptions{}), "retry", kept, StateActive)
	wantNotFound(t, q.Retry(ctx, "nope", RetryOptions{}), "retry of an unknown job")
	if err := q.Retry(ctx, "", RetryOptions{}); err == nil || !strings.Contains(err.Error(), "the job ID is empty") {
		t.Errorf("retry of \"\": %v, want an error saying the ID is empty", err)
	}
	unchanged(t, rdb, q, before, "refused retries")
	err = q.Retry(ctx, waiting, RetryOptions{})
	if want := fmt.Sprintf(`native: cannot retry job %q of queue "retry": it is waiting, want failed`, waiting); err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func testRetryFailed(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	failed := []struct{ name, err string }{
		{"email.send", "dial tcp 10.0.0.7:25: connection refused"},
		{"email.bounce", "smtp: 550 mailbox unavailable"},
		{"sms.send", "dial tcp 10.0.0.9:443: connection refused"},
		{"sms.send", "timeout after 5s"},
		{"email*", "literal star [a-z]%"},
	}
	for i, c := range []struct {
		f    FailedFilter
		want []int // indexes into failed
	}{
		{FailedFilter{Name: "email.*"}, []int{0, 1}},
		{FailedFilter{Error: "*connection refused"}, []int{0, 2}},
		{FailedFilter{Name: "sms.*", Error: "*refused*"}, []int{2}},
		{FailedFilter{Name: `email\*`}, []int{4}},
		{FailedFilter{Error: "*[a-z]%"}, []int{4}},
		{FailedFilter{Error: "timeout after ?s"}, []int{3}},
		{FailedFilter{Error: "*?s"}, []int{3}},
		{FailedFilter{Name: "email"}, nil},
		{FailedFilter{Error: "refused"}, nil},
		{FailedFilter{}, []int{0, 1, 2, 3, 4}},
	} {
		q := newQueue(t, rdb, prefix, fmt.Sprintf("retry-failed-%d", i))
		var ids []string
		for _, f := range failed {
			ids = append(ids, failJob(t, q, f.name, f.err))
		}
		n, err := q.RetryFailed(ctx, c.f, RetryOptions{ResetAttempts: i%2 == 0})
		if err != nil || n != len(c.want) {
			t.Errorf("RetryFailed(%+v) = %d, %v; want %d", c.f, n, err, len(c.want))
		}
		var want []string
		for _, k := range c.want {
			want = append(want, ids[k])
		}
		// The oldest failure first; failures of one millisecond by ID.
		got := listAll(t, q, StateWaiting, 100, true)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("RetryFailed(%+v) sent back %v, want %v", c.f, got, want)
		}
		for _, id := range want {
			j, _ := q.Job(ctx, id)
			if wantAttempts := map[bool]int{true: 0, false: 1}[i%2 == 0]; j.Attempts != wantAttempts || !j.FinishedAt.IsZero() {
				t.Errorf("retried job %+v: want %d attempts (reset: %v) and no finish time", j, wantAttempts, i%2 == 0)
			}
		}
		checkInvariants(t, rdb, q)
	}
	q := newQueue(t, rdb, prefix, "retry-failed-nul")
	if _, err := q.RetryFailed(ctx, FailedFilter{Name: "a\x00b"}, RetryOptions{}); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("a NUL in a pattern: %v, want an error", err)
	}
}

// RetryFailed works in bounded steps: by job count and by record bytes.
func testRetryFailedSteps(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "retry-steps", WithMaxPayload(4<<20))
	step, stepBytes := retryStep, retryStepBytes
	t.Cleanup(func() { retryStep, retryStepBytes = step, stepBytes })
	retryStep, retryStepBytes = 3, 1<<20
	const n = 11
	var want []string
	for i := range n {
		id := fmt.Sprintf("s%02d", i)
		payload := []byte("small")
		if i%4 == 1 {
			payload = make([]byte, 1<<20) // a step reads no more once past its bytes
		}
		if _, err := q.Enqueue(ctx, payload, WithID(id), WithName(fmt.Sprint(i%2))); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			want = append(want, id)
		}
	}
	// Every job on the same finish time: the steps page through ties.
	for i := range n {
		rdb.ZAddXX(ctx, q.keys.failed, redis.Z{Score: 5, Member: fmt.Sprintf("s%02d", i)})
	}
	got, err := q.RetryFailed(ctx, FailedFilter{Name: "1"}, RetryOptions{})
	if err != nil || got != len(want) {
		t.Fatalf("RetryFailed = %d, %v; want %d", got, err, len(want))
	}
	if waiting := listAll(t, q, StateWaiting, 100, true); !slices.Equal(waiting, want) {
		t.Errorf("waiting %v, want %v in the order they failed", waiting, want)
	}
	if got, err := q.RetryFailed(ctx, FailedFilter{}, RetryOptions{}); err != nil || got != n-len(want) {
		t.Errorf("RetryFailed of the rest = %d, %v; want %d", got, err, n-len(want))
	}
	checkInvariants(t, rdb, q)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := q.RetryFailed(cctx, FailedFilter{}, RetryOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("RetryFailed with an ended context: %v, want context.Canceled", err)
	}
}

func testDelete(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "delete")
	w := idle(t, q, fixedRule(t, time.Millisecond, 3))
	failed := failJob(t, q, "f", "boom")
	completed, _ := q.Enqueue(ctx, nil)
	cj, tok := reserveOne(t, w)
	if c := (tc{t}).code(w.complete(ctx, cj.ID, tok, keepMeta)); c != 1 || cj.ID != completed {
		t.Fatalf("complete %s: %d", cj.ID, c)
	}
	waiting, _ := q.Enqueue(ctx, nil)
	due, _ := q.Enqueue(ctx, nil, WithDelay(time.Hour))
	if err := q.RunNow(ctx, due); err != nil {
		t.Fatal(err)
	}
	delayed, _ := q.Enqueue(ctx, nil, WithDelay(time.Hour))
	checkInvariants(t, rdb, q)
	for _, c := range []struct {
		id string
		st State
	}{{waiting, StateWaiting}, {due, StateWaiting}, {delayed, StateDelayed}, {failed, StateFailed}, {completed, StateCompleted}} {
		was, err := q.Delete(ctx, c.id)
		if err != nil || was != c.st {
			t.Errorf("Delete(%s) = %v, %v; want %v", c.id, was, err, c.st)
		}
		_, err = q.Job(ctx, c.id)
		wantNotFound(t, err, "a deleted job")
	}
	running, _ := q.Enqueue(ctx, nil)
	reserveOne(t, w)
	checkInvariants(t, rdb, q)
	before := takeSnapshot(t, rdb, q)
	_, err := q.Delete(ctx, running)
	wantRefused(t, err, "delete", running, StateActive)
	_, err = q.Delete(ctx, waiting)
	wantNotFound(t, err, "deleting a deleted job")
	unchanged(t, rdb, q, before, "refused deletes")
	if c, err := q.Counts(ctx); err != nil || c.Waiting+c.Delayed+c.Failed+c.Completed != 0 || c.Active != 1 {
		t.Errorf("counts %+v (%v), want only the running job", c, err)
	}
}

func testRunNow(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "run-now")
	fresh, _ := q.Enqueue(ctx, nil)
	later, _ := q.Enqueue(ctx, nil, WithDelay(time.Hour))
	before := takeSnapshot(t, rdb, q)
	wantRefused(t, q.RunNow(ctx, fresh), "run now", fresh, StateWaiting)
	wantNotFound(t, q.RunNow(ctx, "nope"), "run now of an unknown job")
	unchanged(t, rdb, q, before, "refused run-nows")
	if err := q.RunNow(ctx, later); err != nil {
		t.Fatal(err)
	}
	if j, err := q.Job(ctx, later); err != nil || j.State != StateWaiting || !j.NextFireAt.IsZero() {
		t.Fatalf("job run now: %+v (%v), want waiting", j, err)
	}
	// Due jobs go before the wait list: the delayed job runs first.
	ran := make(chan string, 2)
	startWorker(t, q, fixedRule(t, time.Millisecond, 3), func(_ context.Context, j *Job) error {
		ran <- j.ID
		return nil
	}, WithConcurrency(1))
	for _, want := range []string{later, fresh} {
		select {
		case id := <-ran:
			if id != want {
				t.Errorf("ran %s, want %s (a job run now goes before the wait list)", id, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("job run now never ran")
		}
	}
	waitState(t, q, later, StateCompleted, 5*time.Second)
	wantRefused(t, q.RunNow(ctx, later), "run now", later, StateCompleted)
}

func testCancelWaiting(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "cancel-waiting")
	retrying := failJobRetry(t, q)
	waiting, _ := q.Enqueue(ctx, []byte("w"))
	delayed, _ := q.Enqueue(ctx, []byte("d"), WithDelay(time.Hour))
	for id, was := range map[string]State{waiting: StateWaiting, delayed: StateDelayed, retrying: StateDelayed} {
		got, err := q.Cancel(ctx, id)
		if err != nil || got != was {
			t.Errorf("Cancel(%s) = %v, %v; want %v", id, got, err, was)
		}
		j, err := q.Job(ctx, id)
		if err != nil || j.State != StateFailed || !j.Cancelled || j.LastError != ErrCancelled.Error() || j.FinishedAt.IsZero() {
			t.Errorf("cancelled job %+v (%v): want failed, Cancelled, ErrCancelled's text", j, err)
		}
	}
	if j, _ := q.Job(ctx, retrying); j.Attempts != 1 {
		t.Errorf("cancelled retry has %d attempts, want the 1 it used", j.Attempts)
	}
	checkInvariants(t, rdb, q)
	before := takeSnapshot(t, rdb, q)
	_, err := q.Cancel(ctx, waiting)
	wantRefused(t, err, "cancel", waiting, StateFailed)
	_, err = q.Cancel(ctx, "nope")
	wantNotFound(t, err, "cancel of an unknown job")
	unchanged(t, rdb, q, before, "refused cancels")
	// Nothing runs them; a retry brings one back.
	ran := make(chan string, 3)
	startWorker(t, q, fixedRule(t, time.Millisecond, 3), func(_ context.Context, j *Job) error {
		ran <- j.ID
		return nil
	})
	if err := q.Retry(ctx, delayed, RetryOptions{}); err != nil {
		t.Fatal(err)
	}
	waitState(t, q, delayed, StateCompleted, 5*time.Second)
	if id := <-ran; id != delayed {
		t.Errorf("ran %s, want only the retried %s", id, delayed)
	}
	select {
	case id := <-ran:
		t.Errorf("cancelled job %s ran", id)
	default:
	}
	_, err = q.Cancel(ctx, delayed)
	wantRefused(t, err, "cancel", delayed, StateCompleted)
}

// failJobRetry enqueues a job and fails its first attempt with a retry an
// hour away.
func failJobRetry(t *testing.T, q *Queue) string {
	t.Helper()
	id, err := q.Enqueue(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := idle(t, q, fixedRule(t, time.Millisecond, 3))
	j, tok := reserveOne(t, w)
	if j.ID != id {
		t.Fatalf("reserved %s, want %s", j.ID, id)
	}
	res, err := w.fail(context.Background(), id, tok, backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: time.Hour}, 3, "later", keepMeta, false)
	if c := (tc{t}).code(res, err); c != 1 {
		t.Fatalf("fail: code %d, want 1 (retry)", c)
	}
	return id
}

// errorsSeen records what the error handler is told.
type errorsSeen struct {
	mu  sync.Mutex
	got []error
}

func (e *errorsSeen) handle(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, err)
}

func (e *errorsSeen) list() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

// Cancelling a running job fails it at once; its worker cancels the
// handler's context and tells its observer and give-up hook the job ended,
// permanent, with ErrCancelled; it reports no lost lease, and what the
// handler returns changes nothing. An idle worker learns of it at once
// (its lease of an hour would renew only after 20 minutes); a worker whose
// slots are all busy, reserving nothing, at its next lease renewal.
func testCancelRunning(t *testing.T, rdb redis.UniversalClient, prefix string) {
	for _, c := range []struct {
		name string
		opts []WorkerOption
	}{
		{"idle worker", []WorkerOption{WithLease(time.Hour), WithConcurrency(4)}},
		{"busy worker", []WorkerOption{WithLease(600 * time.Millisecond), WithConcurrency(1)}},
	} {
		t.Run(c.name, func(t *testing.T) { cancelRunning(t, rdb, prefix, c.opts) })
	}
}

func cancelRunning(t *testing.T, rdb redis.UniversalClient, prefix string, opts []WorkerOption) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "cancel-running-"+t.Name())
	rec := &reboundtest.Recorder{}
	seen := &errorsSeen{}
	started, gone := make(chan struct{}), make(chan struct{})
	cause := make(chan error, 1)
	w, err := NewWorker(q, fixedRule(t, time.Millisecond, 3), func(ctx context.Context, j *Job) error {
		close(started)
		select {
		case <-ctx.Done():
		case <-gone: // the test failed: do not hold its shutdown
		}
		cause <- context.Cause(ctx)
		return nil // a success after the cancel changes nothing
	}, append([]WorkerOption{WithObserver(rec), WithGiveUp(rec.GiveUp), WithErrorHandler(seen.handle)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
	t.Cleanup(func() { close(gone) })
	id, _ := q.Enqueue(ctx, nil, WithName("long"))
	<-started
	was, err := q.Cancel(ctx, id)
	if err != nil || was != StateActive {
		t.Fatalf("Cancel = %v, %v; want active", was, err)
	}
	if j, err := q.Job(ctx, id); err != nil || j.State != StateFailed || !j.Cancelled || j.Attempts != 1 {
		t.Errorf("job right after the cancel: %+v (%v); want failed, cancelled, 1 attempt", j, err)
	}
	select {
	case c := <-cause:
		if !errors.Is(c, ErrCancelled) {
			t.Errorf("handler's context cancelled with %v, want ErrCancelled", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context was never cancelled")
	}
	evs := waitEnded(t, rec, id, 1)
	end := evs[len(evs)-1]
	if !errors.Is(end.Result.Err, ErrCancelled) || end.Result.Decision.Outcome != backoff.OutcomePermanent || !end.Result.Counts() {
		t.Errorf("observer told %+v, want a counted permanent failure with ErrCancelled", end.Result)
	}
	// The engine's cancel reads as every adapter tells it: an
	// *observe.CancelledError with the text the queue stored.
	var ce *observe.CancelledError
	if j, err := q.Job(ctx, id); err != nil || !errors.As(end.Result.Err, &ce) || !errors.Is(end.Result.Err, observe.ErrCancelled) || end.Result.Err.Error() != j.LastError {
		t.Errorf("observer told error %T %v, want an *observe.CancelledError reading the stored last error (%v)", end.Result.Err, end.Result.Err, err)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if g := rec.GiveUps(); len(g) != 1 || g[0].Outcome != backoff.OutcomePermanent || !errors.Is(g[0].Err, ErrCancelled) || !errors.As(g[0].Err, &ce) || g[0].Attempt.JobID != id {
		t.Errorf("give-up hook told %+v, want once, permanent, ErrCancelled", g)
	}
	if errs := seen.list(); len(errs) > 0 {
		t.Errorf("error handler told %v, want nothing (a cancel is no lost lease)", errs)
	}
	if n, p := len(rec.Job(id)), rec.Problems(); n != 1 || len(p) > 0 {
		t.Errorf("observer saw %d attempts (problems %q), want one, ended once:\n%s", n, p, rec.Story(id))
	}
	if j, _ := q.Job(ctx, id); j.State != StateFailed || !j.Cancelled {
		t.Errorf("job after its handler returned: %+v, want still failed and cancelled", j)
	}
	checkInvariants(t, rdb, q)
}

// A handler that returns before its worker's renewal learns of the cancel
// finds its outcome refused; the worker then tells the cancel, not a lost
// lease, once.
func testCancelBeforeRenewal(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "cancel-early")
	for _, outcome := range []error{nil, errors.New("failed anyway")} {
		rec := &reboundtest.Recorder{}
		seen := &errorsSeen{}
		started, release := make(chan struct{}), make(chan struct{})
		w, err := NewWorker(q, fixedRule(t, time.Millisecond, 3), func(ctx context.Context, j *Job) error {
			close(started)
			<-release
			return outcome
		}, WithObserver(rec), WithGiveUp(rec.GiveUp), WithErrorHandler(seen.handle), WithLease(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		id, _ := q.Enqueue(ctx, nil)
		<-started
		if _, err := q.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		close(release)
		evs := waitEnded(t, rec, id, 1)
		if r := evs[len(evs)-1].Result; !errors.Is(r.Err, ErrCancelled) || r.Decision.Outcome != backoff.OutcomePermanent {
			t.Errorf("handler returned %v: observer told %+v, want permanent with ErrCancelled", outcome, r)
		}
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if g := rec.GiveUps(); len(g) != 1 {
			t.Errorf("give-up hook called %d times, want once", len(g))
		}
		if errs := seen.list(); len(errs) > 0 {
			t.Errorf("error handler told %v, want nothing", errs)
		}
		if j, _ := q.Job(ctx, id); j.State != StateFailed || !j.Cancelled {
			t.Errorf("job %+v, want failed and cancelled", j)
		}
	}
	checkInvariants(t, rdb, q)
}

// A paused queue hands out no job; running jobs finish, enqueues and
// promotions go on; resumed, it runs everything.
func testPause(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "pause")
	var mu sync.Mutex
	ran := map[string]int{}
	started, release := make(chan string, 10), make(chan struct{})
	startWorker(t, q, fixedRule(t, time.Millisecond, 3), func(_ context.Context, j *Job) error {
		mu.Lock()
		ran[j.ID]++
		mu.Unlock()
		if j.Name == "slow" {
			started <- j.ID
			<-release
		}
		return nil
	}, WithConcurrency(4))
	slow, _ := q.Enqueue(ctx, nil, WithName("slow"))
	<-started
	if err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Pause(ctx); err != nil { // twice is once
		t.Fatal(err)
	}
	if p, err := q.Paused(ctx); !p || err != nil {
		t.Fatalf("Paused = %v, %v; want true", p, err)
	}
	var fresh []string
	for range 5 {
		id, err := q.Enqueue(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		fresh = append(fresh, id)
	}
	soon, _ := q.Enqueue(ctx, nil, WithDelay(50*time.Millisecond))
	close(release)
	waitState(t, q, slow, StateCompleted, 5*time.Second) // a running job finishes
	// The delayed job becomes due and is promoted, but nothing runs.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := q.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Delayed == 0 && c.Waiting == 6 && c.Paused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("counts %+v; want the delayed job promoted, 6 waiting, paused", c)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	if len(ran) != 1 {
		t.Errorf("a paused queue ran %v, want only the job running when it paused", ran)
	}
	mu.Unlock()
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if p, err := q.Paused(ctx); p || err != nil {
		t.Fatalf("Paused after Resume = %v, %v; want false", p, err)
	}
	for _, id := range append(fresh, soon) {
		waitState(t, q, id, StateCompleted, 10*time.Second)
	}
	if err := q.Resume(ctx); err != nil { // resuming a running queue changes nothing
		t.Fatal(err)
	}
	mu.Lock()
	for id, n := range ran {
		if n != 1 {
			t.Errorf("job %s ran %d times, want once", id, n)
		}
	}
	mu.Unlock()
	checkInvariants(t, rdb, q)
}

// Every action, run again and again while workers run jobs that fail half
// the time, with the invariants checked on a snapshot after each: every
// job is in exactly one state at every instant, and at the end none is
// lost (each is completed or failed, or deleted by an action). Under
// -race, the actions and the workers share nothing unsafe.
func testActionsWhileWorkersRun(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	q := newQueue(t, rdb, prefix, "busy")
	const jobs = 300
	rule, err := backoff.NewRule(backoff.Must(backoff.Fixed(2*time.Millisecond)), 3)
	if err != nil {
		t.Fatal(err)
	}
	h := func(ctx context.Context, j *Job) error {
		if j.Attempt%2 == 1 {
			return errors.New("odd attempt")
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
		return nil
	}
	for range 2 {
		startWorker(t, q, rule, h, WithConcurrency(8), WithLease(time.Second))
	}
	var all []string
	for i := range jobs {
		opts := []EnqueueOption{WithName(fmt.Sprintf("kind%d", i%3))}
		if i%4 == 0 {
			opts = append(opts, WithDelay(time.Duration(i%50)*time.Millisecond))
		}
		id, err := q.Enqueue(ctx, nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
	}
	op := &operator{q: q, rdb: rdb, ids: all, retryName: "kind1", checkEvery: 1}
	stop := make(chan struct{})
	done := op.start(t, stop)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	<-done
	deleted := op.deletedIDs()
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	// Settle: everything not deleted ends completed or failed.
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := q.Counts(ctx)
		if err == nil && c.Waiting+c.Active+c.Delayed == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs never settled: %+v (%v)", c, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	states := checkInvariants(t, rdb, q)
	for _, id := range all {
		st, ok := states[id]
		switch {
		case deleted[id] && ok:
			t.Errorf("deleted job %s is %v", id, st)
		case !deleted[id] && !ok:
			t.Errorf("job %s is lost: in no state, and no action deleted it", id)
		}
	}
	t.Logf("%d jobs; actions: %s", jobs, op.summary())
}
