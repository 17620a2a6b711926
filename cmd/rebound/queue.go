package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/internal/ui"
)

// The queue command: a native queue's operator actions from the shell, as
// asynq's CLI, River UI and BullMQ's dashboards give them.

const queueSynopsis = `Usage: rebound queue -redis URL [-prefix P] [-json] COMMAND QUEUE [ARGS] [FLAGS]

queue shows and acts on a native queue's jobs, safe while workers run:
every action is one atomic step in Redis that acts only if the job is still
where the action applies.

Commands:

  ls QUEUE [-state S] [-n N] [-oldest] [-cursor C]
                  jobs in one state, newest first, a page at a time
  show QUEUE ID   one job: state, attempts, last error, times, payload
  counts QUEUE    how many jobs are in each state, and whether it is paused
  retry QUEUE (ID | -all | -name PAT | -error PAT) [-reset]
                  send failed jobs back to run
  run QUEUE ID    make a delayed job due now
  rm QUEUE ID     delete a job that is not running
  cancel QUEUE ID end a job for good (waiting, delayed or running): failed,
                  marked cancelled; a running job's worker cancels its handler
  groups QUEUE [FILTER]
                  failed jobs grouped by their error's fingerprint: counts,
                  first and last seen, an example
  bulk QUEUE (retry | rm | cancel) -state S [FILTER] [-yes] [-reset]
                  count the jobs a filter picks; with -yes act on them all,
                  in bounded steps with progress
  redrive QUEUE [FILTER] -rate R [-dependency D] [-yes]
                  send failed jobs back oldest first at R jobs/s, holding
                  while D's breaker is open; -status, -pause, -resume,
                  -cancel
  pause QUEUE     workers take no jobs until resume; running jobs finish
  resume QUEUE    workers take jobs again

A Redis URL with addr= parameters (redis://h1:7000?addr=h2:7000) is read as
a Redis Cluster; without -redis the URL is read from $REBOUND_REDIS_URL, so
that its password need not sit in argv. Job text a terminal would act on
(escape sequences, control and bidi characters, bytes that are not UTF-8)
prints as escapes; -json prints it exactly. "rebound queue COMMAND -h"
documents a command's flags.
Exit status: 0 done, 1 Redis failed, 2 bad input: a flag or argument, an
unknown job, or a job not in a state the action applies to (nothing
changed).
`

// queueFlags are the flags every queue command takes, before or after the
// command's name.
type queueFlags struct {
	redis, prefix string
	json          bool
	timeout       time.Duration
}

func (o *queueFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.redis, "redis", "", "the Redis at `URL` the queue lives on, such as redis://localhost:6379/0 (default $"+envRedisURL+")")
	fs.StringVar(&o.prefix, "prefix", native.DefaultPrefix, "the queue's key `prefix`")
	fs.BoolVar(&o.json, "json", false, "print JSON instead of a table, for scripts")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "give up after this long")
}

// A queueCommand is one subcommand of queue.
type queueCommand struct {
	name, args, doc string
	nargs           int  // positional arguments after QUEUE: 0 or 1 (an ID)
	optionalID      bool // the ID may be left out (retry -all)
	run             func(c *queueCall) error
}

// queueCall is one run of a queue command.
type queueCall struct {
	ctx    context.Context
	q      *native.Queue
	rdb    redis.UniversalClient
	id     string
	o      *queueFlags
	stdout io.Writer
	// The commands' own flags.
	state, cursor, name, errPat string
	n                           int
	oldest, all, reset          bool
	// The filter of groups and bulk.
	filter filterFlags
	yes    bool
	most   int
	stderr io.Writer
	// redrive's flags.
	rd redriveFlags
	// reshard's own flags.
	rs reshardFlags
}

// filterFlags are the flags of a native.Filter.
type filterFlags struct {
	id, name, err, group, from, to string
}

func (f *filterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.id, "id", "", "the jobs whose ID starts with `PREFIX`")
	fs.StringVar(&f.name, "name", "", "the jobs whose name holds `TEXT`")
	fs.StringVar(&f.err, "error", "", "the jobs whose last error holds `TEXT`")
	fs.StringVar(&f.group, "group", "", "the jobs of the failure group `ID` (as groups prints it)")
	fs.StringVar(&f.from, "from", "", "the jobs whose time is `T` or later: RFC 3339, or a duration ago such as 2h")
	fs.StringVar(&f.to, "to", "", "the jobs whose time is `T` or earlier: RFC 3339, or a duration ago")
}

// filter reads the flags as a filter of state st, relative times counted
// back from now.
func (f *filterFlags) filter(st native.State, now time.Time) (native.Filter, error) {
	out := native.Filter{State: st, IDPrefix: f.id, Name: f.name, Error: f.err, Group: f.group}
	for _, t := range []struct {
		flag, v string
		to      *time.Time
	}{{"-from", f.from, &out.From}, {"-to", f.to, &out.To}} {
		if t.v == "" {
			continue
		}
		if d, err := time.ParseDuration(t.v); err == nil && d >= 0 {
			*t.to = now.Add(-d)
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, t.v)
		if err != nil {
			return native.Filter{}, fmt.Errorf("%s %q is not a time, want RFC 3339 (2026-01-02T15:04:05Z) or a duration ago (90m)", t.flag, t.v)
		}
		*t.to = at
	}
	if !out.From.IsZero() && !out.To.IsZero() && out.To.Before(out.From) {
		return native.Filter{}, fmt.Errorf("-to %s is before -from %s, want a range", out.To.UTC().Format(time.RFC3339), out.From.UTC().Format(time.RFC3339))
	}
	return out, nil
}

// describe says in words which jobs f picks, for the command's output.
func (f *filterFlags) describe(st native.State) string {
	var parts []string
	for _, p := range []struct{ k, v string }{{"of group", f.group}, {"with an ID starting", f.id}, {"with a name holding", f.name}, {"with an error holding", f.err}, {"from", f.from}, {"to", f.to}} {
		if p.v != "" {
			parts = append(parts, p.k+" "+termText(ui.ShellQuote(p.v), false))
		}
	}
	if len(parts) == 0 {
		return st.String() + " jobs"
	}
	return st.String() + " jobs " + strings.Join(parts, ", ")
}

func queueCommands() []queueCommand {
	return []queueCommand{
		{name: "ls", args: "QUEUE [-state S] [-n N] [-oldest] [-cursor C]", run: (*queueCall).list, doc: `
ls lists the jobs in one state, -n at a time, newest first: waiting jobs
the last to run first, active ones by lease deadline, delayed ones by fire
time, completed and failed ones by finish time, each latest first. -oldest
lists from the other end: waiting jobs in the order workers take them,
delayed jobs soonest first. When more jobs follow, the last line gives the
command for the next page; pages stay correct while workers run.`},
		{name: "show", args: "QUEUE ID", nargs: 1, run: (*queueCall).show, doc: `
show prints one job: its state, attempts, last error, times (the Redis
server's clock, in UTC) and payload.`},
		{name: "counts", args: "QUEUE", run: (*queueCall).counts, doc: `
counts prints how many jobs are in each state, and whether the queue is
paused.`},
		{name: "retry", args: "QUEUE (ID | -all | -name PAT | -error PAT) [-reset]", nargs: 1, optionalID: true, run: (*queueCall).retry, doc: `
retry sends failed jobs back to the wait list: one by its ID, all of them
(-all), or those whose name or last error matches a glob (-name, -error;
both: a job must match both). In a glob * matches any run of bytes, ? one
byte, and \ makes the next byte literal; the whole text must match, so
-error '*connection refused*' finds the words anywhere. A job keeps the
attempts it used (one more run) unless -reset gives it its full MaxAttempts
again. Many jobs move in bounded steps, each bounded by the jobs, the
bytes and the matching it does, so Redis is never held for long: matching
reads each text once, whatever the glob (at most 16 KiB; a part between
stars that holds a ? at most 32 bytes).`},
		{name: "run", args: "QUEUE ID", nargs: 1, run: (*queueCall).runNow, doc: `
run makes a delayed job (a retry waiting its backoff, or a job enqueued
with a delay) due now: workers take it before the wait list.`},
		{name: "rm", args: "QUEUE ID", nargs: 1, run: (*queueCall).remove, doc: `
rm deletes a waiting, delayed, completed or failed job, record and all.
A running job is not deleted: cancel it.`},
		{name: "cancel", args: "QUEUE ID", nargs: 1, run: (*queueCall).cancel, doc: `
cancel ends a waiting, delayed or running job for good: it moves to the
failed set, marked cancelled. A running job's worker cancels the handler's
context and drops what it returns; its observers are told the job ended,
permanent. retry runs a cancelled job again.`},
		{name: "groups", args: "QUEUE [-id P] [-name T] [-error T] [-from T] [-to T] [-n N] [-most N] [-cursor C]", run: (*queueCall).groups, doc: `
groups reads the failed jobs, latest failure first, and groups them by
their last error's fingerprint: the error with its numbers, hex and UUID
IDs, IP addresses and ports and quoted values folded to placeholders (<n>,
<id>, <addr>, <q>), so that failures of one cause share one. It prints the
-n largest groups, each with its ID, count, first and last seen (failure
time) and an example job. The server's work is bounded: each request reads
at most 5000 jobs, and groups stops after -most jobs (0: all of them),
printing the -cursor that goes on. bulk -group ID acts on a group.`},
		{name: "bulk", args: "QUEUE (retry | rm | cancel) -state S [-id P] [-name T] [-error T] [-group ID] [-from T] [-to T] [-yes] [-reset]", nargs: 1, run: (*queueCall).bulk, doc: `
bulk acts on every job of one state that the filter picks: retry sends
failed jobs back to run, rm deletes jobs that are not running, cancel ends
waiting, delayed and running jobs. Without -yes it only counts them (a dry
run); with -yes it counts them, prints the count, then acts in bounded
steps (each reads at most 5000 jobs, each job acted on by its own atomic
step), printing the progress after each. The filter: -id an ID prefix,
-name and -error a text the name or last error holds, -group a failure
group's ID (see groups), -from and -to a range of the time the state's
list is ordered by (enqueued, lease deadline, fire time, finish time). A
job that moved on between the count and the action is left alone and
counted as skipped.`},
		{name: "redrive", args: "QUEUE [-id P] [-name T] [-error T] [-group ID] [-from T] [-to T] -rate R [-dependency D] [-reset] [-yes] | -status | -pause | -resume | -cancel", run: (*queueCall).redrive, doc: redriveDoc},
		{name: "reshard", args: "QUEUE -shards N [-yes] | -status | -finish", run: (*queueCall).reshard, doc: reshardDoc},
		{name: "pause", args: "QUEUE", run: (*queueCall).pause, doc: `
pause stops the queue's workers from taking jobs until resume. Running jobs
finish; enqueues go on, and retries still come due on time.`},
		{name: "resume", args: "QUEUE", run: (*queueCall).resume, doc: `
resume lets the queue's workers take jobs again.`},
	}
}

func queueCommandNames() string {
	var names []string
	for _, c := range queueCommands() {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

func runQueue(args []string, stdout, stderr io.Writer) int {
	o := new(queueFlags)
	top := newFlagSet("queue")
	o.register(top)
	err := top.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, queueSynopsis+"\nFlags:\n")
		printFlags(stdout, top)
		return exitOK
	}
	if err != nil {
		return usageError(stderr, top, "%v", err)
	}
	if top.NArg() == 0 {
		return usageError(stderr, top, "missing COMMAND, want one of %s", queueCommandNames())
	}
	name, rest := top.Arg(0), top.Args()[1:]
	for _, c := range queueCommands() {
		if c.name == name {
			return c.exec(o, rest, stdout, stderr)
		}
	}
	return usageError(stderr, top, "unknown command %q, want one of %s", name, queueCommandNames())
}

// exec parses the command's flags and arguments and runs it.
func (c queueCommand) exec(o *queueFlags, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("queue " + c.name)
	given := *o // the flags given before the command: registering resets them
	o.register(fs)
	*o = given
	call := &queueCall{o: o, stdout: stdout, stderr: stderr}
	switch c.name {
	case "ls":
		fs.StringVar(&call.state, "state", "failed", "the `STATE` to list: waiting, active, delayed, completed or failed")
		fs.IntVar(&call.n, "n", native.DefaultPageSize, "at most `N` jobs, 1.."+strconv.Itoa(native.MaxPageSize))
		fs.BoolVar(&call.oldest, "oldest", false, "list from the other end: the next to run, or the longest ago, first")
		fs.StringVar(&call.cursor, "cursor", "", "the `CURSOR` an earlier page printed, for the page after it")
	case "retry":
		fs.BoolVar(&call.all, "all", false, "every failed job")
		fs.StringVar(&call.name, "name", "", "the failed jobs whose name matches the glob `PAT`")
		fs.StringVar(&call.errPat, "error", "", "the failed jobs whose last error matches the glob `PAT`")
		fs.BoolVar(&call.reset, "reset", false, "start the jobs' attempts afresh")
	case "groups":
		call.filter.register(fs)
		fs.IntVar(&call.n, "n", 20, "print the `N` largest groups")
		fs.IntVar(&call.most, "most", 0, "read at most `N` failed jobs, 0 for all of them")
		fs.StringVar(&call.cursor, "cursor", "", "go on from the `CURSOR` an earlier groups printed")
	case "redrive":
		call.filter.register(fs)
		call.rd.register(fs)
		fs.BoolVar(&call.yes, "yes", false, "start the redrive; without it redrive only counts the jobs")
		fs.BoolVar(&call.reset, "reset", false, "start the jobs' attempts afresh")
	case "reshard":
		call.rs.register(fs)
		fs.BoolVar(&call.yes, "yes", false, "write the new layout; without it reshard only says what it would do")
	case "bulk":
		call.filter.register(fs)
		fs.StringVar(&call.state, "state", "", "the `STATE` of the jobs: waiting, active, delayed, completed or failed")
		fs.BoolVar(&call.yes, "yes", false, "act on the jobs; without it bulk only counts them")
		fs.BoolVar(&call.reset, "reset", false, "retry: start the jobs' attempts afresh")
	}
	pos, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "Usage: rebound queue -redis URL [-prefix P] [-json] %s %s\n%s\n\nFlags:\n", c.name, c.args, c.doc)
		printFlags(stdout, fs)
		return exitOK
	}
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	want := 1 + c.nargs
	redisURL := connFrom("-redis", o.redis, envRedisURL)
	switch {
	case len(pos) == 0:
		return usageError(stderr, fs, "missing QUEUE, the name of the native queue; want %s %s", c.name, c.args)
	case len(pos) > want || (len(pos) < want && !c.optionalID):
		return usageError(stderr, fs, "got %d arguments %q, want %s %s", len(pos), pos, c.name, c.args)
	case redisURL.raw == "":
		return usageError(stderr, fs, "missing -redis URL (or $%s), the Redis the queue lives on", envRedisURL)
	case o.timeout <= 0:
		return usageError(stderr, fs, "-timeout %s is not positive", o.timeout)
	}
	if len(pos) == 2 {
		call.id = pos[1]
	}
	if msg := call.check(c.name); msg != "" {
		return usageError(stderr, fs, "%s", msg)
	}
	rdb, err := redisClient(redisURL.raw)
	if err != nil {
		return usageError(stderr, fs, "%s: %s; want a URL such as redis://127.0.0.1:6379/0", redisURL, redisURL.describe(err))
	}
	defer rdb.Close()
	if _, err := native.NewQueue(rdb, pos[0], native.WithPrefix(o.prefix)); err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		fmt.Fprintf(stderr, "%s: Redis at %s does not answer: %s\n", fs.Name(), redisAddrs(rdb), redisURL.describe(err))
		return exitFail
	}
	// A sharded queue is served over all its shards, as its layout says.
	q, err := native.OpenQueue(ctx, rdb, pos[0], native.WithPrefix(o.prefix))
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return exitFail
	}
	call.ctx, call.q, call.rdb = ctx, q, rdb
	err = c.run(call)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, native.ErrNotFound), errors.Is(err, native.ErrWrongState),
		errors.Is(err, native.ErrBadCursor), errors.Is(err, native.ErrCursorGone),
		errors.Is(err, native.ErrRedriveRunning), errors.Is(err, native.ErrNoRedrive), errors.Is(err, native.ErrRedriveSharded),
		errors.Is(err, native.ErrReshardDraining):
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return exitFail
	}
}

// redisAddrs names the server (or the cluster's seed nodes) rdb talks to.
func redisAddrs(rdb redis.UniversalClient) string {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ", ")
	}
	return "the -redis URL"
}

// check validates the command's flags together; it returns what is wrong,
// or "".
func (c *queueCall) check(cmd string) string {
	switch cmd {
	case "ls":
		if _, ok := ui.ParseState(c.state); !ok {
			return fmt.Sprintf("-state %q is unknown, want waiting, active, delayed, completed or failed", c.state)
		}
		if c.n < 1 || c.n > native.MaxPageSize {
			return fmt.Sprintf("-n %d is out of range, want 1..%d", c.n, native.MaxPageSize)
		}
	case "groups":
		if c.n < 1 {
			return fmt.Sprintf("-n %d is not positive, want how many groups to print", c.n)
		}
		if c.most < 0 {
			return fmt.Sprintf("-most %d is negative, want a number of jobs (0 for all)", c.most)
		}
		if _, err := c.filter.filter(native.StateFailed, time.Now()); err != nil {
			return err.Error()
		}
	case "bulk":
		a, ok := bulkActions[c.id]
		if !ok {
			return fmt.Sprintf("action %q is unknown, want retry, rm or cancel", c.id)
		}
		st, ok := ui.ParseState(c.state)
		switch {
		case c.state == "":
			return "missing -state, the state of the jobs to act on: waiting, active, delayed, completed or failed"
		case !ok:
			return fmt.Sprintf("-state %q is unknown, want waiting, active, delayed, completed or failed", c.state)
		case !a.Applies(st):
			return fmt.Sprintf("%s does not apply to %s jobs: retry takes failed jobs, rm all but active ones, cancel waiting, delayed and active ones", c.id, st)
		case c.reset && a != native.BulkRetry:
			return "-reset is for retry only"
		}
		if _, err := c.filter.filter(st, time.Now()); err != nil {
			return err.Error()
		}
	case "redrive":
		return c.checkRedrive()
	case "reshard":
		return c.checkReshard()
	case "retry":
		filter := c.name != "" || c.errPat != ""
		switch {
		case c.id != "" && (c.all || filter):
			return fmt.Sprintf("give the job ID %q or -all or -name/-error, not both", c.id)
		case c.all && filter:
			return "give -all or -name/-error, not both: -all retries every failed job"
		case c.id == "" && !c.all && !filter:
			return "say which failed jobs to retry: an ID, -all, or -name PAT and/or -error PAT"
		case strings.ContainsRune(c.name+c.errPat, 0):
			return "a pattern holds a NUL byte"
		}
	}
	return ""
}

// now is the Redis server's clock: times a job shows are the server's, so
// "in 5m" is measured on the same clock.
func (c *queueCall) now() time.Time {
	if t, err := c.rdb.Time(c.ctx).Result(); err == nil {
		return t
	}
	return time.Now()
}

// out writes v as JSON.
func (c *queueCall) out(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (c *queueCall) list() error {
	state, _ := ui.ParseState(c.state)
	page, err := c.q.List(c.ctx, state, native.ListOptions{Limit: c.n, Cursor: c.cursor, OldestFirst: c.oldest})
	if err != nil {
		return err
	}
	if c.o.json {
		jobs := make([]jobOut, len(page.Jobs))
		for i, j := range page.Jobs {
			jobs[i] = toJobOut(c.q.Name(), j, false)
		}
		return c.out(struct {
			Queue string   `json:"queue"`
			State string   `json:"state"`
			Jobs  []jobOut `json:"jobs"`
			Next  string   `json:"next"`
		}{c.q.Name(), c.state, jobs, page.Next})
	}
	if len(page.Jobs) == 0 {
		fmt.Fprintf(c.stdout, "no %s jobs in queue %q\n", state, c.q.Name())
		return nil
	}
	now := c.now()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	when := map[native.State]string{native.StateWaiting: "ENQUEUED", native.StateActive: "LEASE UNTIL",
		native.StateDelayed: "FIRES", native.StateCompleted: "FINISHED", native.StateFailed: "FINISHED"}[state]
	head := "ID\tNAME\tATTEMPTS\t" + when
	withErr := state == native.StateDelayed || state == native.StateFailed
	if withErr {
		head += "\tLAST ERROR"
	}
	fmt.Fprintln(tw, head)
	for _, j := range page.Jobs {
		t := map[native.State]time.Time{native.StateWaiting: j.CreatedAt, native.StateActive: j.LeaseDeadline,
			native.StateDelayed: j.NextFireAt, native.StateCompleted: j.FinishedAt, native.StateFailed: j.FinishedAt}[state]
		row := []string{cell(j.ID, 40), cell(orDash(j.Name), 24), attempts(j), relTime(t, now)}
		if withErr {
			e := orDash(j.LastError)
			if j.Cancelled {
				e = "cancelled"
			}
			row = append(row, cell(e, 60))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(c.stdout, "more jobs follow: the next page is -cursor %s\n", page.Next)
	}
	return nil
}

func (c *queueCall) show() error {
	j, err := c.q.Job(c.ctx, c.id)
	if err != nil {
		return err
	}
	if c.o.json {
		return c.out(toJobOut(c.q.Name(), j, true))
	}
	now := c.now()
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	row("job", termText(j.ID, false))
	row("queue", termText(c.q.Name(), false))
	row("name", termText(orDash(j.Name), false))
	st := j.State.String()
	if j.Cancelled {
		st += " (cancelled by an operator)"
	}
	row("state", st)
	row("attempts", attempts(j))
	if j.LastError != "" {
		row("last error", termText(firstLine(j.LastError), false))
	}
	row("enqueued", absTime(j.CreatedAt, now))
	if !j.NextFireAt.IsZero() {
		row("fires", absTime(j.NextFireAt, now))
	}
	if !j.LeaseDeadline.IsZero() {
		row("lease until", absTime(j.LeaseDeadline, now))
	}
	if !j.FinishedAt.IsZero() {
		row("finished", absTime(j.FinishedAt, now))
	}
	row("payload", payloadText(j.Payload))
	label := "metadata:"
	for _, k := range slices.Sorted(maps.Keys(j.Metadata)) {
		fmt.Fprintf(tw, "%s\t%s=%s\n", label, plain(k), plain(j.Metadata[k]))
		label = ""
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if strings.Contains(j.LastError, "\n") {
		fmt.Fprintf(c.stdout, "\nlast error in full:\n%s\n", termText(j.LastError, true))
	}
	return nil
}

func (c *queueCall) counts() error {
	n, err := c.q.Counts(c.ctx)
	if err != nil {
		return err
	}
	if c.o.json {
		return c.out(struct {
			Queue     string `json:"queue"`
			Paused    bool   `json:"paused"`
			Waiting   int64  `json:"waiting"`
			Active    int64  `json:"active"`
			Delayed   int64  `json:"delayed"`
			Completed int64  `json:"completed"`
			Failed    int64  `json:"failed"`
		}{c.q.Name(), n.Paused, n.Waiting, n.Active, n.Delayed, n.Completed, n.Failed})
	}
	status := "running"
	if n.Paused {
		status = "paused: workers take no jobs until resume"
	}
	fmt.Fprintf(c.stdout, "queue %q: %s\n", c.q.Name(), status)
	rows := []struct {
		k string
		v int64
	}{{"waiting", n.Waiting}, {"active", n.Active}, {"delayed", n.Delayed}, {"completed", n.Completed}, {"failed", n.Failed}}
	width := 0
	for _, r := range rows {
		width = max(width, len(strconv.FormatInt(r.v, 10)))
	}
	for _, r := range rows {
		fmt.Fprintf(c.stdout, "  %-9s  %*d\n", r.k, width, r.v)
	}
	return nil
}

func (c *queueCall) retry() error {
	kept := "their attempts kept: one more run each"
	if c.reset {
		kept = "their attempts reset"
	}
	o := native.RetryOptions{ResetAttempts: c.reset}
	if c.id != "" {
		if err := c.q.Retry(c.ctx, c.id, o); err != nil {
			return err
		}
		if c.o.json {
			return c.out(actionOut{Queue: c.q.Name(), Action: "retry", ID: c.id, Moved: 1})
		}
		fmt.Fprintf(c.stdout, "job %s sent back to run, %s\n", termText(c.id, false), strings.Replace(strings.Replace(kept, "their", "its", 1), " each", "", 1))
		return nil
	}
	f := native.FailedFilter{Name: c.name, Error: c.errPat}
	n, err := c.q.RetryFailed(c.ctx, f, o)
	if err != nil {
		return fmt.Errorf("%w (%d jobs sent back before it)", err, n)
	}
	if c.o.json {
		return c.out(actionOut{Queue: c.q.Name(), Action: "retry", Moved: n})
	}
	which := "failed jobs"
	switch {
	case c.name != "" && c.errPat != "":
		which = fmt.Sprintf("failed jobs named %s with an error matching %s", ui.ShellQuote(c.name), ui.ShellQuote(c.errPat))
	case c.name != "":
		which = fmt.Sprintf("failed jobs named %s", ui.ShellQuote(c.name))
	case c.errPat != "":
		which = fmt.Sprintf("failed jobs with an error matching %s", ui.ShellQuote(c.errPat))
	}
	if n == 0 {
		fmt.Fprintf(c.stdout, "no %s in queue %q\n", which, c.q.Name())
		return nil
	}
	fmt.Fprintf(c.stdout, "%d %s sent back to run, %s\n", n, which, kept)
	return nil
}

func (c *queueCall) runNow() error {
	if err := c.q.RunNow(c.ctx, c.id); err != nil {
		return err
	}
	if c.o.json {
		return c.out(actionOut{Queue: c.q.Name(), Action: "run", ID: c.id, Was: "delayed"})
	}
	fmt.Fprintf(c.stdout, "job %s is due now\n", termText(c.id, false))
	return nil
}

func (c *queueCall) remove() error {
	was, err := c.q.Delete(c.ctx, c.id)
	if err != nil {
		return err
	}
	if c.o.json {
		return c.out(actionOut{Queue: c.q.Name(), Action: "rm", ID: c.id, Was: was.String()})
	}
	fmt.Fprintf(c.stdout, "job %s deleted (it was %s)\n", termText(c.id, false), was)
	return nil
}

func (c *queueCall) cancel() error {
	was, err := c.q.Cancel(c.ctx, c.id)
	if err != nil {
		return err
	}
	if c.o.json {
		return c.out(actionOut{Queue: c.q.Name(), Action: "cancel", ID: c.id, Was: was.String()})
	}
	if was == native.StateActive {
		fmt.Fprintf(c.stdout, "job %s cancelled: failed now; its worker cancels the running handler and drops its outcome\n", termText(c.id, false))
		return nil
	}
	fmt.Fprintf(c.stdout, "job %s cancelled (it was %s): failed now, it will not run\n", termText(c.id, false), was)
	return nil
}

// bulkActions are bulk's actions by the name the command takes.
var bulkActions = map[string]native.BulkAction{"retry": native.BulkRetry, "rm": native.BulkDelete, "cancel": native.BulkCancel}

// groupOut is a failure group in JSON.
type groupOut struct {
	ID           string `json:"id"`
	Fingerprint  string `json:"fingerprint"`
	Count        int    `json:"count"`
	FirstSeen    string `json:"firstSeen"`
	LastSeen     string `json:"lastSeen"`
	ExampleID    string `json:"exampleId"`
	ExampleError string `json:"exampleError"`
}

func (c *queueCall) groups() error {
	now := c.now()
	f, err := c.filter.filter(native.StateFailed, now)
	if err != nil {
		return err
	}
	var all native.GroupPage
	calls := 0
	cursor := c.cursor
	for {
		limit := native.DefaultScan
		if c.most > 0 {
			limit = min(limit, c.most-all.Scanned)
		}
		g, err := c.q.FailureGroups(c.ctx, f, native.ScanOptions{Cursor: cursor, Limit: limit})
		if err != nil {
			return fmt.Errorf("%w (after %d failed jobs read)", err, all.Scanned)
		}
		all.Merge(g)
		calls++
		if cursor = g.Next; cursor == "" || c.most > 0 && all.Scanned >= c.most {
			break
		}
	}
	shown := all.Groups[:min(len(all.Groups), c.n)]
	if c.o.json {
		out := make([]groupOut, len(shown))
		for i, g := range shown {
			out[i] = groupOut{g.ID, g.Fingerprint, g.Count, g.FirstSeen.UTC().Format(time.RFC3339Nano), g.LastSeen.UTC().Format(time.RFC3339Nano), g.ExampleID, g.ExampleError}
		}
		return c.out(struct {
			Queue   string     `json:"queue"`
			Groups  []groupOut `json:"groups"`
			More    int        `json:"moreGroups"` // groups not printed (past -n)
			Scanned int        `json:"scanned"`
			Matched int        `json:"matched"`
			Total   int64      `json:"total"`
			Next    string     `json:"next"` // the -cursor that goes on, "" when every failed job was read
		}{c.q.Name(), out, len(all.Groups) - len(shown), all.Scanned, all.Matched, all.Total, all.Next})
	}
	what := c.filter.describe(native.StateFailed)
	requests := "requests"
	if calls == 1 {
		requests = "request"
	}
	groups := "groups"
	if len(all.Groups) == 1 {
		groups = "group"
	}
	fmt.Fprintf(c.stdout, "%d %s in %d %s, of %d failed jobs read (%d %s)\n", all.Matched, what, len(all.Groups), groups, all.Scanned, calls, requests)
	if len(shown) > 0 {
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tJOBS\tFIRST SEEN\tLAST SEEN\tFINGERPRINT")
		for _, g := range shown {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", g.ID, g.Count, relTime(g.FirstSeen, now), relTime(g.LastSeen, now), cell(g.Fingerprint, 80))
			fmt.Fprintf(tw, "\t\t\t\t  e.g. job %s: %s\n", cell(g.ExampleID, 40), cell(g.ExampleError, 80))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if more := len(all.Groups) - len(shown); more > 0 {
		fmt.Fprintf(c.stdout, "%d smaller %s not shown (-n)\n", more, map[bool]string{true: "group", false: "groups"}[more == 1])
	}
	if all.Next != "" {
		fmt.Fprintf(c.stdout, "stopped after %d of %d failed jobs (-most), back to failures at %s: -cursor %s goes on\n", all.Scanned, all.Total, absTime(all.Reached, now), all.Next)
	}
	if len(shown) > 0 {
		fmt.Fprintf(c.stdout, "act on a group: rebound queue bulk %s retry -state failed -group %s [-yes]\n", termText(ui.ShellQuote(c.q.Name()), false), shown[0].ID)
	}
	return nil
}

// bulkOut is bulk's answer in JSON.
type bulkOut struct {
	Queue   string `json:"queue"`
	Action  string `json:"action"`
	State   string `json:"state"`
	DryRun  bool   `json:"dryRun"`
	Matched int    `json:"matched"` // jobs the filter picked, as the count found them
	Scanned int    `json:"scanned"`
	Done    int    `json:"done,omitempty"`
	Skipped int    `json:"skipped,omitempty"` // picked, but moved on before the action
}

// countMatching counts the jobs f picks, in CountMatching's bounded steps.
func (c *queueCall) countMatching(f native.Filter) (native.ScanProgress, error) {
	var count native.ScanProgress
	for cursor := ""; ; {
		p, err := c.q.CountMatching(c.ctx, f, native.ScanOptions{Cursor: cursor})
		if err != nil {
			return count, fmt.Errorf("%w (counting, after %d jobs read)", err, count.Scanned)
		}
		count.Scanned += p.Scanned
		count.Matched += p.Matched
		if cursor = p.Next; cursor == "" {
			return count, nil
		}
	}
}

func (c *queueCall) bulk() error {
	a := bulkActions[c.id]
	st, _ := ui.ParseState(c.state)
	f, err := c.filter.filter(st, c.now())
	if err != nil {
		return err
	}
	// The count first, in bounded steps.
	count, err := c.countMatching(f)
	if err != nil {
		return err
	}
	what := c.filter.describe(st)
	verb := map[native.BulkAction]string{native.BulkRetry: "retried", native.BulkDelete: "deleted", native.BulkCancel: "cancelled"}[a]
	out := bulkOut{Queue: c.q.Name(), Action: c.id, State: st.String(), DryRun: !c.yes, Matched: count.Matched, Scanned: count.Scanned}
	if !c.yes {
		if c.o.json {
			return c.out(out)
		}
		fmt.Fprintf(c.stdout, "%d %s match (of %d read); nothing changed: add -yes to %s them\n", count.Matched, what, count.Scanned, c.id)
		return nil
	}
	if !c.o.json {
		fmt.Fprintf(c.stdout, "%d %s match (of %d read); %s:\n", count.Matched, what, count.Scanned, map[native.BulkAction]string{native.BulkRetry: "retrying", native.BulkDelete: "deleting", native.BulkCancel: "cancelling"}[a])
	}
	if count.Matched == 0 {
		if c.o.json {
			return c.out(out)
		}
		fmt.Fprintf(c.stdout, "nothing to do\n")
		return nil
	}
	total, err := c.q.Bulk(c.ctx, a, f, native.BulkOptions{Retry: native.RetryOptions{ResetAttempts: c.reset}}, func(p native.BulkProgress) {
		if !c.o.json {
			fmt.Fprintf(c.stdout, "  %d read, %d %s, %d skipped\n", p.Scanned, p.Done, verb, p.Skipped)
		}
	})
	if err != nil {
		return fmt.Errorf("%w (%d jobs %s before it)", err, total.Done, verb)
	}
	out.Done, out.Skipped, out.Scanned = total.Done, total.Skipped, total.Scanned
	if c.o.json {
		return c.out(out)
	}
	fmt.Fprintf(c.stdout, "%d jobs %s, %d skipped (moved on since the count)\n", total.Done, verb, total.Skipped)
	return nil
}

func (c *queueCall) pause() error {
	if err := c.q.Pause(c.ctx); err != nil {
		return err
	}
	if c.o.json {
		return c.out(actionOut{Queue: c.q.Name(), Action: "pause"})
	}
	fmt.Fprintf(c.stdout, "queue %q paused: workers take no jobs until resume; running jobs finish\n", c.q.Name())
	return nil
}

func (c *queueCall) resume() error {
	if err := c.q.Resume(c.ctx); err != nil {
		return err
	}
	if c.o.json {
		return c.out(actionOut{Queue: c.q.Name(), Action: "resume"})
	}
	fmt.Fprintf(c.stdout, "queue %q resumed\n", c.q.Name())
	return nil
}

// actionOut is an action's answer in JSON.
type actionOut struct {
	Queue  string `json:"queue"`
	Action string `json:"action"`
	ID     string `json:"id,omitempty"`
	Was    string `json:"was,omitempty"`   // the state the job was in
	Moved  int    `json:"moved,omitempty"` // jobs sent back by retry
}

// jobOut is a job in JSON: times in RFC 3339 (UTC), omitted when unset; the
// payload as text when it is UTF-8, else in base64.
type jobOut struct {
	ID            string            `json:"id"`
	Queue         string            `json:"queue"`
	Name          string            `json:"name"`
	State         string            `json:"state"`
	Cancelled     bool              `json:"cancelled,omitempty"`
	Attempts      int               `json:"attempts"`
	MaxAttempts   int               `json:"maxAttempts"`
	LastError     string            `json:"lastError,omitempty"`
	CreatedAt     string            `json:"createdAt,omitempty"`
	NextFireAt    string            `json:"nextFireAt,omitempty"`
	LeaseDeadline string            `json:"leaseDeadline,omitempty"`
	FinishedAt    string            `json:"finishedAt,omitempty"`
	Payload       *string           `json:"payload,omitempty"`
	PayloadBase64 *string           `json:"payloadBase64,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
}

func toJobOut(queue string, j native.StoredJob, payload bool) jobOut {
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	out := jobOut{ID: j.ID, Queue: queue, Name: j.Name, State: j.State.String(), Cancelled: j.Cancelled,
		Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, LastError: j.LastError,
		CreatedAt: ts(j.CreatedAt), NextFireAt: ts(j.NextFireAt), LeaseDeadline: ts(j.LeaseDeadline), FinishedAt: ts(j.FinishedAt),
		Metadata: j.Metadata}
	if payload {
		if utf8.Valid(j.Payload) {
			s := string(j.Payload)
			out.Payload = &s
		} else {
			s := base64.StdEncoding.EncodeToString(j.Payload)
			out.PayloadBase64 = &s
		}
	}
	return out
}

// attempts prints a job's attempts: "2/5", or "2" when the worker's rule
// caps them.
func attempts(j native.StoredJob) string {
	if j.MaxAttempts > 0 {
		return fmt.Sprintf("%d/%d", j.Attempts, j.MaxAttempts)
	}
	return strconv.Itoa(j.Attempts)
}

// relTime prints t as far from now as it is: "in 5m", "3s ago".
func relTime(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now)
	switch {
	case d > time.Second/2:
		return "in " + fmtDur(d.Round(time.Second))
	case d < -time.Second/2:
		return fmtDur(-d.Round(time.Second)) + " ago"
	}
	return "now"
}

// absTime prints t in UTC to the millisecond, and how far from now it is.
func absTime(t, now time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.000Z") + " (" + relTime(t, now) + ")"
}

// payloadPreview is how much of a payload show prints.
const payloadPreview = 4 << 10

func payloadText(p []byte) string {
	switch {
	case len(p) == 0:
		return "empty"
	case !utf8.Valid(p):
		return fmt.Sprintf("%d bytes, binary (-json shows it in base64)", len(p))
	case len(p) > payloadPreview:
		cut := p[:payloadPreview]
		for !utf8.Valid(cut) {
			cut = cut[:len(cut)-1]
		}
		return strconv.Quote(string(cut)) + fmt.Sprintf(" ... (%d bytes; -json shows it whole)", len(p))
	}
	return strconv.Quote(string(p))
}

// cell makes s one table cell: its first line, at most n runes of it,
// with what a terminal would act on escaped (termText).
func cell(s string, n int) string {
	s = firstLine(s)
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n-1]) + "…"
	}
	return termText(s, false)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// plain prints s as it is when that reads unambiguously, else quoted.
func plain(s string) string {
	for _, r := range s {
		if r == '=' || r == '"' || !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
