package main

import (
	"context"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/internal/ui"
)

// uiQueue is a native queue as the ui page's queue view uses it: its
// operator actions under the names of the view's optional interfaces. Its
// Name, Counts, Job, Pause and Resume are the queue's own.
type uiQueue struct {
	*native.Queue
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

var (
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
