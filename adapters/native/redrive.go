package native

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rebound-go/rebound/breaker"
)

// A redrive sends the failed jobs a [Filter] picks back to the wait list,
// the oldest failure first, at a rate the operator sets, and holds while
// the breaker of the jobs' dependency is open: a pile of failures sent
// back at once would knock over the dependency that has just recovered.
//
// Its state lives in Redis, in one hash per queue (<prefix>:{<queue>}:redrive):
// the filter, the rate, the dependency, the cursor (the finish time and ID
// of the last failed job read), the counts, the state (running, paused,
// cancelled, done) and the lease of the process that drives it. Each step
// is one script that sends a few jobs and moves the cursor past them at
// once, so that a redrive whose process died (kill -9) and that another
// resumes ([Queue.ResumeRedrive]) sends no job twice and loses none. The
// driving process renews its lease at every step; while the lease is live
// no other process takes the redrive over, and while a redrive has not
// ended no other starts on the queue.

// Metadata keys a redrive leaves on each job it sends back.
const (
	// RedrivenAtKey is when the job was sent back (RFC 3339, UTC, the
	// driving process's clock).
	RedrivenAtKey = "rebound-redriven-at"
	// RedriveFilterKey is the filter of the redrive that sent it back
	// ([Filter].String).
	RedriveFilterKey = "rebound-redrive-filter"
	// RedriveIDKey is that redrive's ID.
	RedriveIDKey = "rebound-redrive-id"
)

// The bounds of a redrive.
const (
	// MaxRedriveRate is the fastest rate a redrive takes, in jobs per
	// second.
	MaxRedriveRate = 10000
	// DefaultRedriveLease is how long a driving process's lease lasts
	// unless [RedriveOptions].Lease says otherwise: a redrive whose
	// process died is resumed by another this long after its last step
	// at the latest.
	DefaultRedriveLease = 5 * time.Second
	// redriveTick is the shortest time between two steps: at 500 jobs/s
	// a step sends about 5 jobs.
	redriveTick = 10 * time.Millisecond
	// redriveDebt is how far behind its pace a redrive catches up: a
	// stall longer loses the jobs it would have sent, so that no window
	// sends more than the rate lets.
	redriveDebt = 20 * time.Millisecond
	// redriveHoldPoll is how often a held or paused redrive asks again.
	redriveHoldPoll = 50 * time.Millisecond
	// redrivePage is how many failed jobs one read takes ahead of the
	// steps.
	redrivePage = 500
)

// ErrRedriveRunning is wrapped by the error of a [Queue.StartRedrive] on a
// queue whose redrive has not ended, and of a [Queue.ResumeRedrive] whose
// redrive another live process drives.
var ErrRedriveRunning = errors.New("native: the queue's redrive has not ended; one redrive per queue at a time")

// ErrNoRedrive is wrapped by the error of a pause, resume or cancel on a
// queue without a redrive, or whose redrive has ended.
var ErrNoRedrive = errors.New("native: the queue has no redrive that has not ended")

// RedriveState is where a redrive stands.
type RedriveState string

// The states of a redrive.
const (
	// RedriveRunning sends jobs (or holds while its dependency's breaker
	// is open: see [RedriveStatus].Held).
	RedriveRunning RedriveState = "running"
	// RedrivePaused sends nothing until [Queue.ResumeRedrive].
	RedrivePaused RedriveState = "paused"
	// RedriveCancelled ended before its last job: [Queue.CancelRedrive].
	RedriveCancelled RedriveState = "cancelled"
	// RedriveDone sent every job its filter picked.
	RedriveDone RedriveState = "done"
)

// RedriveOptions say what [Queue.StartRedrive] sends back, how fast, and
// what it protects.
type RedriveOptions struct {
	// Filter picks the failed jobs (its State is 0 or StateFailed). Jobs
	// that fail after the start are not taken: a job sent back that fails
	// again is not sent twice.
	Filter Filter
	// Rate is how many jobs a second it sends, over 0 and at most
	// [MaxRedriveRate].
	Rate float64
	// Dependency is the dependency the jobs call, "" for none: while its
	// breaker in Breaker is open, the redrive holds. Jobs do not say
	// which dependency they call (a worker binds names to dependencies,
	// [WithDependency]), so the operator names it; it is stored with the
	// redrive, and a process that resumes it needs a Breaker too.
	Dependency string
	// Breaker is the store of the dependency's breaker (breaker/redisstore
	// as the workers use it). Needed with Dependency.
	Breaker breaker.Store
	// Retry says how each job goes back: its attempts kept, or reset.
	Retry RetryOptions
	// Lease is how long the process's lease on the redrive lasts between
	// its renewals; 0 means [DefaultRedriveLease].
	Lease time.Duration
	// Progress, when not nil, is called with the redrive's status after
	// a step that sent jobs (at most every 200ms), and when it starts to
	// hold or pauses. It runs on Run's goroutine.
	Progress func(RedriveStatus)
}

// RedriveStatus is a redrive as stored in Redis.
type RedriveStatus struct {
	// ID names the redrive; each job it sends back carries it
	// ([RedriveIDKey]).
	ID string
	// Filter, Rate, Dependency and ResetAttempts are as it was started.
	Filter        Filter
	Rate          float64
	Dependency    string
	ResetAttempts bool
	// State is where it stands.
	State RedriveState
	// Held says why a running redrive sends nothing at the moment (its
	// dependency's breaker open), "" when it does not hold.
	Held string
	// Total is how many failed jobs the filter picked when it started
	// (-1 while Run counts them, before it sends any);
	// Sent how many it sent back; Skipped how many it found gone from the
	// failed set (retried, deleted or trimmed meanwhile); Scanned how many
	// failed jobs it read; Left is Total less Sent and Skipped, at least 0.
	// (-1 too while Total is).
	Total, Sent, Skipped, Scanned, Left int64
	// Until is the latest failure it takes: the time it started.
	Until time.Time
	// Reached is the failure time of the last job read (its cursor).
	Reached time.Time
	// Started, Updated (its last step or renewal) and Finished (done or
	// cancelled; zero before) are on the Redis server's clock.
	Started, Updated, Finished time.Time
	// LeaseUntil is when the lease of the process driving it ends; past
	// it (Live false), [Queue.ResumeRedrive] takes it over.
	LeaseUntil time.Time
	// Live reports a lease not yet over when the status was read.
	Live bool
}

// Redrive is a redrive this process holds the lease of: [Redrive.Run]
// drives it.
type Redrive struct {
	q     *Queue
	owner string
	o     RedriveOptions
}

// StartRedrive starts a redrive of the failed jobs o.Filter picks (see
// [RedriveOptions]) and returns it, held by this process: call
// [Redrive.Run] to send the jobs (which counts them first). A queue whose redrive has
// not ended (running or paused, whether or not its process lives) refuses
// a second one with an error wrapping [ErrRedriveRunning]: resume it or
// cancel it.
func (q *Queue) StartRedrive(ctx context.Context, o RedriveOptions) (*Redrive, error) {
	if err := q.redriveSharded("StartRedrive"); err != nil {
		return nil, err
	}
	if o.Filter.State == 0 {
		o.Filter.State = StateFailed
	}
	if err := o.check("StartRedrive"); err != nil {
		return nil, err
	}
	if err := o.Filter.check("StartRedrive"); err != nil {
		return nil, err
	}
	// If a redrive is live, refuse before counting.
	if st, ok, err := q.RedriveStatus(ctx); err != nil {
		return nil, err
	} else if ok && (st.State == RedriveRunning || st.State == RedrivePaused) {
		return nil, q.redriveRunning("StartRedrive", st.ID, string(st.State), st.LeaseUntil, st.Live)
	}
	now, err := q.rdb.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("native: StartRedrive on queue %q: read the server's clock: %w", q.name, err)
	}
	until := now.Truncate(time.Millisecond)
	filter, err := json.Marshal(o.Filter)
	if err != nil {
		return nil, fmt.Errorf("native: StartRedrive: %w", err)
	}
	r := &Redrive{q: q, owner: newOwner(), o: o}
	res, err := scriptRedriveStart.Run(ctx, q.rdb, []string{q.keys.redrive}, newOwner(), r.owner, o.lease().Milliseconds(),
		string(filter), strconv.FormatFloat(o.Rate, 'g', -1, 64), o.Dependency, boolArg(o.Retry.ResetAttempts), -1, until.UnixMilli()).Slice()
	if err != nil {
		return nil, fmt.Errorf("native: StartRedrive on queue %q: %w", q.name, err)
	}
	if parseInt(res[0]) == -1 {
		lease := parseInt(res[4])
		return nil, q.redriveRunning("StartRedrive", replyString(res[1]), replyString(res[2]), time.UnixMilli(lease), lease > parseInt(res[5]))
	}
	return r, nil
}

// ErrRedriveSharded is wrapped by the error of every redrive method of a
// sharded queue ([NewShardedQueue]): a redrive reads one failed set in
// order, and a sharded queue has one per shard.
var ErrRedriveSharded = errors.New("native: a sharded queue has no redrive yet (its failed jobs are spread over its shards); retry them with Bulk")

func (q *Queue) redriveSharded(what string) error {
	if v, ok := q.fan(); ok {
		return fmt.Errorf("%w: %s on queue %q (%d shards)", ErrRedriveSharded, what, q.name, len(v.all))
	}
	return nil
}

func (q *Queue) redriveRunning(what, id, state string, lease time.Time, live bool) error {
	holder := "its process's lease ended at " + lease.UTC().Format(time.RFC3339Nano) + ": resume it (ResumeRedrive) or cancel it"
	if live {
		holder = "a live process drives it (lease until " + lease.UTC().Format(time.RFC3339Nano) + "): pause or cancel it there or from here"
	}
	return fmt.Errorf("%w: %s on queue %q: redrive %s is %s; %s", ErrRedriveRunning, what, q.name, id, state, holder)
}

func (o RedriveOptions) check(what string) error {
	if o.Filter.State != StateFailed {
		return fmt.Errorf("native: %s: Filter.State is %v, want StateFailed (or 0): a redrive sends failed jobs back", what, o.Filter.State)
	}
	if !(o.Rate > 0 && o.Rate <= MaxRedriveRate) {
		return fmt.Errorf("native: %s: Rate %v is out of range, want jobs per second over 0 and at most %d", what, o.Rate, MaxRedriveRate)
	}
	if o.Dependency != "" && o.Breaker == nil {
		return fmt.Errorf("native: %s: Dependency %q has no Breaker, want the store its breaker is kept in", what, o.Dependency)
	}
	if o.Lease < 0 || o.Lease > 0 && o.Lease < 100*time.Millisecond {
		return fmt.Errorf("native: %s: Lease %s is out of range, want 100ms or more (0 for %s)", what, o.Lease, DefaultRedriveLease)
	}
	return nil
}

func (o RedriveOptions) lease() time.Duration {
	if o.Lease == 0 {
		return DefaultRedriveLease
	}
	return o.Lease
}

func newOwner() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ResumeOptions say how [Queue.ResumeRedrive] goes on.
type ResumeOptions struct {
	// Breaker is the store of the redrive's dependency's breaker, needed
	// when it names one.
	Breaker breaker.Store
	// Lease and Progress are as [RedriveOptions]'s.
	Lease    time.Duration
	Progress func(RedriveStatus)
}

// ResumeRedrive lets the queue's paused redrive run again, and takes it
// over when no live process drives it (its process died, or let it go):
// it then returns the redrive, held by this process, to [Redrive.Run]
// from its cursor. When a live process drives it, that process goes on
// and ResumeRedrive returns nil. A queue without a redrive, or whose
// redrive ended, is an error wrapping [ErrNoRedrive].
func (q *Queue) ResumeRedrive(ctx context.Context, o ResumeOptions) (*Redrive, error) {
	if err := q.redriveSharded("ResumeRedrive"); err != nil {
		return nil, err
	}
	st, ok, err := q.RedriveStatus(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w (queue %q): start one", ErrNoRedrive, q.name)
	}
	ro := RedriveOptions{Filter: st.Filter, Rate: st.Rate, Dependency: st.Dependency, Breaker: o.Breaker,
		Retry: RetryOptions{ResetAttempts: st.ResetAttempts}, Lease: o.Lease, Progress: o.Progress}
	if err := ro.check("ResumeRedrive"); err != nil {
		return nil, err
	}
	r := &Redrive{q: q, owner: newOwner(), o: ro}
	res, err := scriptRedriveResume.Run(ctx, q.rdb, []string{q.keys.redrive}, r.owner, ro.lease().Milliseconds()).Slice()
	if err != nil {
		return nil, fmt.Errorf("native: ResumeRedrive on queue %q: %w", q.name, err)
	}
	switch parseInt(res[0]) {
	case 1:
		return r, nil
	case 0:
		return nil, nil
	case -5:
		return nil, fmt.Errorf("%w (queue %q): redrive %s is %s", ErrNoRedrive, q.name, st.ID, replyString(res[1]))
	}
	return nil, fmt.Errorf("%w (queue %q)", ErrNoRedrive, q.name)
}

// PauseRedrive pauses the queue's redrive: its process sends nothing
// more, from its next step, until [Queue.ResumeRedrive].
func (q *Queue) PauseRedrive(ctx context.Context) error {
	return q.setRedrive(ctx, "PauseRedrive", RedrivePaused)
}

// CancelRedrive ends the queue's redrive for good: its process sends
// nothing more, from its next step, and stops. Jobs sent stay sent.
func (q *Queue) CancelRedrive(ctx context.Context) error {
	return q.setRedrive(ctx, "CancelRedrive", RedriveCancelled)
}

func (q *Queue) setRedrive(ctx context.Context, what string, to RedriveState) error {
	if err := q.redriveSharded(what); err != nil {
		return err
	}
	res, err := scriptRedriveSet.Run(ctx, q.rdb, []string{q.keys.redrive}, string(to)).Slice()
	if err != nil {
		return fmt.Errorf("native: %s on queue %q: %w", what, q.name, err)
	}
	switch parseInt(res[0]) {
	case -2:
		return fmt.Errorf("%w (queue %q): %s has nothing to act on", ErrNoRedrive, q.name, what)
	case -5:
		return fmt.Errorf("%w (queue %q): its last redrive is %s", ErrNoRedrive, q.name, replyString(res[1]))
	}
	return nil
}

// RedriveStatus reads the queue's redrive, the last one if it ended; ok
// is false when the queue never had one.
func (q *Queue) RedriveStatus(ctx context.Context) (st RedriveStatus, ok bool, err error) {
	if err := q.redriveSharded("RedriveStatus"); err != nil {
		return st, false, err
	}
	pipe := q.rdb.Pipeline()
	all := pipe.HGetAll(ctx, q.keys.redrive)
	clock := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil {
		return st, false, fmt.Errorf("native: RedriveStatus of queue %q: %w", q.name, err)
	}
	h := all.Val()
	if len(h) == 0 {
		return st, false, nil
	}
	st = parseRedrive(h)
	st.Live = st.LeaseUntil.After(clock.Val()) && (st.State == RedriveRunning || st.State == RedrivePaused)
	return st, true, nil
}

func parseRedrive(h map[string]string) RedriveStatus {
	ms := func(k string) time.Time { return msTime(parseInt(h[k])) }
	st := RedriveStatus{ID: h["id"], Dependency: h["dep"], ResetAttempts: h["reset"] == "1", State: RedriveState(h["state"]), Held: h["held"],
		Total: parseInt(h["total"]), Sent: parseInt(h["sent"]), Skipped: parseInt(h["skipped"]), Scanned: parseInt(h["scanned"]),
		Until: ms("until"), Started: ms("started"), Updated: ms("updated"), Finished: ms("finished"), LeaseUntil: ms("lease")}
	st.Rate, _ = strconv.ParseFloat(h["rate"], 64)
	_ = json.Unmarshal([]byte(h["filter"]), &st.Filter)
	if s, err := strconv.ParseFloat(h["at"], 64); err == nil {
		st.Reached = time.UnixMilli(int64(s))
	}
	st.Left = max(st.Total-st.Sent-st.Skipped, 0)
	if st.Total < 0 {
		st.Left = -1
	}
	return st
}

// ErrRedriveLost is wrapped by the error of a [Redrive.Run] whose redrive
// another process took over (this one's lease had ended).
var ErrRedriveLost = errors.New("native: the redrive is held by another process now")

// pending is a failed job read ahead of the steps.
type pending struct {
	job   StoredJob
	score string
}

// Run drives the redrive until it is done or cancelled, or ctx ends: it
// sends the jobs its filter picks, oldest failure first, at its rate, a
// step of a few jobs at least 10ms apart (each step one script: the jobs
// go back and the cursor moves past them at once), holds while its
// dependency's breaker is open (asked before every step: open, or
// half-open with its probes out) and while it is paused, and renews its
// lease at every step. It returns the redrive's status; when ctx ends it
// lets the redrive go (running, for [Queue.ResumeRedrive] to go on from
// its cursor) and returns ctx's error too.
func (r *Redrive) Run(ctx context.Context) (RedriveStatus, error) {
	q := r.q
	st, ok, err := q.RedriveStatus(ctx)
	if err != nil {
		return st, err
	}
	if !ok {
		return st, fmt.Errorf("%w (queue %q)", ErrNoRedrive, q.name)
	}
	defer func() {
		// Let the redrive go, for another to resume at once.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = scriptRedriveRenew.Run(rctx, q.rdb, []string{q.keys.redrive}, r.owner, 0, "", "").Err()
	}()
	filter, leaseMs := st.Filter, r.o.lease().Milliseconds()
	until := st.Until.UnixMilli()
	h, err := q.rdb.HMGet(ctx, q.keys.redrive, "at", "after").Result()
	if err != nil {
		return st, fmt.Errorf("native: redrive of queue %q: %w", q.name, err)
	}
	at, after := fmt.Sprint(orEmpty(h[0])), fmt.Sprint(orEmpty(h[1]))
	readAt, readAfter, more := at, after, true
	var buf []pending
	var paceFrom time.Time
	var paced int64
	var lastStep, lastReport time.Time
	report := func() {
		if r.o.Progress != nil {
			lastReport = time.Now()
			if s, ok, err := q.RedriveStatus(ctx); err == nil && ok {
				r.o.Progress(s)
			}
		}
	}
	renew := func(why, total string) (RedriveState, error) {
		res, err := scriptRedriveRenew.Run(ctx, q.rdb, []string{q.keys.redrive}, r.owner, leaseMs, why, total).Slice()
		if err != nil {
			return "", fmt.Errorf("native: redrive of queue %q: renew its lease: %w", q.name, err)
		}
		if parseInt(res[0]) != 1 {
			return "", fmt.Errorf("%w (queue %q, held by %q)", ErrRedriveLost, q.name, replyString(res[2]))
		}
		return RedriveState(replyString(res[1])), nil
	}
	hold := func(why string) (RedriveState, error) { return renew(why, "") }
	wait := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		}
	}
	// The count first, in bounded steps (the lease renewed between
	// them), of the jobs failed by the start: before any is sent, so that
	// it counts each job the redrive may send.
	if st.Total < 0 {
		counted := filter
		if counted.To.IsZero() || counted.To.After(st.Until) {
			counted.To = st.Until
		}
		var total int
		for cursor := ""; ; {
			p, err := q.CountMatching(ctx, counted, ScanOptions{Cursor: cursor})
			if err != nil {
				return st, fmt.Errorf("native: redrive of queue %q: count the jobs (%d matched so far): %w", q.name, total, err)
			}
			total += p.Matched
			if cursor = p.Next; cursor == "" {
				break
			}
			if _, err := renew("counting", ""); err != nil {
				return st, err
			}
		}
		if _, err := renew("", strconv.Itoa(total)); err != nil {
			return st, err
		}
		report()
	}
	heldWhy := ""
	for {
		if err := ctx.Err(); err != nil {
			st, _, _ = q.RedriveStatus(context.WithoutCancel(ctx))
			return st, err
		}
		// The dependency's breaker, before every step.
		why := ""
		if r.o.Dependency != "" {
			bs, err := r.o.Breaker.Status(ctx, r.o.Dependency)
			switch {
			case err != nil && ctx.Err() != nil:
				continue
			case err != nil:
				why = "breaker store unreachable: " + err.Error()
			case bs.State == breaker.Open && (bs.NextProbe.IsZero() || bs.At.Before(bs.NextProbe)):
				why = "breaker " + r.o.Dependency + " open until " + bs.NextProbe.UTC().Format(time.RFC3339Nano)
			case bs.State == breaker.HalfOpen && bs.Probes > 0:
				why = "breaker " + r.o.Dependency + " half-open, its probes out"
			}
		}
		if why != "" {
			state, err := hold(why)
			if err != nil {
				return st, err
			}
			if state == RedriveCancelled {
				st, _, err = q.RedriveStatus(ctx)
				return st, err
			}
			if heldWhy != why {
				heldWhy = why
				report()
			}
			paceFrom = time.Time{}
			_ = wait(redriveHoldPoll)
			continue
		}
		heldWhy = ""
		// The pace: the n-th job of a stretch goes at paceFrom + n/rate.
		now := time.Now()
		if paceFrom.IsZero() {
			paceFrom, paced = now, 0
		}
		due := int64(now.Sub(paceFrom).Seconds()*r.o.Rate) - paced
		if due <= 0 || now.Sub(lastStep) < redriveTick {
			next := paceFrom.Add(time.Duration(float64(paced+1) / r.o.Rate * float64(time.Second)))
			next = maxTime(next, lastStep.Add(redriveTick))
			_ = wait(time.Until(next))
			continue
		}
		// Behind by more than redriveDebt's worth (this process was
		// stalled, or Redis was): the debt is forgiven, not caught up
		// in a burst the dependency would take at once.
		if most := int64(r.o.Rate*redriveDebt.Seconds()) + 1; due > most {
			paced += due - most
			due = most
		}
		due = min(due, MaxPageSize)
		// Read ahead.
		if len(buf) == 0 && more {
			jobs, where, m, err := q.page(ctx, StateFailed, redrivePage, "asc", readAt, readAfter)
			if err != nil {
				if ctx.Err() != nil {
					continue
				}
				return st, fmt.Errorf("native: redrive of queue %q: read the failed jobs: %w", q.name, err)
			}
			more = m && len(jobs) > 0
			for i, j := range jobs {
				s, _ := strconv.ParseFloat(where[i], 64)
				if int64(s) > until {
					more = false
					break
				}
				buf = append(buf, pending{j, where[i]})
			}
			if len(jobs) > 0 {
				readAt, readAfter = where[len(jobs)-1], jobs[len(jobs)-1].ID
			}
		}
		// Walk the buffer: the jobs to send, up to due of them.
		var args []any
		walked, picked := 0, int64(0)
		stamp := time.Now().UTC().Format(time.RFC3339Nano)
		for walked < len(buf) && picked < due {
			p := buf[walked]
			walked++
			if !filter.Match(p.job) {
				continue
			}
			m := p.job.Metadata
			if m == nil {
				m = map[string]string{}
			}
			m[RedrivenAtKey], m[RedriveFilterKey], m[RedriveIDKey] = stamp, filter.String(), st.ID
			args = append(args, p.job.ID, p.score, encodeMeta(m))
			picked++
		}
		done := walked == len(buf) && !more
		newAt, newAfter := at, after
		if walked > 0 {
			newAt, newAfter = buf[walked-1].score, buf[walked-1].job.ID
		}
		head := []any{r.owner, leaseMs, at, after, newAt, newAfter, walked, boolArg(done), boolArg(r.o.Retry.ResetAttempts)}
		res, err := scriptRedriveStep.Run(ctx, q.rdb, []string{q.keys.redrive, q.keys.jobs, q.keys.failed, q.keys.wait, q.keys.marker}, append(head, args...)...).Slice()
		lastStep = time.Now()
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			// The step may or may not have applied: read the cursor again.
			return st, fmt.Errorf("native: redrive of queue %q: a step: %w", q.name, err)
		}
		if parseInt(res[0]) != 1 {
			state, owner := RedriveState(replyString(res[1])), replyString(res[2])
			switch {
			case owner != r.owner:
				return st, fmt.Errorf("%w (queue %q, held by %q)", ErrRedriveLost, q.name, owner)
			case state == RedriveCancelled || state == RedriveDone:
				st, _, err = q.RedriveStatus(ctx)
				return st, err
			case state == RedrivePaused:
				if _, err := hold("paused"); err != nil {
					return st, err
				}
				if heldWhy != "paused" {
					heldWhy = "paused"
					report()
				}
				paceFrom = time.Time{}
				_ = wait(redriveHoldPoll)
				continue
			}
			return st, fmt.Errorf("native: redrive of queue %q: its cursor moved under this process (state %s)", q.name, state)
		}
		at, after = newAt, newAfter
		buf = buf[walked:]
		paced += picked
		if picked > 0 && time.Since(lastReport) >= 200*time.Millisecond {
			report()
		}
		if done {
			st, _, err = q.RedriveStatus(ctx)
			return st, err
		}
	}
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
