package native

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// The Queue methods of a sharded queue: each action on one job goes to the
// job's shard (shardFor, in the methods themselves); what reads or acts on
// the whole queue runs on every shard, here.

// shardNote names q's shard in an error, when q is one: "" for a queue of
// one shard.
func (q *Queue) shardNote() string {
	if q.tag == "" || q.tag == escapeTag(q.name) {
		return ""
	}
	return fmt.Sprintf(" (shard %d, tag %q)", q.shard, q.tag)
}

// onShards runs f on every shard of shards at once (each on its own
// master, most likely) and returns their errors joined, nil when none
// failed.
func onShards(shards []*Queue, f func(i int, s *Queue) error) error {
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, s := range shards {
		wg.Go(func() { errs[i] = f(i, s) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// enqueueManyShards stores the prepared jobs of an EnqueueMany call, each
// on its shard: every shard's jobs in the order given, in its own calls,
// the shards at once. A shard whose call fails stops there (its later jobs
// carry the error too); the other shards go on.
//
// A shard that refuses the queue's layout as stale (a change of N) stores
// nothing of its call: the queue reads the layout again and sends those
// jobs, and every later one of that shard, where the new layout puts them.
func (q *Queue) enqueueManyShards(ctx context.Context, prepared []preparedJob, results []EnqueueResult) error {
	todo := make([]int, len(prepared)) // indices of prepared still to send
	for i := range todo {
		todo[i] = i
	}
	v := q.view()
	var failed error // the errors of shards that did not refuse as stale
	for round := 0; ; round++ {
		jobs := make([][]preparedJob, len(v.cur))
		at := make([][]int, len(v.cur))
		for _, i := range todo {
			s := shardIndex(prepared[i].id, len(v.cur))
			jobs[s] = append(jobs[s], prepared[i])
			at[s] = append(at[s], i)
		}
		errs := make([]error, len(v.cur))
		_ = onShards(v.cur, func(i int, s *Queue) error {
			if len(jobs[i]) == 0 {
				return nil
			}
			js, ats, err := s.dedupeAcross(ctx, v, jobs[i], at[i], results)
			if err == nil {
				err = s.storeMany(ctx, js, ats, results)
			}
			errs[i] = err
			return nil
		})
		stale := false
		for _, err := range errs {
			if isStale(err) && round < staleRetries {
				stale = true
			} else {
				failed = errors.Join(failed, err)
			}
		}
		if !stale {
			return failed
		}
		todo = todo[:0]
		for i := range results {
			if isStale(results[i].Err) {
				results[i].Err = nil
				todo = append(todo, i)
			}
		}
		var err error
		if v, err = q.reload(ctx); err != nil {
			for _, i := range todo {
				results[i].Err = err
			}
			return errors.Join(failed, err)
		}
	}
}

// staleRetries is how many times an enqueue refused as stale reads the
// layout again and resends: a change of N at a time, so one suffices
// unless changes follow each other faster than an enqueue.
const staleRetries = 3

// isStale reports whether err is a shard's refusal of a producer holding
// an older layout (lua/lib/fence.lua), which stored nothing.
func isStale(err error) bool {
	return err != nil && strings.Contains(err.Error(), "STALELAYOUT ")
}

// dedupeAcross keeps WithID idempotent while a change of N drains: a job
// whose ID the previous layout puts on another shard than s is refused
// (as ErrJobExists) when that shard holds it, checked before s stores the
// rest. It is two scripts on two slots, so an enqueue of the same ID
// under the old layout racing this one is not seen; the fence refuses
// those once the change is written (see docs/native.md, "Changing N").
// It returns jobs and at without the jobs it refused, which it marks in
// results.
func (s *Queue) dedupeAcross(ctx context.Context, v *shardView, jobs []preparedJob, at []int, results []EnqueueResult) ([]preparedJob, []int, error) {
	if v.prev == nil {
		return jobs, at, nil
	}
	var keptJobs []preparedJob
	var keptAt []int
	for k := range jobs {
		old := v.prev[shardIndex(jobs[k].id, len(v.prev))]
		held := false
		if old.tag != s.tag {
			var err error
			if held, err = s.rdb.HExists(ctx, old.keys.jobs, jobs[k].id).Result(); err != nil {
				return nil, nil, fmt.Errorf("native: enqueue on queue %q: look for job %q on its shard of the previous layout%s: %w", s.name, jobs[k].id, old.shardNote(), err)
			}
		}
		if held {
			results[at[k]].Err = s.exists(jobs[k].id)
			continue
		}
		keptJobs = append(keptJobs, jobs[k])
		keptAt = append(keptAt, at[k])
	}
	return keptJobs, keptAt, nil
}

// holder returns the shard of the sharded queue v that holds the job id:
// the one its ID hashes to under the layout, else (a job of the previous
// layout, or enqueued by a process that opened the queue with NewQueue)
// whichever shard holds it, else the layout's (whose action then finds no
// such job).
func (q *Queue) holder(ctx context.Context, id string) (*Queue, error) {
	v := q.view()
	first := q.shardFor(id)
	found, err := q.rdb.HExists(ctx, first.keys.jobs, id).Result()
	if err != nil || found {
		return first, err
	}
	held := make([]bool, len(v.all))
	err = onShards(v.all, func(i int, s *Queue) error {
		if s == first {
			return nil
		}
		var err error
		held[i], err = s.rdb.HExists(ctx, s.keys.jobs, id).Result()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("native: queue %q: look for job %q on every shard: %w", q.name, id, err)
	}
	for i, h := range held {
		if h {
			return v.all[i], nil
		}
	}
	return first, nil
}

// countShards adds up the counts of every shard. The queue counts as
// paused when any shard is (a Pause that failed on some shard shows).
func (q *Queue) countShards(ctx context.Context) (Counts, error) {
	shards := q.parts()
	counts := make([]Counts, len(shards))
	err := onShards(shards, func(i int, s *Queue) error {
		var err error
		counts[i], err = s.Counts(ctx)
		return err
	})
	if err != nil {
		return Counts{}, err
	}
	var c Counts
	for _, x := range counts {
		c.Waiting += x.Waiting
		c.Active += x.Active
		c.Delayed += x.Delayed
		c.Completed += x.Completed
		c.Failed += x.Failed
		c.Paused = c.Paused || x.Paused
	}
	return c, nil
}

// promoteShards promotes the due jobs of every shard.
func (q *Queue) promoteShards(ctx context.Context) (int, error) {
	shards := q.parts()
	n := make([]int, len(shards))
	err := onShards(shards, func(i int, s *Queue) error {
		var err error
		n[i], err = s.Promote(ctx)
		return err
	})
	return sum(n), err
}

// retryFailedShards runs RetryFailed on every shard.
func (q *Queue) retryFailedShards(ctx context.Context, f FailedFilter, o RetryOptions) (int, error) {
	shards := q.parts()
	n := make([]int, len(shards))
	err := onShards(shards, func(i int, s *Queue) error {
		var err error
		n[i], err = s.RetryFailed(ctx, f, o)
		return err
	})
	return sum(n), err
}

func sum(n []int) int {
	t := 0
	for _, x := range n {
		t += x
	}
	return t
}

// eachShard runs f (Pause, Resume) on every shard. On an error some shards
// may have changed and others not; the call is safe to repeat.
func (q *Queue) eachShard(ctx context.Context, f func(*Queue, context.Context) error) error {
	return onShards(q.parts(), func(_ int, s *Queue) error { return f(s, ctx) })
}

// pausedShards reports whether any shard is paused.
func (q *Queue) pausedShards(ctx context.Context) (bool, error) {
	c, err := q.countShards(ctx)
	return c.Paused, err
}

// Cursors of a sharded queue. A List cursor holds one cursor per shard
// ("M|c0,c1,...", each as the shard's own List would give it, "" for the
// shard's start, "-" once it has no more); a scan's (CountMatching,
// FailureGroups, BulkStep) the shard it reached and the cursor within it
// ("S|i|c"): scans read the shards one after the other.

// encodeShardsCursor encodes a List cursor of a sharded queue.
func encodeShardsCursor(subs []string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("M|" + strings.Join(subs, ",")))
}

// decodeShardsCursor decodes a List cursor of a sharded queue of n shards.
func decodeShardsCursor(c string, n int) ([]string, error) {
	subs := make([]string, n)
	if c == "" {
		return subs, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(raw), "M|") {
		return nil, fmt.Errorf("%w: not a cursor List returned (cursor %q)", ErrBadCursor, c)
	}
	f := strings.Split(string(raw[2:]), ",")
	if len(f) != n {
		return nil, fmt.Errorf("%w: it pages %d shards, the queue has %d (cursor %q)", ErrBadCursor, len(f), n, c)
	}
	return f, nil
}

// encodeScanCursor encodes a scan cursor of a sharded queue: shard i,
// within it sub.
func encodeScanCursor(i int, sub string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("S|" + strconv.Itoa(i) + "|" + sub))
}

// decodeScanCursor decodes a scan cursor of a sharded queue of n shards.
func decodeScanCursor(c string, n int) (int, string, error) {
	if c == "" {
		return 0, "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	f := strings.SplitN(string(raw), "|", 3)
	if err != nil || len(f) != 3 || f[0] != "S" {
		return 0, "", fmt.Errorf("%w: not a cursor a scan of this queue returned (cursor %q)", ErrBadCursor, c)
	}
	i, err := strconv.Atoi(f[1])
	if err != nil || i < 0 || i >= n {
		return 0, "", fmt.Errorf("%w: it names shard %s, the queue has %d (cursor %q)", ErrBadCursor, f[1], n, c)
	}
	return i, f[2], nil
}

// listShards lists a page of a sharded queue's jobs in state: a page of
// each shard from its own cursor, merged in the order List gives (by the
// time of the state's sorted set, ties broken by shard; waiting jobs due
// ones first, then the shards' pages taken in turn), cut at the limit.
func (q *Queue) listShards(ctx context.Context, state State, opts ListOptions) (Page, error) {
	limit, order, err := listArgs(state, opts)
	if err != nil {
		return Page{}, err
	}
	shards := q.parts()
	subs, err := decodeShardsCursor(opts.Cursor, len(shards))
	if err != nil {
		return Page{}, err
	}
	type page struct {
		jobs  []StoredJob
		where []string
		more  bool
		took  int
	}
	pages := make([]page, len(shards))
	err = onShards(shards, func(i int, s *Queue) error {
		if subs[i] == "-" {
			return nil
		}
		var at, after string
		if subs[i] != "" {
			var err error
			if at, after, err = decodeCursor(subs[i], state, order); err != nil {
				return err
			}
		}
		p := &pages[i]
		var err error
		p.jobs, p.where, p.more, err = s.page(ctx, state, limit, order, at, after)
		return err
	})
	if err != nil {
		return Page{}, err
	}
	// before reports whether the next job of shard a comes before that of
	// shard b in the page's order.
	before := func(a, b int) bool {
		pa, pb := &pages[a], &pages[b]
		wa, wb := pa.where[pa.took], pb.where[pb.took]
		if state == StateWaiting {
			if wa != wb {
				return wa == "due" // the due list runs before the wait list
			}
			return pa.took < pb.took || pa.took == pb.took && a < b
		}
		sa, _ := strconv.ParseFloat(wa, 64)
		sb, _ := strconv.ParseFloat(wb, 64)
		if state == StateDelayed { // a fire time's place within its ms is the shard's own
			sa, sb = float64(int64(sa)/0x1000), float64(int64(sb)/0x1000)
		}
		if sa != sb {
			return (sa < sb) == (order == "asc")
		}
		return a < b
	}
	var out Page
	for len(out.Jobs) < limit {
		best := -1
		for i := range pages {
			if pages[i].took < len(pages[i].jobs) && (best < 0 || before(i, best)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out.Jobs = append(out.Jobs, pages[best].jobs[pages[best].took])
		pages[best].took++
	}
	next := make([]string, len(shards))
	left := false
	for i := range pages {
		p := &pages[i]
		switch {
		case subs[i] == "-":
			next[i] = "-"
		case p.took < len(p.jobs):
			next[i] = subs[i] // unchanged when none was taken
			if p.took > 0 {
				next[i] = encodeCursor(state, order, p.where[p.took-1], p.jobs[p.took-1].ID)
			}
			left = true
		case p.more && p.took > 0:
			next[i] = encodeCursor(state, order, p.where[p.took-1], p.jobs[p.took-1].ID)
			left = true
		default:
			next[i] = "-"
		}
	}
	if left {
		out.Next = encodeShardsCursor(next)
	}
	return out, nil
}

// scanShards runs one step of a scan (step, on one shard from a cursor
// within it, reading at most limit jobs) over the shards one after the
// other from cursor, until limit jobs were read (def when limit is 0) or
// the last shard's end. The totals are the whole queue's.
func (q *Queue) scanShards(ctx context.Context, f Filter, o ScanOptions, what string,
	step func(s *Queue, o ScanOptions) (ScanProgress, error)) (ScanProgress, error) {
	return q.scanShardsDef(ctx, f, o, what, DefaultScan, step)
}

func (q *Queue) scanShardsDef(ctx context.Context, f Filter, o ScanOptions, what string, def int,
	step func(s *Queue, o ScanOptions) (ScanProgress, error)) (ScanProgress, error) {
	var p ScanProgress
	limit := o.Limit
	if limit == 0 {
		limit = def
	}
	if limit < 1 || limit > MaxScan {
		return p, fmt.Errorf("native: %s: ScanOptions.Limit %d is out of range, want 1..%d (0 for %d)", what, o.Limit, MaxScan, def)
	}
	shards := q.parts()
	i, sub, err := decodeScanCursor(o.Cursor, len(shards))
	if err != nil {
		return p, err
	}
	p.Next = o.Cursor
	for i < len(shards) && p.Scanned < limit {
		sp, err := step(shards[i], ScanOptions{Cursor: sub, Limit: limit - p.Scanned})
		p.Scanned += sp.Scanned
		p.Matched += sp.Matched
		if !sp.Reached.IsZero() {
			p.Reached = sp.Reached
		}
		if err != nil {
			if sp.Next != "" {
				p.Next = encodeScanCursor(i, sp.Next)
			}
			return p, err
		}
		if sp.Next != "" {
			sub = sp.Next
			p.Next = encodeScanCursor(i, sub)
			if sp.Scanned == 0 {
				break // (no progress: go on at the next call)
			}
			continue
		}
		i, sub = i+1, ""
		p.Next = encodeScanCursor(i, "")
	}
	if i >= len(shards) {
		p.Next = ""
	}
	c, err := q.countShards(ctx)
	if err != nil {
		return p, fmt.Errorf("native: %s: %w", what, err)
	}
	p.Total = map[State]int64{StateWaiting: c.Waiting, StateActive: c.Active, StateDelayed: c.Delayed, StateCompleted: c.Completed, StateFailed: c.Failed}[f.State]
	return p, nil
}

// failureGroupsShards groups the failed jobs a scan over the shards reads.
func (q *Queue) failureGroupsShards(ctx context.Context, f Filter, o ScanOptions) (GroupPage, error) {
	if f.State == 0 {
		f.State = StateFailed
	}
	var g GroupPage
	sp, err := q.scanShards(ctx, f, o, "FailureGroups", func(s *Queue, o ScanOptions) (ScanProgress, error) {
		page, err := s.FailureGroups(ctx, f, o)
		if err == nil {
			g.Merge(page)
		}
		return page.ScanProgress, err
	})
	if err != nil {
		return GroupPage{}, err
	}
	g.ScanProgress = sp
	return g, nil
}

// bulkStepShards runs a step of a bulk action over the shards.
func (q *Queue) bulkStepShards(ctx context.Context, a BulkAction, f Filter, o BulkOptions) (BulkProgress, error) {
	var b BulkProgress
	sp, err := q.scanShardsDef(ctx, f, o.ScanOptions, "BulkStep "+a.String(), DefaultBulkScan, func(s *Queue, so ScanOptions) (ScanProgress, error) {
		step, err := s.BulkStep(ctx, a, f, BulkOptions{ScanOptions: so, Retry: o.Retry})
		b.Done += step.Done
		b.Skipped += step.Skipped
		return step.ScanProgress, err
	})
	b.ScanProgress = sp
	return b, err
}
