package native

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

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
	states, problems := snapshotProblems(takeSnapshot(t, rdb, q))
	for i, p := range problems {
		if i == 20 {
			t.Errorf("... and %d more", len(problems)-20)
			break
		}
		t.Error(p)
	}
	return states
}

// snapshotProblems is checkInvariants over snapshot s: each job's state,
// and what breaks the invariants, sorted.
func snapshotProblems(s snapshot) (map[string]State, []string) {
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
	return states, problems
}

// operator runs every operator action on random jobs of q, again and
// again, until stopped: cancel, retry (resetting the attempts, so no job
// runs past its cap), run now, delete, retry the failed jobs named
// retryName, pause and resume, a page of each state, counts. Every
// checkEvery actions it checks the invariants on a snapshot.
type operator struct {
	q          *Queue
	rdb        redis.UniversalClient
	ids        []string
	retryName  string
	checkEvery int

	mu      sync.Mutex
	deleted map[string]bool
	applied map[string]int // action -> times it changed something
}

func (o *operator) start(t *testing.T, stop <-chan struct{}) <-chan struct{} {
	o.deleted, o.applied = map[string]bool{}, map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx := context.Background()
		r := rand.New(rand.NewPCG(7, 11))
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := o.ids[r.IntN(len(o.ids))]
			var err error
			action := []string{"cancel", "retry", "run now", "delete", "retry failed", "pause", "list", "counts"}[r.IntN(8)]
			applied := true
			switch action {
			case "cancel":
				_, err = o.q.Cancel(ctx, id)
			case "retry":
				err = o.q.Retry(ctx, id, RetryOptions{ResetAttempts: true})
			case "run now":
				err = o.q.RunNow(ctx, id)
			case "delete":
				if _, err = o.q.Delete(ctx, id); err == nil {
					o.mu.Lock()
					o.deleted[id] = true
					o.mu.Unlock()
				}
			case "retry failed":
				var n int
				n, err = o.q.RetryFailed(ctx, FailedFilter{Name: o.retryName}, RetryOptions{ResetAttempts: true})
				applied = n > 0
			case "pause":
				if err = o.q.Pause(ctx); err == nil {
					time.Sleep(time.Millisecond)
					err = o.q.Resume(ctx)
				}
			case "list":
				_, err = o.q.List(ctx, State(1+r.IntN(5)), ListOptions{Limit: 10, OldestFirst: r.IntN(2) == 0})
			case "counts":
				_, err = o.q.Counts(ctx)
			}
			if errors.Is(err, ErrWrongState) || errors.Is(err, ErrNotFound) {
				err, applied = nil, false
			}
			if err != nil {
				t.Errorf("%s %s: %v", action, id, err)
				return
			}
			if applied {
				o.mu.Lock()
				o.applied[action]++
				o.mu.Unlock()
			}
			if o.checkEvery > 0 && i%o.checkEvery == 0 {
				checkInvariants(t, o.rdb, o.q)
			}
		}
	}()
	return done
}

func (o *operator) deletedIDs() map[string]bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]bool, len(o.deleted))
	for id := range o.deleted {
		out[id] = true
	}
	return out
}

// summary says how often each action changed something.
func (o *operator) summary() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var parts []string
	for a, n := range o.applied {
		parts = append(parts, fmt.Sprintf("%s %d", a, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
