package native

// The history test's generator: the shape of a history (how many actors of
// each kind, how many operations each), the seeded choices every actor
// makes, and the handler every worker runs, whose behaviour each attempt is
// a function of the seed, the job and the attempt number, so that a worker
// process of the real mode behaves as the in-process one.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
)

var (
	historySeed   = flag.Uint64("history.seed", 0, "run only the history of this seed (the replay command of a failure)")
	historyShape  = flag.String("history.shape", "", "with -history.seed: the shape to replay, as a failure prints it (e.g. p2j10w2o1x8f3q20)")
	historyCount  = flag.Int("history.n", 0, "how many histories of each mode to run (0: the CI budget; see docs/native.md)")
	historyFirst  = flag.Uint64("history.first", 1, "the seed of the first history")
	historyStory  = flag.Bool("history.story", false, "with -history.seed: log every event of each job a violation names")
	historyStrict = flag.Bool("history.strict", false, "fail on the known violations too (see knownViolations)")
)

// knownViolations are invariants the history test catches today that the
// queue does not hold, with the reason: a history that breaks only these
// is logged, not failed, unless -history.strict is set or
// REBOUND_HISTORY_KNOWN names another list ("none" for an empty one).
// Issue 21's defects 1-4 are fixed and no longer listed (defect 1 with its
// relatives start-after-delete, no-overlap-stale-start, no-overlap-cancel):
// the list is empty, kept for what a history finds next.
var knownViolations = map[string]string{}

// known returns the allow-list in force.
func known() map[string]string {
	if *historyStrict {
		return nil
	}
	if v, ok := os.LookupEnv("REBOUND_HISTORY_KNOWN"); ok {
		out := map[string]string{}
		for _, inv := range strings.Split(v, ",") {
			if inv = strings.TrimSpace(inv); inv != "" && inv != "none" {
				out[inv] = "named in REBOUND_HISTORY_KNOWN"
			}
		}
		return out
	}
	return knownViolations
}

// shape is how big a history is: producers and jobs each enqueues, main
// queue worker slots, operators and actions each, faults, and jobs
// enqueued on the FIFO queue.
type shape struct {
	Producers, Jobs, Workers, Operators, Ops, Faults, Fifo int
	Shards                                                 int // the main queue's shards (NewShardedQueue); 0 or 1 for one
}

func (s shape) String() string {
	out := fmt.Sprintf("p%dj%dw%do%dx%df%dq%d", s.Producers, s.Jobs, s.Workers, s.Operators, s.Ops, s.Faults, s.Fifo)
	if s.Shards > 1 {
		out += fmt.Sprintf("s%d", s.Shards)
	}
	return out
}

func parseShape(v string) (shape, error) {
	var s shape
	body := v
	if i := strings.LastIndexByte(v, 's'); i > 0 {
		n, err := strconv.Atoi(v[i+1:])
		if err != nil || n < 1 {
			return s, fmt.Errorf("history shape %q: the shards after 's' are not a count, want the form p2j10w2o1x8f3q20s3", v)
		}
		body, s.Shards = v[:i], n
	}
	if _, err := fmt.Sscanf(body, "p%dj%dw%do%dx%df%dq%d", &s.Producers, &s.Jobs, &s.Workers, &s.Operators, &s.Ops, &s.Faults, &s.Fifo); err != nil {
		return s, fmt.Errorf("history shape %q: %v, want the form p2j10w2o1x8f3q20 (s3 after it for 3 shards)", v, err)
	}
	if s.Workers < 1 {
		return s, fmt.Errorf("history shape %q: no worker, want w1 or more", v)
	}
	return s, nil
}

// defaultShape is the shape seed's history has unless told otherwise.
func defaultShape(seed uint64) shape {
	r := rand.New(rand.NewPCG(seed, 0x5ea))
	return shape{
		Producers: 1 + r.IntN(3), Jobs: 4 + r.IntN(16), Workers: 1 + r.IntN(3),
		Operators: r.IntN(3), Ops: 4 + r.IntN(16), Faults: r.IntN(5), Fifo: r.IntN(3) * (10 + r.IntN(40)),
	}
}

// smaller returns the shapes one step smaller than s, for shrinking.
func (s shape) smaller() []shape {
	var out []shape
	try := func(f func(*shape)) {
		c := s
		f(&c)
		if c != s {
			out = append(out, c)
		}
	}
	try(func(c *shape) { c.Faults /= 2 })
	try(func(c *shape) { c.Operators /= 2 })
	try(func(c *shape) { c.Fifo /= 2 })
	try(func(c *shape) { c.Producers = max(1, c.Producers/2) })
	try(func(c *shape) { c.Workers = max(1, c.Workers/2) })
	try(func(c *shape) { c.Jobs = max(1, c.Jobs/2) })
	try(func(c *shape) { c.Ops = max(1, c.Ops/2) })
	try(func(c *shape) { c.Jobs = max(1, c.Jobs-1) })
	try(func(c *shape) { c.Ops = max(1, c.Ops-1) })
	return out
}

// actorRand is the random source of one actor of a history: each actor
// draws from its own, so a history cut down to fewer actors keeps the
// choices of those left.
func actorRand(seed uint64, actor string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(actor))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// histRule is the workers' rule in seed's history.
func histRule(seed uint64) backoff.Rule {
	r := actorRand(seed, "rule")
	return backoff.Must(backoff.NewRule(backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(2*time.Millisecond, 40*time.Millisecond)))), 2+r.IntN(4)))
}

// workerPlan is how one main queue worker is built.
type workerPlan struct {
	Concurrency, Prefetch int // Prefetch -1: the default
	Lease, Timeout        time.Duration
}

func planWorker(seed uint64, actor string) workerPlan {
	r := actorRand(seed, "plan "+actor)
	p := workerPlan{Concurrency: 1 + r.IntN(4), Prefetch: r.IntN(6) - 1, Lease: time.Duration(100+r.IntN(300)) * time.Millisecond}
	if r.IntN(2) == 0 {
		p.Timeout = time.Duration(20+r.IntN(60)) * time.Millisecond
	}
	return p
}

// Handler behaviours, drawn per attempt.
const (
	bSucceed = iota
	bSlow
	bIgnoreCtx
	bAtDeadline
	bFail
	bPermanent
	bPanic
	bTypedNil
	bPanicErr
	bHugeErr
)

var behaviourWeights = []int{bSucceed: 25, bSlow: 20, bIgnoreCtx: 8, bAtDeadline: 8, bFail: 17, bPermanent: 5, bPanic: 5, bTypedNil: 4, bPanicErr: 4, bHugeErr: 4}

// behave is what attempt n of job id does in seed's history, and a number
// to size its sleep with.
func behave(seed uint64, id string, n int) (int, int) {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", seed, id, n)
	v := h.Sum64()
	total := 0
	for _, w := range behaviourWeights {
		total += w
	}
	pick := int(v % uint64(total))
	for b, w := range behaviourWeights {
		if pick < w {
			return b, int(v >> 32 % 1000)
		}
		pick -= w
	}
	return bSucceed, 0
}

// hostileErr is an error type whose nil pointer, returned as an error,
// panics in Error.
type hostileErr struct{ msg string }

func (e *hostileErr) Error() string { return e.msg }

// panicErr is an error whose Error method panics.
type panicErr struct{}

func (panicErr) Error() string { panic("history: Error() panics") }

// histHandler is the handler of worker actor in process proc: it records
// its start (with its context's deadline), its context's end and its
// return through rec, and behaves as behave says. A dead actor's rec
// refuses, and the handler then does nothing.
// Its sleeps are scale times their miniredis length.
func histHandler(seed uint64, proc, actor string, scale time.Duration, rec func(*hEvent) bool) Handler {
	return func(ctx context.Context, j *Job) (err error) {
		s := &hEvent{Kind: "start", Proc: proc, Actor: actor, Job: j.ID, Attempt: j.Attempt, Max: j.MaxAttempts}
		dl, hasDl := ctx.Deadline()
		if hasDl {
			s.Deadline = dl.UnixNano()
		}
		if !rec(s) {
			return nil
		}
		stop := context.AfterFunc(ctx, func() {
			rec(&hEvent{Kind: "ctxdone", Proc: proc, Actor: actor, Job: j.ID, Attempt: j.Attempt, Err: errText(context.Cause(ctx))})
		})
		defer func() {
			stop()
			ret := "nil"
			if err != nil || recover() != nil {
				ret = "err"
			}
			rec(&hEvent{Kind: "end", Proc: proc, Actor: actor, Job: j.ID, Attempt: j.Attempt, Ret: ret})
			if ret == "err" && err == nil {
				panic("history: handler panics")
			}
		}()
		b, n := behave(seed, j.ID, j.Attempt)
		sleep := func(d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		switch b {
		case bSucceed:
			return sleep(time.Duration(n%20) * scale * time.Millisecond)
		case bSlow:
			return sleep(time.Duration(50+n%200) * scale * time.Millisecond)
		case bIgnoreCtx:
			time.Sleep(time.Duration(60+n%100) * scale * time.Millisecond)
			return nil
		case bAtDeadline:
			if hasDl {
				time.Sleep(time.Until(dl))
			}
			return nil
		case bFail:
			return fmt.Errorf("boom: attempt %d fails", j.Attempt)
		case bPermanent:
			return backoff.Permanent(errors.New("boom: permanent"))
		case bPanic:
			panic(fmt.Sprintf("history: handler of %s panics", j.ID))
		case bTypedNil:
			var e *hostileErr
			return e
		case bPanicErr:
			return panicErr{}
		case bHugeErr:
			return errors.New(strings.Repeat("\xffboom ", 4000))
		}
		return nil
	}
}

// histObserver records what worker actor's observer and give-up hook are
// told.
type histObserver struct {
	proc, actor string
	rec         func(*hEvent) bool
}

func (o histObserver) AttemptStarted(ctx context.Context, a observe.Attempt) context.Context {
	o.rec(&hEvent{Kind: "obsstart", Proc: o.proc, Actor: o.actor, Job: a.JobID, Attempt: a.Number, Max: a.MaxAttempts})
	return ctx
}

func (o histObserver) AttemptEnded(_ context.Context, a observe.Attempt, r observe.Result) {
	e := &hEvent{Kind: "obsend", Proc: o.proc, Actor: o.actor, Job: a.JobID, Attempt: a.Number, Outcome: r.Outcome()}
	if errors.Is(r.Err, ErrCancelled) {
		e.Was = "cancelled"
	}
	if !r.FireAt.IsZero() {
		e.FireAt = r.FireAt.UnixNano()
	}
	o.rec(e)
}

func (o histObserver) GiveUp(_ context.Context, g observe.GiveUp) {
	e := &hEvent{Kind: "giveup", Proc: o.proc, Actor: o.actor, Job: g.Attempt.JobID, Attempt: g.Attempt.Number, Outcome: g.Outcome.String()}
	if errors.Is(g.Err, ErrCancelled) {
		e.Was = "cancelled" // (errors.Is: Error may panic, and a hook must not)
	}
	o.rec(e)
}

// idBook is the IDs a history's producers enqueued, for operators and
// duplicate enqueues to pick from.
type idBook struct {
	mu  sync.Mutex
	ids []string
	all map[string]bool
}

func (b *idBook) add(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.all == nil {
		b.all = map[string]bool{}
	}
	if !b.all[id] {
		b.all[id] = true
		b.ids = append(b.ids, id)
	}
}

func (b *idBook) pick(r *rand.Rand) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.ids) == 0 {
		return "m-none"
	}
	if r.IntN(3) > 0 {
		// Mostly a recent job: one likely still waiting, reserved ahead or
		// running.
		return b.ids[max(0, len(b.ids)-1-r.IntN(8))]
	}
	return b.ids[r.IntN(len(b.ids))]
}

// produce runs producer actor's enqueues on q: single and bulk, fresh and
// duplicate IDs, delays (some colliding on a 10ms grid), caps.
// unit scales its pauses: a millisecond on miniredis, more on a real
// Redis, so that the faults meet a queue that is still busy.
func produce(ctx context.Context, h *history, q *Queue, seed uint64, actor string, jobs int, book *idBook, unit time.Duration) {
	r := actorRand(seed, actor)
	n := 0
	nextID := func() string {
		if n > 0 && r.IntN(7) == 0 {
			return book.pick(r)
		}
		n++
		return fmt.Sprintf("m%s-%d", actor[1:], n)
	}
	for n < jobs {
		time.Sleep(time.Duration(r.IntN(15)) * unit)
		type one struct {
			id, name string
			max      int
			delay    time.Duration
			fireMs   int64
			opts     []EnqueueOption
		}
		size := 1
		bulk := r.IntN(3) == 0
		if bulk {
			size = 2 + r.IntN(10)
		}
		now := time.Now()
		batch := make([]one, size)
		for i := range batch {
			o := one{id: nextID(), name: fmt.Sprintf("k%d", r.IntN(3))}
			o.opts = []EnqueueOption{WithID(o.id), WithName(o.name)}
			switch r.IntN(4) {
			case 0:
				o.delay = time.Duration(1+r.IntN(60)) * time.Millisecond
			case 1:
				grid := now.Truncate(10 * time.Millisecond).Add(time.Duration(1+r.IntN(3)) * 10 * time.Millisecond)
				o.delay = grid.Sub(now)
			}
			if o.delay > 0 {
				o.opts = append(o.opts, WithDelay(o.delay))
				o.fireMs = (now.Add(o.delay).UnixNano() + 999_999) / 1e6
			}
			if r.IntN(3) == 0 {
				o.max = 1 + r.IntN(5)
				o.opts = append(o.opts, WithMaxAttempts(o.max))
			}
			batch[i] = o
		}
		p := h.mark()
		callID := h.calls.Add(1)
		if !bulk {
			o := batch[0]
			// Now and then a call whose ctx ends at once or while it may
			// wait for the group commit's call in flight: one that returns
			// its ctx's error itself promises the job was never sent.
			cctx, cancel := ctx, context.CancelFunc(func() {})
			if r.IntN(6) == 0 {
				cctx, cancel = context.WithTimeout(ctx, time.Duration(r.IntN(3))*unit/2)
			}
			_, err := q.Enqueue(cctx, []byte("p"), o.opts...)
			cancel()
			h.call(p, &hEvent{Actor: actor, Op: "enqueue", Job: o.id, OK: err == nil, Err: errText(err), Name: o.name, Max: o.max, FireMs: o.fireMs, CallID: callID})
			if err == nil {
				book.add(o.id)
			}
			continue
		}
		params := make([]EnqueueParams, len(batch))
		for i, o := range batch {
			params[i] = EnqueueParams{Payload: []byte("p"), Options: o.opts}
		}
		res, err := q.EnqueueMany(ctx, params)
		for i, o := range batch {
			e := &hEvent{Kind: "call", Actor: actor, Op: "enqueue_many", Job: o.id, Name: o.name, Max: o.max, FireMs: o.fireMs,
				CallID: callID, Idx: i, StartAt: p.at, StartSeq: p.seq}
			switch {
			case err != nil && i >= len(res):
				e.Err = err.Error()
			case res[i].Err != nil:
				e.Err = res[i].Err.Error()
			default:
				e.OK = true
				book.add(o.id)
			}
			h.add(e)
		}
	}
}

// operate runs operator actor's actions on q's jobs.
func operate(ctx context.Context, h *history, q *Queue, seed uint64, actor string, ops int, book *idBook, unit time.Duration) {
	r := actorRand(seed, actor)
	for range ops {
		time.Sleep(time.Duration(r.IntN(20)) * unit)
		id := book.pick(r)
		p := h.mark()
		e := &hEvent{Actor: actor, Job: id}
		var err error
		switch k := r.IntN(100); {
		case k < 35:
			var was State
			e.Op = "cancel"
			if was, err = q.Cancel(ctx, id); err == nil {
				e.Was = was.String()
			}
		case k < 50:
			var was State
			e.Op = "delete"
			if was, err = q.Delete(ctx, id); err == nil {
				e.Was = was.String()
			}
		case k < 65:
			e.Op = "run_now"
			err = q.RunNow(ctx, id)
		case k < 75:
			e.Op = "retry"
			err = q.Retry(ctx, id, RetryOptions{ResetAttempts: true})
		case k < 85:
			e.Op, e.Job = "retry_failed", ""
			f := FailedFilter{}
			if r.IntN(2) == 0 {
				f.Name = fmt.Sprintf("k%d", r.IntN(3))
				e.Filter = "name=" + f.Name
			} else {
				f.Error = "*boom*"
				e.Filter = "error=" + f.Error
			}
			var n int
			n, err = q.RetryFailed(ctx, f, RetryOptions{ResetAttempts: true})
			e.Was = fmt.Sprint(n)
		default:
			e.Op, e.Job = "pause", ""
			if err = q.Pause(ctx); err == nil {
				time.Sleep(time.Duration(r.IntN(30)) * time.Millisecond)
				err = q.Resume(ctx)
			}
		}
		e.OK, e.Err = err == nil, errText(err)
		h.call(p, e)
	}
}

// produceFIFO enqueues n jobs on the FIFO queue, all delayed to a few
// shared milliseconds, singly and in bulk.
func produceFIFO(ctx context.Context, h *history, q *Queue, seed uint64, n int) {
	r := actorRand(seed, "fifo")
	base := time.Now().Truncate(10 * time.Millisecond).Add(40 * time.Millisecond)
	for i := 0; i < n; {
		size := 1
		if r.IntN(2) == 0 {
			size = min(n-i, 2+r.IntN(30))
		}
		now := time.Now()
		fire := base.Add(time.Duration(r.IntN(3)) * 10 * time.Millisecond)
		if !fire.After(now) {
			fire = now.Truncate(time.Millisecond).Add(5 * time.Millisecond)
		}
		d := fire.Sub(now)
		fireMs := (now.Add(d).UnixNano() + 999_999) / 1e6
		p := h.mark()
		callID := h.calls.Add(1)
		params := make([]EnqueueParams, size)
		ids := make([]string, size)
		for k := range params {
			ids[k] = fmt.Sprintf("f%d", i+k)
			params[k] = EnqueueParams{Options: []EnqueueOption{WithID(ids[k]), WithDelay(d)}}
		}
		var res []EnqueueResult
		var err error
		if size == 1 {
			_, err = q.Enqueue(ctx, nil, params[0].Options...)
			res = []EnqueueResult{{ID: ids[0], Err: err}}
		} else {
			res, err = q.EnqueueMany(ctx, params)
		}
		for k, id := range ids {
			e := &hEvent{Kind: "call", Actor: "fifo", Op: "enqueue_many", Job: id, FireMs: fireMs, CallID: callID, Idx: k,
				StartAt: p.at, StartSeq: p.seq}
			if k < len(res) && res[k].Err == nil && err == nil {
				e.OK = true
			} else {
				e.Err = fmt.Sprint(err, " ", res)
			}
			h.add(e)
		}
		i += size
		time.Sleep(time.Duration(r.IntN(8)) * time.Millisecond)
	}
}

// fifoHandler is the FIFO queue's handler: it records its start and end
// and succeeds at once.
func fifoHandler(proc, actor string, rec func(*hEvent) bool) Handler {
	return func(ctx context.Context, j *Job) error {
		rec(&hEvent{Kind: "start", Proc: proc, Actor: actor, Job: j.ID, Attempt: j.Attempt, Max: j.MaxAttempts})
		rec(&hEvent{Kind: "end", Proc: proc, Actor: actor, Job: j.ID, Attempt: j.Attempt, Ret: "nil"})
		return nil
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
