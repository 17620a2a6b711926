package native

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultPageSize is the number of jobs a page of [Queue.List] holds when
// [ListOptions].Limit is 0.
const DefaultPageSize = 20

// MaxPageSize is the most jobs one page of [Queue.List] holds.
const MaxPageSize = 1000

// ListOptions chooses one page of [Queue.List].
type ListOptions struct {
	// Limit is the most jobs on the page, 1 to [MaxPageSize]; 0 means
	// [DefaultPageSize].
	Limit int
	// Cursor is the [Page].Next of the page before, from a List of the
	// same state and order; "" asks for the first page.
	Cursor string
	// OldestFirst lists from the other end: waiting jobs in the order
	// workers will take them, active jobs by the lease that runs out
	// first, delayed jobs by the soonest fire time (the timeline of what
	// runs next), completed and failed jobs by the earliest finish.
	OldestFirst bool
}

// A Page is one page of the jobs of one state, from [Queue.List].
type Page struct {
	// Jobs are the page's jobs, in the order asked for. Their Payload is
	// nil: a listing does not carry payloads ([Queue.Job] reads a job
	// whole).
	Jobs []StoredJob
	// Next is the cursor of the page after this one, "" when this page is
	// the last.
	Next string
}

// List returns one page of the jobs in state, newest first unless
// opts.OldestFirst: waiting jobs by their place in line (the last to run
// first), active jobs by lease deadline, delayed jobs by fire time,
// completed and failed jobs by finish time, each latest first. Pass the
// page's Next as the next call's Cursor for the page after it.
//
// Each page is read by one script, so it is a snapshot of its own
// instant, and pages stay correct while workers run: a page goes on after
// the position of the last job of the page before, so a job is never
// listed twice and none that stayed in its state is skipped; jobs that
// moved in meanwhile may or may not be listed. A page of active, delayed,
// completed or failed jobs holds its place even when that last job has
// moved on. The waiting lists have no such order to go by: when the
// cursor's job has left them (a worker took it; in run order that happens
// only once every job before it was taken), List answers [ErrCursorGone].
// Paging waiting jobs in run order (OldestFirst) keeps the cursor's job
// in line the longest. A page of waiting jobs after the first finds its
// cursor's job by scanning its list (LPOS), so its cost grows with the
// list's length; the other states' pages cost the log of their set's size
// plus the page.
//
// A state that is not one of the five, a Limit out of range or a cursor
// List did not return for this state and order ([ErrBadCursor]) is an
// error.
func (q *Queue) List(ctx context.Context, state State, opts ListOptions) (Page, error) {
	if _, ok := q.fan(); ok {
		return q.listShards(ctx, state, opts)
	}
	limit, order, err := listArgs(state, opts)
	if err != nil {
		return Page{}, err
	}
	var at, after string
	if opts.Cursor != "" {
		if at, after, err = decodeCursor(opts.Cursor, state, order); err != nil {
			return Page{}, err
		}
	}
	jobs, where, more, err := q.page(ctx, state, limit, order, at, after)
	if err != nil {
		return Page{}, err
	}
	p := Page{Jobs: jobs}
	if more && len(jobs) > 0 {
		p.Next = encodeCursor(state, order, where[len(where)-1], jobs[len(jobs)-1].ID)
	}
	return p, nil
}

// page reads at most limit jobs of state in order after the cursor's
// position (at, after; "" for the first page): the jobs, where each
// stands (its score, or the waiting list it is on), and whether more
// follow the last one read.
func (q *Queue) page(ctx context.Context, state State, limit int, order, at, after string) ([]StoredJob, []string, bool, error) {
	k := q.keys
	var res []any
	var err error
	if state == StateWaiting {
		res, err = scriptListWaiting.Run(ctx, q.rdb, []string{k.due, k.wait, k.jobs}, limit, order, at, after).Slice()
	} else {
		set := map[State]string{StateActive: k.active, StateDelayed: k.delayed, StateCompleted: k.completed, StateFailed: k.failed}[state]
		res, err = scriptListSorted.Run(ctx, q.rdb, []string{set, k.jobs}, limit, order, at, after).Slice()
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("native: list %s jobs of queue %q: %w", state, q.name, err)
	}
	if state == StateWaiting && parseInt(res[0]) == -1 {
		return nil, nil, false, fmt.Errorf("%w (queue %q, cursor job %q)", ErrCursorGone, q.name, after)
	}
	jobs := make([]StoredJob, 0, len(res)/3)
	where := make([]string, 0, len(res)/3)
	for i := 1; i+2 < len(res); i += 3 {
		id, pos := replyString(res[i]), replyString(res[i+1])
		j, err := q.listed(id, state, res[i+2])
		if err != nil {
			return nil, nil, false, err
		}
		if state != StateWaiting {
			s, _ := strconv.ParseFloat(pos, 64)
			switch state {
			case StateActive:
				j.LeaseDeadline = time.UnixMilli(int64(s))
			case StateDelayed:
				j.NextFireAt = time.UnixMilli(int64(s) / 0x1000)
			}
		}
		jobs = append(jobs, j)
		where = append(where, pos)
	}
	return jobs, where, parseInt(res[0]) == 1, nil
}

// listed decodes one job of a listing: its record, without the payload.
func (q *Queue) listed(id string, state State, rec any) (StoredJob, error) {
	r, err := decodeRecord(replyString(rec))
	if err != nil {
		return StoredJob{}, fmt.Errorf("native: list %s jobs of queue %q: job %q: %w", state, q.name, id, err)
	}
	j := storedJob(id, r)
	j.State = state
	j.Payload = nil
	j.Cancelled = state == StateFailed && r.cancelled()
	return j, nil
}

// A cursor is opaque to callers: the state and order it pages, the
// position (a score, or the waiting list the job is on) and the job ID of
// the last job of its page.
func encodeCursor(state State, order, at, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(int(state)) + "|" + order + "|" + at + "|" + id))
}

func decodeCursor(c string, state State, order string) (at, id string, err error) {
	bad := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("%w: %s (cursor %q)", ErrBadCursor, why, c)
	}
	raw, derr := base64.RawURLEncoding.DecodeString(c)
	if derr != nil {
		return bad("not a cursor List returned")
	}
	f := strings.SplitN(string(raw), "|", 4)
	if len(f) != 4 {
		return bad("not a cursor List returned")
	}
	if f[0] != strconv.Itoa(int(state)) || f[1] != order {
		st, _ := strconv.Atoi(f[0])
		return bad(fmt.Sprintf("it pages %s jobs %s, not %s jobs %s", State(st), orderName(f[1]), state, orderName(order)))
	}
	switch {
	case state == StateWaiting && f[2] != "due" && f[2] != "wait":
		return bad("not a cursor List returned")
	case state != StateWaiting:
		if _, perr := strconv.ParseFloat(f[2], 64); perr != nil {
			return bad("not a cursor List returned")
		}
	}
	return f[2], f[3], nil
}

func orderName(order string) string {
	if order == "asc" {
		return "oldest first"
	}
	return "newest first"
}

// listArgs checks a List call's state and options and returns its page
// size and its sorted-set order ("desc", latest first, or "asc"): one
// check for a queue of one shard and a sharded one.
func listArgs(state State, opts ListOptions) (limit int, order string, err error) {
	limit = opts.Limit
	if limit == 0 {
		limit = DefaultPageSize
	}
	if limit < 1 || limit > MaxPageSize {
		return 0, "", fmt.Errorf("native: List: Limit %d is out of range, want 1..%d (0 for %d)", opts.Limit, MaxPageSize, DefaultPageSize)
	}
	if state < StateWaiting || state > StateFailed {
		return 0, "", fmt.Errorf("native: List: %v is not a state, want StateWaiting, StateActive, StateDelayed, StateCompleted or StateFailed", state)
	}
	if opts.OldestFirst {
		return limit, "asc", nil
	}
	return limit, "desc", nil
}
