package native

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Failure groups, counts and bulk actions: each reads the jobs of one
// state in the order [Queue.List] pages them (failed and completed jobs
// latest first, the others oldest first), a page of at most [MaxPageSize]
// jobs per script, and at most [ScanOptions].Limit jobs per call, so that
// no call holds Redis, or its caller, for long, however many jobs there
// are. A call that stops short says where ([ScanProgress].Next); the next
// call goes on from there.

// A Filter picks the jobs of one state by their ID, name, last error and
// time, as the ui page's Find does. An empty field picks every job.
type Filter struct {
	// State is the state whose jobs are picked; FailureGroups takes 0
	// for StateFailed.
	State State
	// IDPrefix picks the jobs whose ID starts with it.
	IDPrefix string
	// Name picks the jobs whose name holds it.
	Name string
	// Error picks the jobs whose last error holds it.
	Error string
	// Fingerprint picks the jobs whose last error's [Fingerprint] is
	// exactly it (a [FailureGroup]'s).
	Fingerprint string
	// Group picks the jobs whose last error's fingerprint has this
	// [GroupID] (a [FailureGroup]'s ID): a short, plain name of a
	// fingerprint to type or to put in a URL.
	Group string
	// From and To pick the jobs whose time lies in [From, To] (either may
	// be zero): the time the state's list is ordered by, the enqueue time
	// of a waiting job, the lease deadline of an active one, the fire
	// time of a delayed one, the finish time of a completed or failed
	// one.
	From, To time.Time
}

// Match reports whether f picks job j (of f's state; the state itself is
// not checked).
func (f Filter) Match(j StoredJob) bool {
	at := j.ListTime()
	return strings.HasPrefix(j.ID, f.IDPrefix) && strings.Contains(j.Name, f.Name) && strings.Contains(j.LastError, f.Error) &&
		(f.From.IsZero() || !at.Before(f.From)) && (f.To.IsZero() || !at.After(f.To)) &&
		f.fingerprintMatch(j.LastError)
}

func (f Filter) fingerprintMatch(lastError string) bool {
	if f.Fingerprint == "" && f.Group == "" {
		return true
	}
	fp := Fingerprint(lastError)
	return (f.Fingerprint == "" || fp == f.Fingerprint) && (f.Group == "" || GroupID(fp) == f.Group)
}

// GroupID is the ID of the failure group of fingerprint fp: the first 8
// bytes of its SHA-256, in hex (16 characters), a name of the group that
// reads the same on any terminal or page, whatever bytes the fingerprint
// holds.
func GroupID(fp string) string {
	sum := sha256.Sum256([]byte(fp))
	return hex.EncodeToString(sum[:8])
}

// ListTime is the time j's state's list orders it by: the enqueue time
// of a waiting job, the lease deadline of an active one, the fire time of
// a delayed one, the finish time of a completed or failed one.
func (j StoredJob) ListTime() time.Time {
	switch j.State {
	case StateWaiting:
		return j.CreatedAt
	case StateActive:
		return j.LeaseDeadline
	case StateDelayed:
		return j.NextFireAt
	}
	return j.FinishedAt
}

// String describes f as a Go-like list of its set fields, for messages.
func (f Filter) String() string {
	parts := []string{f.State.String()}
	for _, p := range []struct{ k, v string }{{"ID prefix", f.IDPrefix}, {"name holds", f.Name}, {"error holds", f.Error}, {"fingerprint", f.Fingerprint}, {"group", f.Group}} {
		if p.v != "" {
			parts = append(parts, fmt.Sprintf("%s %q", p.k, p.v))
		}
	}
	if !f.From.IsZero() {
		parts = append(parts, "from "+f.From.UTC().Format(time.RFC3339Nano))
	}
	if !f.To.IsZero() {
		parts = append(parts, "to "+f.To.UTC().Format(time.RFC3339Nano))
	}
	return strings.Join(parts, ", ")
}

func (f Filter) check(what string) error {
	if f.State < StateWaiting || f.State > StateFailed {
		return fmt.Errorf("native: %s: %v is not a state, want StateWaiting, StateActive, StateDelayed, StateCompleted or StateFailed", what, f.State)
	}
	if !f.From.IsZero() && !f.To.IsZero() && f.To.Before(f.From) {
		return fmt.Errorf("native: %s: Filter.To %s is before Filter.From %s, want a range", what, f.To.UTC().Format(time.RFC3339), f.From.UTC().Format(time.RFC3339))
	}
	return nil
}

// DefaultScan is the most jobs one call of [Queue.FailureGroups] or
// [Queue.CountMatching] reads when [ScanOptions].Limit is 0 (for
// [Queue.BulkStep] see [DefaultBulkScan]); MaxScan the most any of them
// may be set to.
const (
	DefaultScan = 5000
	MaxScan     = 20000
)

// ScanOptions bound one call of [Queue.FailureGroups],
// [Queue.CountMatching] or [Queue.BulkStep].
type ScanOptions struct {
	// Cursor is the [ScanProgress].Next of the call before, "" to start
	// at the first job. A [Page].Next of a List of the same state, in the
	// order these calls read it, is taken too.
	Cursor string
	// Limit is the most jobs the call reads, 1 to [MaxScan]; 0 means
	// [DefaultScan].
	Limit int
}

// ScanProgress tells how far a call that reads a state's jobs got.
type ScanProgress struct {
	// Scanned is how many jobs the call read, Matched how many of them the
	// filter picked.
	Scanned, Matched int
	// Next is the cursor to go on from, "" when the call read the state's
	// last job (or the last within the filter's time range): a call with
	// Next set was cut short at its Limit.
	Next string
	// Reached is the time (as [StoredJob.ListTime]) of the last job read,
	// zero if none: how far the call got.
	Reached time.Time
	// Total is how many jobs were in the state when the call ended.
	Total int64
}

// scanOrder is the order the scans read state in: failed and completed
// jobs latest first, the others oldest first, as the ui page lists them.
func scanOrder(st State) string {
	if st == StateCompleted || st == StateFailed {
		return "desc"
	}
	return "asc"
}

// scan reads at most o.Limit jobs of f.State after o.Cursor, a page at a
// time, and calls visit (when not nil) with each page's jobs that f
// picks. visit reports which of them left the state (it acted on them):
// the cursor of a scan of the waiting lists must name a job still in
// line, since it is found there by its ID.
func (q *Queue) scan(ctx context.Context, f Filter, o ScanOptions, what string,
	visit func(picked []StoredJob) ([]bool, error)) (ScanProgress, error) {
	var p ScanProgress
	if err := f.check(what); err != nil {
		return p, err
	}
	limit := o.Limit
	if limit == 0 {
		limit = DefaultScan
	}
	if limit < 1 || limit > MaxScan {
		return p, fmt.Errorf("native: %s: ScanOptions.Limit %d is out of range, want 1..%d (0 for %d)", what, o.Limit, MaxScan, DefaultScan)
	}
	order := scanOrder(f.State)
	var at, after string
	if o.Cursor != "" {
		var err error
		if at, after, err = decodeCursor(o.Cursor, f.State, order); err != nil {
			return p, err
		}
	}
	p.Next = o.Cursor
	for p.Scanned < limit {
		if f.State == StateWaiting && after == "" {
			at = "" // a waiting scan's cursor at the start of the lines
		}
		jobs, where, more, err := q.page(ctx, f.State, min(MaxPageSize, limit-p.Scanned), order, at, after)
		if err != nil {
			return p, err
		}
		if len(jobs) == 0 {
			more = false // (a page of members without records has no place to go on from)
		}
		var picked []StoredJob
		var idx []int
		past := len(jobs)
		for i, j := range jobs {
			t := j.ListTime()
			if order == "desc" && !f.From.IsZero() && t.Before(f.From) || order == "asc" && !f.To.IsZero() && t.After(f.To) {
				past, more = i, false // past the range: the rest is further
				break
			}
			if f.Match(j) {
				picked = append(picked, j)
				idx = append(idx, i)
			}
		}
		gone := make([]bool, len(jobs))
		if visit != nil && len(picked) > 0 {
			left, err := visit(picked)
			if err != nil {
				return p, err
			}
			for n, i := range idx {
				gone[i] = left[n]
			}
		}
		p.Scanned += past
		p.Matched += len(picked)
		if past > 0 {
			p.Reached = jobs[past-1].ListTime()
		}
		// The cursor: the last job read, or, on the waiting lists, the
		// last one read that is still in line (acted-on jobs left it; if
		// every job read left, the cursor stays where it was).
		for i := past - 1; i >= 0; i-- {
			if f.State != StateWaiting || !gone[i] {
				at, after = where[i], jobs[i].ID
				break
			}
		}
		if !more {
			p.Next = ""
			break
		}
		p.Next = encodeCursor(f.State, order, at, after)
		if f.State == StateWaiting && after == "" {
			p.Next = encodeCursor(f.State, order, "due", "")
		}
	}
	if c, err := q.Counts(ctx); err == nil {
		p.Total = map[State]int64{StateWaiting: c.Waiting, StateActive: c.Active, StateDelayed: c.Delayed, StateCompleted: c.Completed, StateFailed: c.Failed}[f.State]
	} else {
		return p, fmt.Errorf("native: %s: %w", what, err)
	}
	return p, nil
}

// CountMatching counts the jobs f picks among at most o.Limit jobs of
// f.State after o.Cursor: the dry run of a bulk action. Go on from Next
// until it is "" for the count of the whole state; the count is of jobs
// as each page found them, not of one instant.
func (q *Queue) CountMatching(ctx context.Context, f Filter, o ScanOptions) (ScanProgress, error) {
	if _, ok := q.fan(); ok {
		return q.scanShards(ctx, f, o, "CountMatching", func(s *Queue, o ScanOptions) (ScanProgress, error) { return s.CountMatching(ctx, f, o) })
	}
	return q.scan(ctx, f, o, "CountMatching", nil)
}

// A FailureGroup is the failed jobs that share their last error's
// [Fingerprint], as far as [Queue.FailureGroups] read them.
type FailureGroup struct {
	// ID is the group's [GroupID], which [Filter].Group picks it by.
	ID string
	// Fingerprint is the group's fingerprint.
	Fingerprint string
	// Count is how many of the jobs read are in the group.
	Count int
	// FirstSeen and LastSeen are the earliest and the latest finish time
	// of its jobs.
	FirstSeen, LastSeen time.Time
	// ExampleID is the job that failed last in the group, ExampleError
	// its last error, whole.
	ExampleID, ExampleError string
}

// GroupPage is the answer of [Queue.FailureGroups]: the groups of the
// failed jobs it read, and how far it got.
type GroupPage struct {
	// Groups are the groups, largest first (then the latest seen first,
	// then by fingerprint).
	Groups []FailureGroup
	ScanProgress
}

// FailureGroups groups the failed jobs f picks (f.State 0 or StateFailed)
// by their last error's [Fingerprint], with their counts, first and last
// finish times and an example, reading at most o.Limit of them (latest
// failure first) after o.Cursor. Go on from Next, merging each answer
// into the last with [GroupPage.Merge], to group the whole failed set.
func (q *Queue) FailureGroups(ctx context.Context, f Filter, o ScanOptions) (GroupPage, error) {
	if _, ok := q.fan(); ok {
		return q.failureGroupsShards(ctx, f, o)
	}
	if f.State == 0 {
		f.State = StateFailed
	}
	if f.State != StateFailed {
		return GroupPage{}, fmt.Errorf("native: FailureGroups: Filter.State is %v, want StateFailed (or 0): groups are of failed jobs", f.State)
	}
	byFP := map[string]*FailureGroup{}
	var g GroupPage
	var err error
	g.ScanProgress, err = q.scan(ctx, f, o, "FailureGroups", func(picked []StoredJob) ([]bool, error) {
		for _, j := range picked {
			fp := Fingerprint(j.LastError)
			g.add(byFP, FailureGroup{ID: GroupID(fp), Fingerprint: fp, Count: 1, FirstSeen: j.FinishedAt, LastSeen: j.FinishedAt,
				ExampleID: j.ID, ExampleError: j.LastError})
		}
		return make([]bool, len(picked)), nil
	})
	if err != nil {
		return GroupPage{}, err
	}
	g.sort()
	return g, nil
}

// Merge adds the groups of o, a later answer of FailureGroups (from this
// one's Next), into g, and takes o's progress as g's, its Scanned and
// Matched added.
func (g *GroupPage) Merge(o GroupPage) {
	byFP := make(map[string]*FailureGroup, len(g.Groups))
	for i := range g.Groups {
		byFP[g.Groups[i].Fingerprint] = &g.Groups[i]
	}
	for _, x := range o.Groups {
		g.add(byFP, x)
	}
	g.sort()
	scanned, matched := g.Scanned+o.Scanned, g.Matched+o.Matched
	g.ScanProgress = o.ScanProgress
	g.Scanned, g.Matched = scanned, matched
}

// add adds x to the group of its fingerprint, found through byFP.
func (g *GroupPage) add(byFP map[string]*FailureGroup, x FailureGroup) {
	have, ok := byFP[x.Fingerprint]
	if !ok {
		g.Groups = append(g.Groups, x)
		// The map points into the slice: rebuild it when append moved it.
		for i := range g.Groups {
			byFP[g.Groups[i].Fingerprint] = &g.Groups[i]
		}
		return
	}
	have.Count += x.Count
	if x.FirstSeen.Before(have.FirstSeen) {
		have.FirstSeen = x.FirstSeen
	}
	if x.LastSeen.After(have.LastSeen) {
		have.LastSeen, have.ExampleID, have.ExampleError = x.LastSeen, x.ExampleID, x.ExampleError
	}
}

func (g *GroupPage) sort() {
	slices.SortStableFunc(g.Groups, func(a, b FailureGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), b.LastSeen.Compare(a.LastSeen), strings.Compare(a.Fingerprint, b.Fingerprint))
	})
}

// A BulkAction is what [Queue.BulkStep] does to each job its filter
// picks.
type BulkAction int

const (
	// BulkRetry sends failed jobs back to run, as [Queue.Retry].
	BulkRetry BulkAction = iota + 1
	// BulkDelete deletes jobs that are not running, as [Queue.Delete].
	BulkDelete
	// BulkCancel cancels waiting, delayed and running jobs, as
	// [Queue.Cancel].
	BulkCancel
)

// String returns "retry", "delete" or "cancel".
func (a BulkAction) String() string {
	switch a {
	case BulkRetry:
		return "retry"
	case BulkDelete:
		return "delete"
	case BulkCancel:
		return "cancel"
	}
	return fmt.Sprintf("BulkAction(%d)", int(a))
}

// ParseBulkAction reads a BulkAction by its name (its String).
func ParseBulkAction(s string) (BulkAction, bool) {
	for a := BulkRetry; a <= BulkCancel; a++ {
		if a.String() == s {
			return a, true
		}
	}
	return 0, false
}

// Applies reports whether a applies to jobs in state st: retry to failed
// jobs, delete to all but active ones, cancel to waiting, delayed and
// active ones.
func (a BulkAction) Applies(st State) bool {
	switch a {
	case BulkRetry:
		return st == StateFailed
	case BulkDelete:
		return st >= StateWaiting && st <= StateFailed && st != StateActive
	case BulkCancel:
		return st == StateWaiting || st == StateDelayed || st == StateActive
	}
	return false
}

// DefaultBulkScan is the most jobs one [Queue.BulkStep] reads when
// its ScanOptions.Limit is 0: acting on a job costs a script call of its
// own, several times what reading it does.
const DefaultBulkScan = 1000

// BulkOptions bound one [Queue.BulkStep] and say how a retry sends jobs
// back.
type BulkOptions struct {
	// ScanOptions bound the step; a Limit of 0 means [DefaultBulkScan].
	ScanOptions
	// Retry says how BulkRetry sends each job back.
	Retry RetryOptions
}

// BulkProgress is what one [Queue.BulkStep] did, or, from [Queue.Bulk],
// the steps so far.
type BulkProgress struct {
	ScanProgress
	// Done is how many of the jobs picked the action was taken on.
	Done int
	// Skipped is how many picked jobs it was not: each had moved on
	// (another state, or gone) between the read and the action, which
	// then changed nothing.
	Skipped int
}

// BulkStep takes action a on the jobs f picks among at most o.Limit jobs
// of f.State after o.Cursor, and returns what it did and the cursor to go
// on from ("" when it read the last job). Each page of at most
// [MaxPageSize] jobs is read by one script and acted on in one round
// trip, each job by its own atomic script, as [Queue.Retry],
// [Queue.Delete] or [Queue.Cancel] would take it: a job that moved on
// meanwhile is left as it is and counted Skipped. A step is not atomic
// as a whole, and the whole run of steps is not either: a job that
// enters the state at a place the steps have passed is not read (failed
// jobs are read latest first, so a job retried that fails again is not
// retried twice), one that enters ahead of the cursor is. On the
// waiting lists the cursor is the last job read that stays in line; if a
// worker took it meanwhile, the step starts again at the front of the
// line.
//
// An action that does not apply to f.State ([BulkAction.Applies]) is an
// error, and nothing is read.
func (q *Queue) BulkStep(ctx context.Context, a BulkAction, f Filter, o BulkOptions) (BulkProgress, error) {
	if _, ok := q.fan(); ok {
		return q.bulkStepShards(ctx, a, f, o)
	}
	what := "BulkStep " + a.String()
	if !a.Applies(f.State) {
		return BulkProgress{}, fmt.Errorf("native: %s: %v does not apply to %v jobs, want retry for failed jobs, delete for all but active ones, cancel for waiting, delayed and active ones",
			what, a, f.State)
	}
	s, _, _ := q.call(a, "", o.Retry)
	if err := s.Load(ctx, q.rdb).Err(); err != nil {
		return BulkProgress{}, fmt.Errorf("native: %s on queue %q: load its script: %w", what, q.name, err)
	}
	if o.Limit == 0 {
		o.Limit = DefaultBulkScan
	}
	var b BulkProgress
	act := func(picked []StoredJob) ([]bool, error) {
		cmds := make([]*redis.Cmd, len(picked))
		_, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, j := range picked {
				s, keys, args := q.call(a, j.ID, o.Retry)
				cmds[i] = s.EvalSha(ctx, p, keys, args...)
			}
			return nil
		})
		// Every job picked has left the state, by this action or before
		// it (a refusal means the job was gone, or elsewhere), but for
		// those whose call failed.
		left := make([]bool, len(picked))
		type stopping struct {
			id, token string
			until     time.Time
		}
		var waits []stopping // running jobs cancelled, read as the replies arrived
		for i, c := range cmds {
			res, cerr := c.Slice()
			switch {
			case cerr != nil:
				if err == nil {
					err = cerr
				}
			case len(res) > 0 && (parseInt(res[0]) == -2 || parseInt(res[0]) == -5):
				b.Skipped++
				left[i] = true
			case len(res) > 0 && parseInt(res[0]) == -6:
				// A delete of a job cancelled while a worker held it, not
				// confirmed yet: it stays, skipped (Delete waits for it).
				b.Skipped++
			default:
				b.Done++
				left[i] = true
				if a == BulkCancel && len(res) >= 5 {
					waits = append(waits, stopping{picked[i].ID, replyString(res[4]), leaseEnd(res[2], res[3])})
				}
			}
		}
		// Running jobs cancelled: as Cancel does, the step returns only
		// once their workers can no longer start them or run them with a
		// live context. The waits run side by side in time (each until its
		// own lease's end), so a step waits for the longest, not the sum.
		for _, s := range waits {
			if err != nil {
				break
			}
			err = q.awaitStopped(ctx, "cancel", s.id, s.token, s.until)
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return left, fmt.Errorf("native: %s on queue %q (%d done in this step before it): %w", what, q.name, b.Done, err)
		}
		return left, nil
	}
	p, err := q.scan(ctx, f, o.ScanOptions, what, act)
	if errors.Is(err, ErrCursorGone) && f.State == StateWaiting {
		// The cursor's job left the line: start again at its front,
		// where the jobs acted on are gone, the rest of the step's
		// reading allowed.
		first := p
		o.Cursor, o.Limit = "", max(1, o.Limit-first.Scanned)
		p, err = q.scan(ctx, f, o.ScanOptions, what, act)
		p.Scanned += first.Scanned
		p.Matched += first.Matched
	}
	b.ScanProgress = p
	return b, err
}

// Bulk takes action a on every job f picks, a [Queue.BulkStep] of at
// most o.Limit jobs at a time from o.Cursor until the last job is read,
// and calls progress (when not nil) after each step with the steps so
// far. When ctx ends between steps, or a step fails, Bulk returns the
// progress so far, whose Next is where to go on from, with the error.
func (q *Queue) Bulk(ctx context.Context, a BulkAction, f Filter, o BulkOptions, progress func(BulkProgress)) (BulkProgress, error) {
	var total BulkProgress
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		step, err := q.BulkStep(ctx, a, f, o)
		total.Scanned += step.Scanned
		total.Matched += step.Matched
		total.Done += step.Done
		total.Skipped += step.Skipped
		total.Reached, total.Total = step.Reached, step.Total
		if err != nil {
			total.Next = o.Cursor
			return total, err
		}
		total.Next = step.Next
		if progress != nil {
			progress(total)
		}
		if step.Next == "" {
			return total, nil
		}
		o.Cursor = step.Next
	}
}
