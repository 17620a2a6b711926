package main

import (
	"context"
	"fmt"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/internal/ui"
)

// uiQueue is a native queue as the ui page's queue view uses it: its
// operator actions under the names of the view's optional interfaces. Its
// Name, Counts, Job, Pause and Resume are the queue's own.
type uiQueue struct {
	*native.Queue
	// brk is the breakers' store on the queue's Redis, which a redrive
	// naming a dependency asks; logf reports a redrive driven in the
	// background that stopped on an error.
	brk  breaker.Store
	logf func(format string, args ...any)
}

// Jobs lists at most limit jobs in state, in the order the page shows
// them: delayed jobs soonest first (the timeline of upcoming runs),
// waiting jobs in the order workers take them, active jobs by the lease
// that runs out first, completed and failed jobs latest first.
func (q uiQueue) Jobs(ctx context.Context, state native.State, limit int) ([]native.StoredJob, error) {
	oldest := state == native.StateDelayed || state == native.StateWaiting || state == native.StateActive
	page, err := q.List(ctx, state, native.ListOptions{Limit: limit, OldestFirst: oldest})
	return page.Jobs, err
}

// JobPage lists a page of jobs in state, in the order of Jobs, after
// cursor, and returns the cursor of the page after it.
func (q uiQueue) JobPage(ctx context.Context, state native.State, limit int, cursor string) ([]native.StoredJob, string, error) {
	oldest := state == native.StateDelayed || state == native.StateWaiting || state == native.StateActive
	page, err := q.List(ctx, state, native.ListOptions{Limit: limit, Cursor: cursor, OldestFirst: oldest})
	return page.Jobs, page.Next, err
}

// RetryJob sends a failed job back to run with its attempts counted
// afresh, as the page's confirmation says.
func (q uiQueue) RetryJob(ctx context.Context, id string) error {
	return q.Retry(ctx, id, native.RetryOptions{ResetAttempts: true})
}

// RunJobNow makes a delayed job due at once.
func (q uiQueue) RunJobNow(ctx context.Context, id string) error {
	return q.RunNow(ctx, id)
}

// DeleteJob deletes a job that is not running.
func (q uiQueue) DeleteJob(ctx context.Context, id string) error {
	_, err := q.Delete(ctx, id)
	return err
}

// Groups groups the failed jobs f picks, a bounded number read from
// cursor (native.DefaultScan).
func (q uiQueue) Groups(ctx context.Context, f native.Filter, cursor string) (native.GroupPage, error) {
	return q.FailureGroups(ctx, f, native.ScanOptions{Cursor: cursor})
}

// CountJobs counts the jobs f picks, a bounded number read from cursor
// (native.DefaultScan).
func (q uiQueue) CountJobs(ctx context.Context, f native.Filter, cursor string) (native.ScanProgress, error) {
	return q.CountMatching(ctx, f, native.ScanOptions{Cursor: cursor})
}

// BulkAct takes action a on the jobs f picks, a bounded number read from
// cursor (native.DefaultBulkScan); a retry counts the jobs' attempts
// afresh, as a single job's retry from the page does.
func (q uiQueue) BulkAct(ctx context.Context, a native.BulkAction, f native.Filter, cursor string) (native.BulkProgress, error) {
	return q.BulkStep(ctx, a, f, native.BulkOptions{ScanOptions: native.ScanOptions{Cursor: cursor}, Retry: native.RetryOptions{ResetAttempts: true}})
}

// Redrive reads the queue's redrive.
func (q uiQueue) Redrive(ctx context.Context) (native.RedriveStatus, bool, error) {
	return q.RedriveStatus(ctx)
}

// RedriveStart starts a redrive and drives it in the background, past the
// request: it goes on when the page goes away, and until the ui process
// stops (then -resume, from the page or the shell, goes on). Each job
// keeps the attempts it used, as `rebound queue redrive` without -reset.
func (q uiQueue) RedriveStart(ctx context.Context, f native.Filter, rate float64, dep string) error {
	r, err := q.StartRedrive(ctx, native.RedriveOptions{Filter: f, Rate: rate, Dependency: dep, Breaker: q.brk})
	if err != nil {
		return err
	}
	q.drive(r)
	return nil
}

// RedriveControl pauses, resumes or cancels the queue's redrive; a resume
// that takes it over drives it in the background.
func (q uiQueue) RedriveControl(ctx context.Context, action string) error {
	switch action {
	case "pause":
		return q.PauseRedrive(ctx)
	case "cancel":
		return q.CancelRedrive(ctx)
	case "resume":
		r, err := q.ResumeRedrive(ctx, native.ResumeOptions{Breaker: q.brk})
		if err == nil && r != nil {
			q.drive(r)
		}
		return err
	}
	return fmt.Errorf("redrive action %q is unknown, want pause, resume or cancel", action)
}

func (q uiQueue) drive(r *native.Redrive) {
	go func() {
		if _, err := r.Run(context.Background()); err != nil && q.logf != nil {
			q.logf("redrive of queue %q stopped: %v", q.Name(), err)
		}
	}()
}

var (
	_ ui.Redriver  = uiQueue{}
	_ ui.Grouper   = uiQueue{}
	_ ui.BulkActor = uiQueue{}
	_ ui.Queue     = uiQueue{}
	_ ui.JobLister = uiQueue{}
	_ ui.JobPager  = uiQueue{}
	_ ui.Retrier   = uiQueue{}
	_ ui.Runner    = uiQueue{}
	_ ui.Deleter   = uiQueue{}
	_ ui.Pauser    = uiQueue{}
)
