package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/breaker/redisstore"
	"github.com/rebound-go/rebound/internal/ui"
)

// The redrive command: a queue's failed jobs sent back at a rate, held
// while their dependency's breaker is open, resumable (native.Redrive).

const redriveDoc = `
redrive sends the failed jobs the filter picks (the flags of bulk) back to
the wait list, the oldest failure first, at -rate jobs a second, and holds
while the breaker of -dependency (kept by breaker/redisstore on the same
Redis under -breaker-prefix) is open. Without -yes it only counts them;
with -yes it starts the redrive and drives it until the last job, printing
its progress each second. Jobs that fail after the start are not taken.
Each job sent back carries in its metadata when and under which filter
(show prints them). One redrive per queue at a time: its state lives in
Redis, held by this process's lease, so that another -status, -pause or
-cancel (from another shell, or the ui page) acts on it, and after this
process stops (Ctrl-C, a crash, kill -9) -resume goes on from where it
stopped, sending no job twice. -resume also lets a paused redrive run
again; when a live process drives it, that process goes on.`

// redriveFlags are redrive's own flags.
type redriveFlags struct {
	rate                          float64
	dep, brkPrefix                string
	status, pause, resume, cancel bool
}

func (f *redriveFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&f.rate, "rate", 0, "send `R` jobs a second (at most 10000)")
	fs.StringVar(&f.dep, "dependency", "", "hold while the breaker of dependency `D` is open")
	fs.StringVar(&f.brkPrefix, "breaker-prefix", redisstore.DefaultPrefix, "the breakers' key `prefix` (as rebound breaker takes it)")
	fs.BoolVar(&f.status, "status", false, "print the queue's redrive: state, progress, rate")
	fs.BoolVar(&f.pause, "pause", false, "pause the queue's redrive")
	fs.BoolVar(&f.resume, "resume", false, "resume the queue's redrive, and drive it if no live process does")
	fs.BoolVar(&f.cancel, "cancel", false, "cancel the queue's redrive (jobs sent stay sent)")
}

// control is the -status, -pause, -resume or -cancel given, "" for none.
func (f *redriveFlags) control() (string, int) {
	name, n := "", 0
	for _, c := range []struct {
		on   bool
		name string
	}{{f.status, "-status"}, {f.pause, "-pause"}, {f.resume, "-resume"}, {f.cancel, "-cancel"}} {
		if c.on {
			name, n = c.name, n+1
		}
	}
	return name, n
}

func (c *queueCall) checkRedrive() string {
	ctl, n := c.rd.control()
	filtered := c.filter != (filterFlags{})
	switch {
	case n > 1:
		return "give one of -status, -pause, -resume and -cancel"
	case n == 1 && (filtered || c.rd.rate != 0 || c.yes || c.reset):
		return ctl + " acts on the queue's redrive: give it without a filter, -rate, -reset or -yes"
	case n == 1 && c.rd.dep != "" && ctl != "-resume":
		return ctl + " takes no -dependency (the redrive keeps its own)"
	case n == 1:
		return ""
	case c.rd.rate == 0:
		return "missing -rate R, the jobs a second to send back (or one of -status, -pause, -resume and -cancel)"
	case c.rd.rate < 0 || c.rd.rate > native.MaxRedriveRate:
		return fmt.Sprintf("-rate %v is out of range, want jobs per second over 0 and at most %d", c.rd.rate, native.MaxRedriveRate)
	}
	if _, err := c.filter.filter(native.StateFailed, time.Now()); err != nil {
		return err.Error()
	}
	return ""
}

func (c *queueCall) redrive() error {
	switch ctl, _ := c.rd.control(); ctl {
	case "-status":
		return c.redriveStatus()
	case "-pause", "-cancel":
		act, verb := c.q.PauseRedrive, "paused: its process sends nothing more until -resume"
		if ctl == "-cancel" {
			act, verb = c.q.CancelRedrive, "cancelled: its process sends nothing more; jobs sent stay sent"
		}
		if err := act(c.ctx); err != nil {
			return err
		}
		if c.o.json {
			return c.out(actionOut{Queue: c.q.Name(), Action: "redrive " + ctl})
		}
		fmt.Fprintf(c.stdout, "redrive of queue %s %s\n", termText(ui.ShellQuote(c.q.Name()), false), verb)
		return nil
	case "-resume":
		r, err := c.q.ResumeRedrive(c.ctx, native.ResumeOptions{Breaker: c.breakerStore(), Progress: c.redriveProgress()})
		if err != nil {
			return err
		}
		if r == nil {
			if c.o.json {
				return c.redriveStatus()
			}
			fmt.Fprintf(c.stdout, "redrive of queue %s running: a live process drives it and goes on\n", termText(ui.ShellQuote(c.q.Name()), false))
			return nil
		}
		return c.drive(r, "resumed")
	}
	now := c.now()
	f, err := c.filter.filter(native.StateFailed, now)
	if err != nil {
		return err
	}
	what := c.filter.describe(native.StateFailed)
	if !c.yes {
		count, err := c.countMatching(f)
		if err != nil {
			return err
		}
		if c.o.json {
			return c.out(struct {
				Queue   string  `json:"queue"`
				DryRun  bool    `json:"dryRun"`
				Matched int     `json:"matched"`
				Scanned int     `json:"scanned"`
				Rate    float64 `json:"rate"`
			}{c.q.Name(), true, count.Matched, count.Scanned, c.rd.rate})
		}
		fmt.Fprintf(c.stdout, "%d %s match (of %d read); at %g/s a redrive takes %s; nothing changed: add -yes to start it\n",
			count.Matched, what, count.Scanned, c.rd.rate, (time.Duration(float64(count.Matched) / c.rd.rate * float64(time.Second))).Round(time.Second))
		return nil
	}
	r, err := c.q.StartRedrive(c.ctx, native.RedriveOptions{Filter: f, Rate: c.rd.rate, Dependency: c.rd.dep, Breaker: c.breakerStore(),
		Retry: native.RetryOptions{ResetAttempts: c.reset}, Progress: c.redriveProgress()})
	if err != nil {
		return err
	}
	return c.drive(r, "started")
}

// breakerStore is the store of the breakers on the queue's Redis, read
// by a redrive that names a dependency (a resumed one included).
func (c *queueCall) breakerStore() breaker.Store {
	return redisstore.New(c.rdb, breaker.Rules{}, redisstore.Options{Prefix: c.rd.brkPrefix})
}

// redriveProgress prints a progress line at most once a second, and each
// change of what holds it.
func (c *queueCall) redriveProgress() func(native.RedriveStatus) {
	if c.o.json {
		return nil
	}
	last := time.Now() // the first line a second in
	held := ""
	return func(st native.RedriveStatus) {
		why := st.Held
		if st.State == native.RedrivePaused {
			why = "paused"
		}
		if why == held && time.Since(last) < time.Second {
			return
		}
		last, held = time.Now(), why
		line := fmt.Sprintf("  %d sent, %d left", st.Sent, st.Left)
		if st.Total < 0 {
			line = "  counting the jobs"
		}
		if st.Skipped > 0 {
			line += fmt.Sprintf(", %d skipped", st.Skipped)
		}
		if why != "" {
			line += ": holding, " + termText(why, false)
		}
		fmt.Fprintln(c.stdout, line)
	}
}

// drive runs the redrive r to its end (or until interrupted), without the
// command's -timeout: a redrive takes as long as its rate says.
func (c *queueCall) drive(r *native.Redrive, how string) error {
	ctx, stop := signal.NotifyContext(context.WithoutCancel(c.ctx), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !c.o.json {
		st, _, err := c.q.RedriveStatus(ctx)
		if err != nil {
			return err
		}
		left := ""
		if st.Left >= 0 {
			left = fmt.Sprintf(" (%d left)", st.Left)
		}
		fmt.Fprintf(c.stdout, "redrive %s of queue %s %s: %s%s at %g/s%s; Ctrl-C stops this process, -resume goes on\n",
			st.ID, termText(ui.ShellQuote(c.q.Name()), false), how, termText(st.Filter.String(), false), left, st.Rate, depText(st.Dependency))
	}
	st, err := r.Run(ctx)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(c.stderr, "interrupted after %d sent (%d left): rebound queue redrive %s -resume goes on\n", st.Sent, st.Left, termText(ui.ShellQuote(c.q.Name()), false))
		return nil
	}
	if err != nil {
		return err
	}
	if c.o.json {
		return c.out(redriveJSON(c.q.Name(), st))
	}
	fmt.Fprintf(c.stdout, "redrive %s %s: %d sent, %d skipped (gone from the failed set meanwhile), %d left\n", st.ID, st.State, st.Sent, st.Skipped, st.Left)
	return nil
}

func depText(dep string) string {
	if dep == "" {
		return ""
	}
	return ", holding while the breaker of " + termText(ui.ShellQuote(dep), false) + " is open"
}

// redriveOut is a redrive in JSON.
type redriveOut struct {
	Queue      string  `json:"queue"`
	ID         string  `json:"id"`
	State      string  `json:"state"`
	Held       string  `json:"held,omitempty"`
	Filter     string  `json:"filter"`
	Rate       float64 `json:"rate"`
	Dependency string  `json:"dependency,omitempty"`
	Total      int64   `json:"total"`
	Sent       int64   `json:"sent"`
	Skipped    int64   `json:"skipped"`
	Left       int64   `json:"left"`
	Started    string  `json:"started"`
	Updated    string  `json:"updated"`
	Finished   string  `json:"finished,omitempty"`
	LeaseUntil string  `json:"leaseUntil"`
	Live       bool    `json:"live"`
}

func redriveJSON(queue string, st native.RedriveStatus) redriveOut {
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	return redriveOut{queue, st.ID, string(st.State), st.Held, st.Filter.String(), st.Rate, st.Dependency, st.Total, st.Sent, st.Skipped, st.Left,
		ts(st.Started), ts(st.Updated), ts(st.Finished), ts(st.LeaseUntil), st.Live}
}

func (c *queueCall) redriveStatus() error {
	st, ok, err := c.q.RedriveStatus(c.ctx)
	if err != nil {
		return err
	}
	if !ok {
		if c.o.json {
			return c.out(struct {
				Queue string `json:"queue"`
				None  bool   `json:"none"`
			}{c.q.Name(), true})
		}
		fmt.Fprintf(c.stdout, "queue %s has no redrive\n", termText(ui.ShellQuote(c.q.Name()), false))
		return nil
	}
	if c.o.json {
		return c.out(redriveJSON(c.q.Name(), st))
	}
	now := c.now()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("redrive", st.ID)
	row("queue", termText(c.q.Name(), false))
	state := string(st.State)
	if st.Held != "" && st.Held != "counting" && st.State == native.RedriveRunning {
		state += ", holding: " + termText(st.Held, false)
	}
	row("state", state)
	row("filter", termText(st.Filter.String(), false))
	row("rate", fmt.Sprintf("%g jobs/s", st.Rate))
	if st.Dependency != "" {
		row("dependency", termText(st.Dependency, false))
	}
	pct := 100.0
	if st.Total > 0 {
		pct = float64(st.Sent+st.Skipped) / float64(st.Total) * 100
	}
	switch {
	case st.Total < 0 && (st.State == native.RedriveRunning || st.State == native.RedrivePaused):
		row("progress", "counting the jobs (none is sent before the count)")
	case st.Total < 0:
		row("progress", "none sent: it ended before its count")
	default:
		row("progress", fmt.Sprintf("%d sent, %d skipped, %d left of %d (%.0f%%)", st.Sent, st.Skipped, st.Left, st.Total, pct))
	}
	if !st.Reached.IsZero() {
		row("reached", "failures of "+absTime(st.Reached, now))
	}
	row("started", absTime(st.Started, now))
	row("updated", absTime(st.Updated, now))
	if !st.Finished.IsZero() {
		row("finished", absTime(st.Finished, now))
	}
	if st.State == native.RedriveRunning || st.State == native.RedrivePaused {
		lease := "ended " + absTime(st.LeaseUntil, now) + ": no process drives it; -resume goes on"
		if st.Live {
			lease = "a live process drives it, lease until " + absTime(st.LeaseUntil, now)
		}
		row("driver", lease)
	}
	return tw.Flush()
}
