package native

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/redis/go-redis/v9"
)

// snapshot is every key of a queue, read in one transaction: a single
// instant, even while workers run.
type snapshot struct {
	wait, due                          []string
	active, delayed, failed, completed []string
	jobs                               map[string]string
}

func takeSnapshot(t testing.TB, rdb redis.UniversalClient, q *Queue) snapshot {
	t.Helper()
	ctx := context.Background()
	k := q.keys
	var wait, due, active, delayed, failed, completed *redis.StringSliceCmd
	var jobs *redis.MapStringStringCmd
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		wait = p.LRange(ctx, k.wait, 0, -1)
		due = p.LRange(ctx, k.due, 0, -1)
		active = p.ZRange(ctx, k.active, 0, -1)
		delayed = p.ZRange(ctx, k.delayed, 0, -1)
		failed = p.ZRange(ctx, k.failed, 0, -1)
		completed = p.ZRange(ctx, k.completed, 0, -1)
		jobs = p.HGetAll(ctx, k.jobs)
		return nil
	}); err != nil {
		t.Errorf("snapshot of queue %q: %v", q.name, err) // not Fatal: callers run in goroutines too
	}
	return snapshot{wait.Val(), due.Val(), active.Val(), delayed.Val(), failed.Val(), completed.Val(), jobs.Val()}
}

// checkInvariants checks, over one snapshot of q's keys, that every job is
// in exactly one state: each ID on at most one list or set and at most
// once, each with a record, each record in exactly one place; that the
// record holds a lease token exactly while the job is active; and that
// only completed and failed jobs carry a finish time. It returns each
// job's state.
func checkInvariants(t testing.TB, rdb redis.UniversalClient, q *Queue) map[string]State {
	t.Helper()
	s := takeSnapshot(t, rdb, q)
	where := map[string][]string{}
	for _, c := range []struct {
		name string
		ids  []string
	}{{"wait", s.wait}, {"due", s.due}, {"active", s.active}, {"delayed", s.delayed}, {"failed", s.failed}, {"completed", s.completed}} {
		for _, id := range c.ids {
			where[id] = append(where[id], c.name)
		}
	}
	states := map[string]State{}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	for id, places := range where {
		if len(places) > 1 {
			bad("job %q is in %v: in two states at once", id, places)
			continue
		}
		stored, ok := s.jobs[id]
		if !ok {
			bad("job %q is on %s but has no record", id, places[0])
			continue
		}
		r, err := decodeRecord(stored)
		if err != nil {
			bad("job %q: %v", id, err)
			continue
		}
		st := map[string]State{"wait": StateWaiting, "due": StateWaiting, "active": StateActive, "delayed": StateDelayed,
			"failed": StateFailed, "completed": StateCompleted}[places[0]]
		states[id] = st
		if (r.tok != "") != (st == StateActive) {
			bad("job %q is %s with lease token %q: a token is held exactly while a job is active", id, st, r.tok)
		}
		if (r.finished != 0) != (st == StateCompleted || st == StateFailed) {
			bad("job %q is %s with finish time %d: only completed and failed jobs have one", id, st, r.finished)
		}
	}
	for id := range s.jobs {
		if _, ok := where[id]; !ok {
			bad("job %q has a record but is on no list and in no set: lost", id)
		}
	}
	sort.Strings(problems)
	for i, p := range problems {
		if i == 20 {
			t.Errorf("... and %d more", len(problems)-20)
			break
		}
		t.Error(p)
	}
	return states
}
