package native_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
)

// exampleQueue returns a queue on an in-process miniredis, for the
// examples; stop closes both.
func exampleQueue(name string) (q *native.Queue, stop func()) {
	srv, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	q, err = native.NewQueue(rdb, name)
	if err != nil {
		panic(err)
	}
	return q, func() { _ = rdb.Close(); srv.Close() }
}

// Delayed jobs two to a page, soonest first: each page's Next is the
// cursor of the page after it.
func ExampleQueue_List() {
	q, stop := exampleQueue("reports")
	defer stop()
	ctx := context.Background()
	for i, id := range []string{"monthly", "daily", "hourly", "weekly", "yearly"} {
		delay := []time.Duration{720 * time.Hour, 24 * time.Hour, time.Hour, 168 * time.Hour, 8760 * time.Hour}[i]
		if _, err := q.Enqueue(ctx, nil, native.WithID(id), native.WithDelay(delay)); err != nil {
			panic(err)
		}
	}
	opts := native.ListOptions{Limit: 2, OldestFirst: true}
	for {
		page, err := q.List(ctx, native.StateDelayed, opts)
		if err != nil {
			panic(err)
		}
		for _, j := range page.Jobs {
			fmt.Print(j.ID, " ")
		}
		fmt.Println("|")
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	// Output:
	// hourly daily |
	// weekly monthly |
	// yearly |
}

// Send back to run the failed jobs whose last error says the connection
// was refused, with their attempts counted afresh.
func ExampleQueue_RetryFailed() {
	q, stop := exampleQueue("emails")
	defer stop()
	ctx := context.Background()
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Millisecond)), 1))
	w, err := native.NewWorker(q, rule, func(_ context.Context, j *native.Job) error {
		return errors.New(string(j.Payload))
	})
	if err != nil {
		panic(err)
	}
	if err := w.Start(); err != nil {
		panic(err)
	}
	for i, msg := range []string{"dial tcp 10.0.0.7:25: connection refused", "smtp: 550 mailbox unavailable", "dial tcp 10.0.0.8:25: connection refused"} {
		if _, err := q.Enqueue(ctx, []byte(msg), native.WithID(fmt.Sprint("mail-", i))); err != nil {
			panic(err)
		}
	}
	for c, _ := q.Counts(ctx); c.Failed < 3; c, _ = q.Counts(ctx) {
		time.Sleep(time.Millisecond)
	}
	if err := w.Shutdown(ctx); err != nil {
		panic(err)
	}

	n, err := q.RetryFailed(ctx, native.FailedFilter{Error: "*connection refused"}, native.RetryOptions{ResetAttempts: true})
	fmt.Println("sent back:", n, err)
	page, _ := q.List(ctx, native.StateFailed, native.ListOptions{})
	for _, j := range page.Jobs {
		fmt.Printf("still failed: %s (%s)\n", j.ID, j.LastError)
	}
	// Output:
	// sent back: 2 <nil>
	// still failed: mail-1 (smtp: 550 mailbox unavailable)
}

// Cancelling a running job ends it at once, failed and marked cancelled;
// its worker cancels the handler's context with ErrCancelled (and tells
// its observer and give-up hook the job ended, permanent).
func ExampleQueue_Cancel() {
	q, stop := exampleQueue("exports")
	defer stop()
	ctx := context.Background()
	running, stopped := make(chan context.Context, 1), make(chan struct{})
	w, err := native.NewWorker(q, backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Second)), 3)),
		func(ctx context.Context, j *native.Job) error {
			running <- ctx
			<-ctx.Done()
			close(stopped)
			return ctx.Err()
		})
	if err != nil {
		panic(err)
	}
	if err := w.Start(); err != nil {
		panic(err)
	}
	defer func() { _ = w.Shutdown(ctx) }()
	if _, err := q.Enqueue(ctx, []byte("all of it"), native.WithID("export-1")); err != nil {
		panic(err)
	}
	hctx := <-running
	was, err := q.Cancel(ctx, "export-1")
	fmt.Println("was", was, err)
	// Cancel returned once the worker had cancelled the handler's context.
	fmt.Println("handler's context:", context.Cause(hctx))
	<-stopped
	j, _ := q.Job(ctx, "export-1")
	fmt.Println(j.State, j.Cancelled, j.LastError)

	// A job that is done can no longer be cancelled: nothing changes.
	_, err = q.Cancel(ctx, "export-1")
	fmt.Println(errors.Is(err, native.ErrWrongState), err)
	// Output:
	// was active <nil>
	// handler's context: native: cancelled by an operator
	// failed true native: cancelled by an operator
	// true native: cannot cancel job "export-1" of queue "exports": it is failed, want waiting, delayed or active
}

// A paused queue's workers take no jobs; jobs wait, and run once it
// resumes.
func ExampleQueue_Pause() {
	q, stop := exampleQueue("thumbnails")
	defer stop()
	ctx := context.Background()
	if err := q.Pause(ctx); err != nil {
		panic(err)
	}
	ran := make(chan string, 3)
	w, err := native.NewWorker(q, backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Second)), 3)),
		func(_ context.Context, j *native.Job) error {
			ran <- j.ID
			return nil
		}, native.WithConcurrency(1)) // one at a time: in the order they wait
	if err != nil {
		panic(err)
	}
	if err := w.Start(); err != nil {
		panic(err)
	}
	defer func() { _ = w.Shutdown(ctx) }()
	for _, id := range []string{"a.png", "b.png", "c.png"} {
		if _, err := q.Enqueue(ctx, nil, native.WithID(id)); err != nil {
			panic(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	c, _ := q.Counts(ctx)
	fmt.Printf("paused %v, waiting %d, ran %d\n", c.Paused, c.Waiting, len(ran))

	if err := q.Resume(ctx); err != nil {
		panic(err)
	}
	var got []string
	for range 3 {
		got = append(got, <-ran)
	}
	fmt.Println("ran", strings.Join(got, " "))
	// Output:
	// paused true, waiting 3, ran 0
	// ran a.png b.png c.png
}

// RunNow makes a delayed job due at once, and refuses a job that is not
// delayed.
func ExampleQueue_RunNow() {
	q, stop := exampleQueue("digests")
	defer stop()
	ctx := context.Background()
	if _, err := q.Enqueue(ctx, nil, native.WithID("weekly"), native.WithDelay(7*24*time.Hour)); err != nil {
		panic(err)
	}
	fmt.Println(q.RunNow(ctx, "weekly"))
	j, _ := q.Job(ctx, "weekly")
	fmt.Println(j.State)
	fmt.Println(q.RunNow(ctx, "weekly"))
	fmt.Println(q.RunNow(ctx, "monthly"))
	// Output:
	// <nil>
	// waiting
	// native: cannot run job "weekly" of queue "digests" now: it is waiting, want delayed
	// native: no such job in the queue (queue "digests", ID "monthly")
}

// Group the failed jobs by their error's fingerprint, then retry the
// largest group in bounded steps, with progress.
func ExampleQueue_FailureGroups() {
	q, stop := exampleQueue("emails")
	defer stop()
	ctx := context.Background()
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Millisecond)), 1))
	// One handler, so the jobs fail in the order they were enqueued, and
	// the failed set (latest failure first) reads the same every run.
	w, err := native.NewWorker(q, rule, func(_ context.Context, j *native.Job) error {
		return errors.New(string(j.Payload))
	}, native.WithConcurrency(1))
	if err != nil {
		panic(err)
	}
	if err := w.Start(); err != nil {
		panic(err)
	}
	for i, msg := range []string{"dial tcp 10.0.0.7:25: i/o timeout after 5s", `smtp: mailbox "ada@example.com" unavailable`, "dial tcp 10.0.0.8:25: i/o timeout after 30s"} {
		if _, err := q.Enqueue(ctx, []byte(msg), native.WithID(fmt.Sprint("mail-", i))); err != nil {
			panic(err)
		}
	}
	for c, _ := q.Counts(ctx); c.Failed < 3; c, _ = q.Counts(ctx) {
		time.Sleep(time.Millisecond)
	}
	if err := w.Shutdown(ctx); err != nil {
		panic(err)
	}

	// One call reads at most DefaultScan jobs; Next goes on when it is set.
	groups, err := q.FailureGroups(ctx, native.Filter{}, native.ScanOptions{})
	if err != nil {
		panic(err)
	}
	for _, g := range groups.Groups {
		fmt.Printf("%d x %s\n", g.Count, g.Fingerprint)
	}
	f := native.Filter{State: native.StateFailed, Group: groups.Groups[0].ID}
	done, err := q.Bulk(ctx, native.BulkRetry, f, native.BulkOptions{ScanOptions: native.ScanOptions{Limit: 2}}, func(p native.BulkProgress) {
		fmt.Printf("step: %d read, %d retried\n", p.Scanned, p.Done)
	})
	fmt.Println("retried:", done.Done, err)
	// Output:
	// 2 x dial tcp <addr>: i/o timeout after <n>s
	// 1 x smtp: mailbox "<q>" unavailable
	// step: 2 read, 1 retried
	// step: 3 read, 2 retried
	// retried: 2 <nil>
}

// A failure group sent back at 100 jobs a second, the oldest failure
// first, each job with its record of the redrive.
func ExampleQueue_StartRedrive() {
	q, stop := exampleQueue("emails")
	defer stop()
	ctx := context.Background()
	rule := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Millisecond)), 1))
	w, err := native.NewWorker(q, rule, func(_ context.Context, j *native.Job) error {
		return errors.New(string(j.Payload))
	})
	if err != nil {
		panic(err)
	}
	if err := w.Start(); err != nil {
		panic(err)
	}
	for i, msg := range []string{"dial tcp 10.0.0.7:25: i/o timeout", `smtp: mailbox "ada@example.com" unavailable`, "dial tcp 10.0.0.8:25: i/o timeout"} {
		if _, err := q.Enqueue(ctx, []byte(msg), native.WithID(fmt.Sprint("mail-", i))); err != nil {
			panic(err)
		}
		for c, _ := q.Counts(ctx); c.Failed < int64(i+1); c, _ = q.Counts(ctx) {
			time.Sleep(time.Millisecond)
		}
	}
	if err := w.Shutdown(ctx); err != nil {
		panic(err)
	}

	group := native.GroupID(native.Fingerprint("dial tcp 10.0.0.7:25: i/o timeout"))
	r, err := q.StartRedrive(ctx, native.RedriveOptions{Filter: native.Filter{Group: group}, Rate: 100})
	if err != nil {
		panic(err)
	}
	if _, err := q.StartRedrive(ctx, native.RedriveOptions{Rate: 100}); errors.Is(err, native.ErrRedriveRunning) {
		fmt.Println("a second redrive: refused")
	}
	st, err := r.Run(ctx)
	fmt.Println(st.State, st.Sent, "sent of", st.Total, err)
	waiting, _ := q.List(ctx, native.StateWaiting, native.ListOptions{OldestFirst: true})
	for _, j := range waiting.Jobs {
		fmt.Println(j.ID, j.Metadata[native.RedriveFilterKey])
	}
	// Output:
	// a second redrive: refused
	// done 2 sent of 2 <nil>
	// mail-0 failed, group "d6a956c4bd9fec14"
	// mail-2 failed, group "d6a956c4bd9fec14"
}
