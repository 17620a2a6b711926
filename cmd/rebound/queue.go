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
	call := &queueCall{o: o, stdout: stdout}
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
	q, err := native.NewQueue(rdb, pos[0], native.WithPrefix(o.prefix))
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		fmt.Fprintf(stderr, "%s: Redis at %s does not answer: %s\n", fs.Name(), redisAddrs(rdb), redisURL.describe(err))
		return exitFail
	}
	call.ctx, call.q, call.rdb = ctx, q, rdb
	err = c.run(call)
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, native.ErrNotFound), errors.Is(err, native.ErrWrongState),
		errors.Is(err, native.ErrBadCursor), errors.Is(err, native.ErrCursorGone):
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
