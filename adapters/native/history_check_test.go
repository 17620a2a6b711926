package native

// The history test's record and checker: every call a producer or operator
// made (its start, end and result), every handler start and end, every
// observer and give-up call, every crash, and the final keys as the queue's
// own inspection API reads them; the checker reads them all against a model
// of the queue and names each invariant a history violates. See
// history_sim_test.go (miniredis under testing/synctest) and
// history_real_test.go (real Redis, real worker processes, real signals).

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// hEvent is one thing a history saw. Events of one process are ordered by
// Seq (taken under the history's lock, so it is a total order that agrees
// with what happened before what); events of different processes (the
// real mode's worker processes) by At, the wall clock in nanoseconds.
type hEvent struct {
	Seq  int64  `json:"s"`
	At   int64  `json:"t"`
	Proc string `json:"p,omitempty"` // "" for the test's own process
	// Kind is call, start (a handler), end (a handler returned), ctxdone
	// (a handler's context ended, its cause's text in Err), obsstart,
	// obsend, giveup, crash.
	Kind    string `json:"k"`
	Actor   string `json:"a"`
	Job     string `json:"j,omitempty"`
	Attempt int    `json:"n,omitempty"`
	Max     int    `json:"m,omitempty"`
	// Deadline is a handler's context deadline (UnixNano), 0 for none.
	Deadline int64 `json:"d,omitempty"`
	// Ret is what a handler returned: "nil" or "err".
	Ret string `json:"r,omitempty"`

	// A call: Op, its start (StartAt, StartSeq), its result (OK, Err, Was),
	// and for an enqueue the job's name, cap, and fire time (FireMs, 0 for
	// a job to run at once); CallID and Idx order the jobs of one
	// EnqueueMany.
	Op       string `json:"o,omitempty"`
	StartAt  int64  `json:"sa,omitempty"`
	StartSeq int64  `json:"ss,omitempty"`
	OK       bool   `json:"ok,omitempty"`
	Err      string `json:"e,omitempty"`
	Was      string `json:"w,omitempty"`
	Name     string `json:"nm,omitempty"`
	Filter   string `json:"f,omitempty"` // RetryFailed: "name=<glob>" or "error=<glob>"
	FireMs   int64  `json:"fm,omitempty"`
	CallID   int64  `json:"c,omitempty"`
	Idx      int    `json:"i,omitempty"`

	// An observer's end or a give-up call: how the attempt ended.
	Outcome string `json:"out,omitempty"` // observe.Result.Outcome()
	FireAt  int64  `json:"fa,omitempty"`
}

// point is one instant of a history: an event's, or a call's start.
type point struct {
	proc    string
	at, seq int64
}

func (e *hEvent) end() point   { return point{e.Proc, e.At, e.Seq} }
func (e *hEvent) start() point { return point{e.Proc, e.StartAt, e.StartSeq} }

// before reports whether a certainly came before b: by Seq within one
// process, by the clock across processes.
func before(a, b point) bool {
	if a.proc == b.proc && a.seq > 0 && b.seq > 0 {
		return a.seq < b.seq
	}
	return a.at < b.at
}

// history collects the events of one run. Events of an actor marked dead
// (a crashed worker) are dropped: a process killed with SIGKILL records
// nothing more, starts no handler and calls no hook.
type history struct {
	mu     sync.Mutex
	seq    int64
	events []*hEvent
	dead   map[string]bool
	calls  atomic.Int64
	now    func() time.Time
}

func newHistory() *history {
	return &history{dead: map[string]bool{}, now: time.Now}
}

// add records e unless its actor is dead; it reports whether it did.
func (h *history) add(e *hEvent) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead[e.Actor] {
		return false
	}
	h.seq++
	e.Seq = h.seq
	if e.At == 0 {
		e.At = h.now().UnixNano()
	}
	h.events = append(h.events, e)
	return true
}

// mark takes a point for a call's start.
func (h *history) mark() point {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	return point{"", h.now().UnixNano(), h.seq}
}

// call records a finished call that started at p.
func (h *history) call(p point, e *hEvent) {
	e.Kind, e.StartAt, e.StartSeq = "call", p.at, p.seq
	h.add(e)
}

// crash marks actor dead and records it: from now on it records nothing.
func (h *history) crash(actor string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	h.events = append(h.events, &hEvent{Seq: h.seq, At: h.now().UnixNano(), Kind: "crash", Actor: actor})
	h.dead[actor] = true
}

// merge adds the events another process recorded (already ordered by their
// own Seq).
func (h *history) merge(evs []*hEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, evs...)
}

// hFinal is what the queue holds once the history is over and drained.
type hFinal struct {
	jobs      map[string]StoredJob // by ID, jobs the inspector found
	problems  []string             // one-state problems of the final snapshot
	running   []string             // one-state problems seen during the run
	drainErr  string               // non-empty when the queue did not drain
	fifoQueue string               // the queue whose FIFO order is checked ("" for none): job IDs starting with "f"
	ruleMax   int                  // the workers' rule's MaxAttempts
}

// violation is one invariant a history broke, with what shows it.
type violation struct {
	inv    string
	detail string
}

// invariants names every invariant the checker checks, with what it means.
var invariants = []struct{ name, what string }{
	{"one-state", "every job is in exactly one state at a time: on one list or set, once, with a record, a lease token exactly while active"},
	{"acked-ends-terminal", "every acknowledged job not deleted ends completed or failed, never lost"},
	{"drains", "once producers and operators stop, every job ends"},
	{"unsent-not-stored", "an Enqueue that returned its ctx's error itself (its job never sent, see the group commit) stored nothing"},
	{"attempts-cap", "no attempt runs above the job's cap, none is numbered below 1, and no stored count is above the cap"},
	{"duplicate-id", "an ID taken by a job that was not deleted is refused (ErrJobExists)"},
	{"start-after-cancel", "no handler starts after Cancel of its job returned success (unless a retry or enqueue revived the job)"},
	{"start-after-delete", "no handler starts after Delete of its job returned success (unless an enqueue revived the ID)"},
	{"not-early", "no run of a job enqueued with a delay starts before the instant its enqueue asked for, unless RunNow, a retry or another enqueue may have made it due sooner"},
	{"deadline-success", "no attempt that returned at or after its WithTimeout deadline is stored or reported as a success"},
	{"fifo-same-ms", "jobs due in the same millisecond run in enqueue order (per queue)"},
	{"giveup-owed", "the give-up hook is called for every job that gave up (exhausted or permanent), across crashes"},
	{"giveup-owed-cancel", "the give-up hook is called for every running job an operator cancelled, across crashes"},
	{"no-overlap-stale-start", "no job reserved ahead starts on a worker that was stopped or cut off past its lease while another worker runs it"},
	{"no-overlap-cancel", "no run of a job starts, after a Cancel that found it running returned, beside the cancelled run unless that run's context was cancelled by the cancel"},
	{"observer-stored", "what observers and the give-up hook are told equals what is stored"},
	{"observer-once", "each attempt's end is reported once"},
	{"no-overlap", "no two runs of one job overlap, except after the first's context ended (timeout, cancel, lost lease) or its process died"},
}

// check reads history evs and the final state against the queue's model.
func check(evs []*hEvent, fin hFinal) []violation {
	c := &checker{fin: fin, byJob: map[string]*jobHist{}, ruleMax: fin.ruleMax}
	// In time order: the processes' records merged by the clock, each
	// process's own by its sequence.
	evs = append([]*hEvent(nil), evs...)
	sort.SliceStable(evs, func(a, b int) bool {
		if evs[a].At != evs[b].At {
			return evs[a].At < evs[b].At
		}
		return evs[a].Seq < evs[b].Seq
	})
	for _, e := range evs {
		c.index(e)
	}
	for _, p := range fin.running {
		c.bad("one-state", "during the run: %s", p)
	}
	for _, p := range fin.problems {
		c.bad("one-state", "at the end: %s", p)
	}
	if fin.drainErr != "" {
		c.bad("drains", "%s", fin.drainErr)
	}
	ids := make([]string, 0, len(c.byJob))
	for id := range c.byJob {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		c.job(id, c.byJob[id])
	}
	c.fifo()
	return c.out
}

// jobHist is everything a history holds of one job ID.
type jobHist struct {
	enqueues     []*hEvent // successful enqueues
	refused      []*hEvent // enqueues refused as duplicates
	maybe        []*hEvent // enqueues that failed in flight: stored or not
	unsent       []*hEvent // Enqueue calls that returned their ctx's error: never sent
	maybeDeletes []*hEvent // deletes that failed in flight
	cancels      []*hEvent // successful cancels
	deletes      []*hEvent // successful deletes
	retries      []*hEvent // successful Retry calls of this job
	runNows      []*hEvent
	starts       []*hEvent // handler starts
	runs         map[*hEvent]*run
	obsEnds      []*hEvent
	obsStarts    []*hEvent
	giveUps      []*hEvent
	name         string
	max          int // the cap the job was enqueued with (0: the rule's)
}

// run is one handler run: its start, end and the end of its context.
type run struct {
	start, end, ctxDone *hEvent
}

type checker struct {
	fin          hFinal
	byJob        map[string]*jobHist
	retryFailed  []*hEvent // every RetryFailed call (any job it matches may be revived)
	crashes      map[string]*hEvent
	stalls       []*hEvent       // a worker stopped or cut off from Redis (Actor "*": Redis itself) from StartAt to At
	openRuns     map[string]*run // by actor/job/attempt
	ruleMax      int
	out          []violation
	enqueueCalls []*hEvent
}

func (c *checker) bad(inv, format string, args ...any) {
	c.out = append(c.out, violation{inv, fmt.Sprintf(format, args...)})
}

func (c *checker) jh(id string) *jobHist {
	j := c.byJob[id]
	if j == nil {
		j = &jobHist{runs: map[*hEvent]*run{}}
		c.byJob[id] = j
	}
	return j
}

func runKey(e *hEvent) string { return fmt.Sprintf("%s|%s|%s|%d", e.Proc, e.Actor, e.Job, e.Attempt) }

func (c *checker) index(e *hEvent) {
	if c.crashes == nil {
		c.crashes, c.openRuns = map[string]*hEvent{}, map[string]*run{}
	}
	switch e.Kind {
	case "crash":
		c.crashes[e.Proc+"|"+e.Actor] = e
		return
	case "stall":
		c.stalls = append(c.stalls, e)
		return
	case "call":
		if e.Op == "retry_failed" {
			c.retryFailed = append(c.retryFailed, e)
			return
		}
		if e.Job == "" {
			return
		}
		j := c.jh(e.Job)
		switch e.Op {
		case "enqueue", "enqueue_many":
			if e.OK {
				j.enqueues = append(j.enqueues, e)
				j.name, j.max = e.Name, e.Max
				c.enqueueCalls = append(c.enqueueCalls, e)
			} else if e.Op == "enqueue" && (e.Err == context.Canceled.Error() || e.Err == context.DeadlineExceeded.Error()) {
				// Enqueue returned its ctx's error itself: never sent.
				j.unsent = append(j.unsent, e)
			} else if strings.Contains(e.Err, ErrJobExists.Error()) && len(j.enqueues)+len(j.maybe) > 0 {
				j.refused = append(j.refused, e)
			} else {
				// (A first enqueue of an ID refused as taken was retried by
				// the client after its first try's reply was lost: taken by
				// that try, as EnqueueMany's doc says.)
				// Failed in flight (Redis restarted, a connection cut): it
				// may or may not have been stored.
				j.maybe = append(j.maybe, e)
				j.name, j.max = e.Name, e.Max
			}
		case "cancel":
			if e.OK {
				j.cancels = append(j.cancels, e)
			}
		case "delete":
			if e.OK {
				j.deletes = append(j.deletes, e)
			} else if !strings.Contains(e.Err, "native: ") || strings.Contains(e.Err, "native: delete job") {
				j.maybeDeletes = append(j.maybeDeletes, e) // failed in flight: it may have deleted the job
			}
		case "retry":
			if e.OK || !strings.Contains(e.Err, ErrWrongState.Error()) && !strings.Contains(e.Err, ErrNotFound.Error()) {
				j.retries = append(j.retries, e) // (one failed in flight may have applied)
			}
		case "run_now":
			j.runNows = append(j.runNows, e) // (one failed in flight may have applied)
		}
	case "start":
		j := c.jh(e.Job)
		j.starts = append(j.starts, e)
		r := &run{start: e}
		j.runs[e] = r
		c.openRuns[runKey(e)] = r
	case "end", "ctxdone":
		r := c.openRuns[runKey(e)]
		if r == nil {
			return
		}
		if e.Kind == "end" {
			r.end = e
		} else if r.ctxDone == nil {
			r.ctxDone = e
		}
	case "obsstart":
		j := c.jh(e.Job)
		j.obsStarts = append(j.obsStarts, e)
	case "obsend":
		j := c.jh(e.Job)
		j.obsEnds = append(j.obsEnds, e)
	case "giveup":
		j := c.jh(e.Job)
		j.giveUps = append(j.giveUps, e)
	}
}

// revivers are the successful calls that may have brought job id back
// after it ended or was removed: its enqueues, its retries, and every
// RetryFailed whose filter can match it.
func (c *checker) revivers(id string, j *jobHist, byEnqueueOnly bool) []*hEvent {
	out := append(append([]*hEvent(nil), j.enqueues...), j.maybe...)
	if byEnqueueOnly {
		return out
	}
	out = append(out, j.retries...)
	for _, r := range c.retryFailed {
		if f, ok := strings.CutPrefix(r.Filter, "name="); ok && f != "" && f != j.name {
			continue
		}
		out = append(out, r)
	}
	return out
}

// revivedBetween reports whether one of revs may have taken effect after
// a's point and before b's.
func revivedBetween(revs []*hEvent, a, b point) bool {
	for _, r := range revs {
		if before(a, r.end()) && before(r.start(), b) {
			return true
		}
	}
	return false
}

// lastLife is the point after which every event certainly belongs to the
// job's last life (after the end of the last call that may have revived
// it), and the point from which events may (the start of that call).
func lastLife(revs []*hEvent) (certain, maybe point) {
	for _, r := range revs {
		if before(certain, r.end()) {
			certain = r.end()
		}
		if before(maybe, r.start()) {
			maybe = r.start()
		}
	}
	return certain, maybe
}

// capOf is the cap enqueue e gave its job.
func (c *checker) capOf(e *hEvent) int {
	if e.Max > 0 {
		return e.Max
	}
	return c.ruleMax
}

func (c *checker) job(id string, j *jobHist) {
	if len(j.unsent) > 0 && len(j.enqueues)+len(j.maybe)+len(j.refused) == 0 {
		final, found := c.fin.jobs[id]
		switch {
		case found:
			c.bad("unsent-not-stored", "job %s: its only Enqueue returned %q (never sent), but the queue holds it: %s after %d attempts", id, j.unsent[0].Err, final.State, final.Attempts)
		case len(j.starts) > 0:
			c.bad("unsent-not-stored", "job %s: its only Enqueue returned %q (never sent), but attempt %d ran", id, j.unsent[0].Err, j.starts[0].Attempt)
		}
		return
	}
	if len(j.enqueues) == 0 && (len(j.starts) == 0 || len(j.maybe) > 0) {
		return // refused, or never acknowledged: nothing to check
	}
	if len(j.enqueues) == 0 {
		c.bad("acked-ends-terminal", "job %s ran (attempt %d) but no enqueue of it succeeded", id, j.starts[0].Attempt)
		return
	}
	final, found := c.fin.jobs[id]
	allRevs := c.revivers(id, j, false)
	certain, _ := lastLife(allRevs)
	lastEnq := j.enqueues[len(j.enqueues)-1]

	// Every acknowledged job not deleted since ends in one terminal state.
	deletedLast := false
	for _, d := range append(append([]*hEvent(nil), j.deletes...), j.maybeDeletes...) {
		if before(lastEnq.start(), d.end()) {
			deletedLast = true
		}
	}
	if !found && !deletedLast {
		c.bad("acked-ends-terminal", "job %s was acknowledged at %s and never deleted, but the queue has no record of it: lost", id, fmtAt(lastEnq.At))
	}
	if found && final.State != StateCompleted && final.State != StateFailed {
		c.bad("acked-ends-terminal", "job %s is %s after the drain, want completed or failed", id, final.State)
	}

	// Duplicate IDs: two acknowledged enqueues need a delete between them.
	for i := 1; i < len(j.enqueues); i++ {
		a, b := j.enqueues[i-1], j.enqueues[i]
		ok := false
		for _, d := range append(append([]*hEvent(nil), j.deletes...), j.maybeDeletes...) {
			if before(a.start(), d.end()) && before(d.start(), b.end()) {
				ok = true
			}
		}
		if !ok {
			c.bad("duplicate-id", "job %s was enqueued twice (at %s and %s) with no delete between", id, fmtAt(a.At), fmtAt(b.At))
		}
	}

	// Attempts within the cap: the cap of the enqueue that made the job's
	// life (any one of those that may have).
	capsBefore := func(p point) map[int]bool {
		caps := map[int]bool{}
		for _, e := range append(append([]*hEvent(nil), j.enqueues...), j.maybe...) {
			if before(e.start(), p) {
				caps[c.capOf(e)] = true
			}
		}
		return caps
	}
	for _, s := range j.starts {
		caps := capsBefore(s.end())
		top := 0
		for n := range caps {
			top = max(top, n)
		}
		if s.Attempt < 1 || (top > 0 && s.Attempt > top) || (s.Max > 0 && s.Attempt > s.Max) {
			c.bad("attempts-cap", "job %s: attempt %d of %d started (cap %d)", id, s.Attempt, s.Max, top)
		}
		if s.Max > 0 && len(caps) > 0 && !caps[s.Max] {
			c.bad("attempts-cap", "job %s: handler told its cap is %d, enqueued with %v", id, s.Max, caps)
		}
	}
	if found {
		top := 0
		for n := range capsBefore(point{at: 1 << 62, seq: 1 << 62}) {
			top = max(top, n)
		}
		if top > 0 && final.Attempts > top {
			c.bad("attempts-cap", "job %s stored with %d attempts, cap %d", id, final.Attempts, top)
		}
	}

	// No start after a successful cancel or delete.
	for _, s := range j.starts {
		for _, x := range j.cancels {
			if before(x.end(), s.end()) && !revivedBetween(allRevs, x.start(), s.end()) {
				c.bad("start-after-cancel", "job %s: attempt %d started on %s %s after Cancel returned (it found the job %s)",
					id, s.Attempt, s.Actor, time.Duration(s.At-x.At), x.Was)
			}
		}
		for _, x := range j.deletes {
			if before(x.end(), s.end()) && !revivedBetween(c.revivers(id, j, true), x.start(), s.end()) {
				c.bad("start-after-delete", "job %s: attempt %d started on %s %s after Delete returned",
					id, s.Attempt, s.Actor, time.Duration(s.At-x.At))
			}
		}
	}

	// Never early: no run of a job enqueued with a delay starts before
	// the instant its enqueue asked for, unless a call that may make it
	// due sooner (RunNow, a retry, another enqueue) started before that
	// run. FireMs is the producer's clock plus the delay before the call,
	// rounded up to the millisecond; the server's clock, the producer's
	// and the workers' are the machine's (or the bubble's), and the server
	// reads its own during the call, later: a start before FireMs less a
	// millisecond is early.
	if first := j.enqueues[0]; len(j.maybe) == 0 && first.FireMs > 0 {
		due := (first.FireMs - 1) * int64(time.Millisecond)
		for _, s := range j.starts {
			if s.At >= due {
				continue
			}
			sooner := false
			for _, r := range append(allRevs, j.runNows...) {
				if r != first && before(r.start(), s.end()) {
					sooner = true
				}
			}
			if !sooner {
				c.bad("not-early", "job %s: attempt %d started on %s at %s, %s before the instant its enqueue asked for (%s)",
					id, s.Attempt, s.Actor, fmtAt(s.At), time.Duration(due-s.At), fmtAt(due))
			}
		}
	}

	// Runs past their deadline are no success.
	for _, r := range j.runs {
		s, e := r.start, r.end
		if e == nil || s.Deadline == 0 || e.Ret != "nil" || e.At < s.Deadline {
			continue
		}
		for _, o := range j.obsEnds {
			if o.Proc == s.Proc && o.Actor == s.Actor && o.Attempt == s.Attempt && o.Outcome == "success" {
				c.bad("deadline-success", "job %s: attempt %d returned nil %s after its deadline and %s's observer was told it succeeded",
					id, s.Attempt, time.Duration(e.At-s.Deadline), s.Actor)
			}
		}
	}

	// Runs of one job do not overlap.
	runs := make([]*run, 0, len(j.runs))
	for _, r := range j.runs {
		runs = append(runs, r)
	}
	sort.Slice(runs, func(a, b int) bool { return before(runs[a].start.end(), runs[b].start.end()) })
	for i, r1 := range runs {
		for _, r2 := range runs[i+1:] {
			if !c.overlaps(r1, r2) {
				continue
			}
			inv := "no-overlap"
			for _, st := range c.stalls {
				// r2's own worker was just stopped or cut off past its
				// lease: it started a job it had reserved ahead before,
				// whose lease had run out and which another worker took.
				if st.Actor == r2.start.Actor && st.StartAt <= r2.start.At && st.At >= r2.start.At-int64(2*time.Second) {
					inv = "no-overlap-stale-start"
				}
			}
			for _, x := range j.cancels {
				if before(r1.start.end(), x.start()) && before(x.end(), r2.start.end()) {
					inv = "no-overlap-cancel" // the cancelled handler's context was still live
				}
			}
			c.bad(inv, "job %s: attempt %d on %s started while attempt %d on %s still ran with a live context",
				id, r2.start.Attempt, r2.start.Actor, r1.start.Attempt, r1.start.Actor)
		}
	}

	// Each attempt's end reported once (per life).
	seen := map[int]*hEvent{}
	for _, o := range j.obsEnds {
		if o.Outcome == "interrupted" || o.Outcome == "deferred" || o.Outcome == "snoozed" {
			continue
		}
		if p := seen[o.Attempt]; p != nil && !revivedBetween(allRevs, c.anchor(j, p), o.end()) {
			c.bad("observer-once", "job %s: the end of attempt %d was reported twice: %s by %s, then %s by %s",
				id, o.Attempt, p.Outcome, p.Actor, o.Outcome, o.Actor)
		}
		seen[o.Attempt] = o
	}

	if !found {
		return
	}
	// What observers were told of the last life equals what is stored.
	for _, o := range j.obsEnds {
		if !c.inLastLife(j, o, certain) {
			continue
		}
		switch {
		case o.Outcome == "success" && (final.State != StateCompleted || final.Attempts != o.Attempt):
			c.bad("observer-stored", "job %s: %s's observer was told attempt %d succeeded; stored: %s after %d attempts",
				id, o.Actor, o.Attempt, final.State, final.Attempts)
		case (o.Outcome == "exhausted" || o.Outcome == "permanent") && (final.State != StateFailed || final.Attempts != o.Attempt):
			c.bad("observer-stored", "job %s: %s's observer was told attempt %d gave up (%s); stored: %s after %d attempts",
				id, o.Actor, o.Attempt, o.Outcome, final.State, final.Attempts)
		case o.Outcome == "retry" && final.State == StateCompleted && final.Attempts == o.Attempt:
			c.bad("observer-stored", "job %s: %s's observer was told attempt %d will be retried; stored: completed by it", id, o.Actor, o.Attempt)
		}
	}
	for _, g := range j.giveUps {
		if c.inLastLife(j, g, certain) && (final.State != StateFailed || final.Attempts != g.Attempt) {
			c.bad("observer-stored", "job %s: the give-up hook was told of attempt %d (%s); stored: %s after %d attempts",
				id, g.Attempt, g.Outcome, final.State, final.Attempts)
		}
	}

	// The give-up hook, at least once for every job that gave up.
	if final.State == StateFailed && final.Attempts >= 1 {
		owed, inv := true, "giveup-owed"
		if final.Cancelled {
			inv = "giveup-owed-cancel"
			var last *hEvent
			for _, x := range j.cancels {
				if last == nil || before(last.end(), x.end()) {
					last = x
				}
			}
			owed = last != nil && last.Was == StateActive.String()
		}
		if owed {
			hooked := false
			for _, g := range j.giveUps {
				if g.Attempt == final.Attempts {
					hooked = true
				}
			}
			if !hooked {
				why := ""
				if len(c.crashes) > 0 {
					why = fmt.Sprintf("; %d workers crashed in this history", len(c.crashes))
				}
				c.bad(inv, "job %s failed after %d attempts (%q), and no give-up hook was called for it%s", id, final.Attempts, final.LastError, why)
			}
		}
	}
}

// anchor is the instant by which the outcome report e stands for was
// stored (or as near as the history knows): for a cancel's report, the
// start of the cancel; for a run's, the start of its attempt (its
// observer's start, else its handler's); else the report itself. A report
// may come late (a worker learns of a cancel at its next renewal), after
// an operator revived the job: the anchor says which life it belongs to.
func (c *checker) anchor(j *jobHist, e *hEvent) point {
	if e.Was == "cancelled" {
		var last *hEvent
		for _, x := range j.cancels {
			if before(x.start(), e.end()) && (last == nil || before(last.start(), x.start())) {
				last = x
			}
		}
		if last != nil {
			return last.start()
		}
	}
	var a *hEvent
	for _, s := range j.obsStarts {
		if s.Proc == e.Proc && s.Actor == e.Actor && s.Attempt == e.Attempt && before(s.end(), e.end()) {
			a = s
		}
	}
	if a == nil {
		for _, s := range j.starts {
			if s.Attempt == e.Attempt && before(s.end(), e.end()) {
				a = s
			}
		}
	}
	if a != nil {
		return a.end()
	}
	return e.end()
}

// inLastLife reports whether report e certainly belongs to the job's last
// life: its anchor comes after the last call that may have revived it.
func (c *checker) inLastLife(j *jobHist, e *hEvent, certain point) bool {
	return certain == (point{}) || before(certain, c.anchor(j, e))
}

// overlaps reports whether r2 started while r1 still ran with a live
// context in a live process.
func (c *checker) overlaps(r1, r2 *run) bool {
	if !before(r1.start.end(), r2.start.end()) {
		return false
	}
	// r1's effective end: its return, its context's end, its process's death.
	var ends []point
	if r1.end != nil {
		ends = append(ends, r1.end.end())
	}
	if r1.ctxDone != nil {
		ends = append(ends, r1.ctxDone.end())
	}
	if r1.start.Deadline > 0 {
		// Its context ended at its deadline, whenever the goroutine that
		// records that got to run (late, on a loaded machine).
		ends = append(ends, point{at: r1.start.Deadline})
	}
	if cr := c.crashes[r1.start.Proc+"|"+r1.start.Actor]; cr != nil {
		ends = append(ends, cr.end())
	}
	// A Cancel that found the job running r1 returns once r1's context is
	// cancelled (docs/native.md, Cancel): its return is r1's end if that
	// context did end by an operator's cancel (the goroutine that records
	// the end may get to run later). A run started while that Cancel
	// still waited (retried meanwhile by another operator) is promised
	// nothing.
	if j := c.byJob[r1.start.Job]; j != nil {
		for _, x := range j.cancels {
			if x.Was != StateActive.String() || !before(r1.start.end(), x.start()) {
				continue
			}
			if before(x.start(), r2.start.end()) && before(r2.start.end(), x.end()) {
				return false
			}
			if r1.ctxDone != nil && strings.Contains(r1.ctxDone.Err, ErrCancelled.Error()) {
				ends = append(ends, x.end())
			}
		}
	}
	// A worker stopped (SIGSTOP) or cut off from Redis meanwhile may have
	// lost its lease: another may then run the job (at least once).
	for _, st := range c.stalls {
		if (st.Actor == "*" || st.Actor == r1.start.Actor) && st.At >= r1.start.At && st.StartAt <= r2.start.At {
			return false
		}
	}
	if len(ends) == 0 {
		return true
	}
	for _, e := range ends {
		if !before(r2.start.end(), e) {
			return false
		}
	}
	return true
}

// fifo checks that jobs of the FIFO queue due in the same millisecond
// started their first attempt in enqueue order.
func (c *checker) fifo() {
	if c.fin.fifoQueue == "" {
		return
	}
	type fj struct {
		enq   *hEvent
		start *hEvent
	}
	byMs := map[int64][]fj{}
	for _, e := range c.enqueueCalls {
		if !strings.HasPrefix(e.Job, "f") || e.FireMs == 0 {
			continue
		}
		j := c.byJob[e.Job]
		var first *hEvent
		for _, s := range j.starts {
			if s.Attempt == 1 && (first == nil || before(s.end(), first.end())) {
				first = s
			}
		}
		if first == nil {
			continue
		}
		byMs[e.FireMs] = append(byMs[e.FireMs], fj{e, first})
	}
	inversions, pairs := 0, 0
	var example string
	for ms, js := range byMs {
		for _, a := range js {
			for _, b := range js {
				enqBefore := before(a.enq.end(), b.enq.start()) || (a.enq.CallID == b.enq.CallID && a.enq.Idx < b.enq.Idx)
				if !enqBefore {
					continue
				}
				pairs++
				if before(b.start.end(), a.start.end()) {
					inversions++
					if example == "" {
						example = fmt.Sprintf("job %s was enqueued before job %s, both due at %s, and ran after it",
							a.enq.Job, b.enq.Job, time.UnixMilli(ms).UTC().Format("15:04:05.000"))
					}
				}
			}
		}
	}
	if inversions > 0 {
		c.bad("fifo-same-ms", "%d of %d pairs due in the same millisecond ran out of enqueue order; e.g. %s", inversions, pairs, example)
	}
}

func fmtAt(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05.000000") }

// summarize groups violations by invariant: counts and the first few.
func summarize(vs []violation) map[string][]string {
	out := map[string][]string{}
	for _, v := range vs {
		out[v.inv] = append(out[v.inv], v.detail)
	}
	return out
}
