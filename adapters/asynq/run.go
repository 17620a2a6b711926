package reboundasynq

import (
	"context"
	"maps"
	"slices"
	"sync"
	"unsafe"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
)

// A run is one delivery of one task to the middleware, from the moment the
// middleware takes it until asynq is done with it.
//
// Most runs end the plain way: the handler returns while the task's
// context is live, the middleware decides what follows, and asynq hands
// that decision to RetryDelay inside the returned error. But asynq stops
// waiting for the handler when the task's context ends (its deadline, an
// Inspector.CancelProcessing, the lease running out) or the server shuts
// down; it then handles the run on its own goroutine, and the handler's
// return goes nowhere. A run is how the two sides find each other then:
// RetryDelay, called by asynq with the context's error, looks the run up
// (see [flight]) and decides it under the rule, keyed by the task ID, so
// that what the observer hears is what asynq applies.
type run struct {
	// key finds the run from RetryDelay, which sees only a copy of the task.
	key  flightKey
	pay  unsafe.Pointer // the payload's bytes, to tell apart runs of one key
	task *asynq.Task
	id   string
	rule backoff.Rule
	// last: asynq archives any failure of this run (its retry count has
	// reached the task's MaxRetry) without asking RetryDelay.
	last bool
	// headers is asynq's own header map of the task, nil when it has none.
	// Only RetryDelay writes it, on asynq's goroutine, right before asynq
	// stores the task; the handler's goroutine never does.
	headers map[string]string
	carrier *headerCarrier // the observer's view of headers; nil when none
	// returned is closed once the handler has returned (or will not run):
	// no user code of this run touches the task any more.
	returned chan struct{}

	mu       sync.Mutex
	a        observe.Attempt
	ctx      context.Context // the observer's context, once started
	started  bool            // AttemptStarted was called
	claimed  bool            // asynq handed the run's failure to RetryDelay
	decided  bool
	reported bool
	res      observe.Result
	exact    bool // res.FireAt is exact: RetryDelay stores it in HeaderRetryAt
	applied  bool // RetryDelay has stored the decision's headers
}

// decide fixes the run's outcome, unless it was fixed already, and reports
// it once the attempt has started. It returns the outcome in force.
func (r *Retrier) decideRun(ru *run, res observe.Result, exact bool) (observe.Result, bool) {
	ru.mu.Lock()
	if !ru.decided {
		ru.decided, ru.res, ru.exact = true, res, exact
	}
	res, exact = ru.res, ru.exact
	ru.mu.Unlock()
	r.report(ru)
	return res, exact
}

// report tells the observer and the give-up hook how the run ended, once,
// when it has both started and been decided.
func (r *Retrier) report(ru *run) {
	ru.mu.Lock()
	if !ru.started || !ru.decided || ru.reported {
		ru.mu.Unlock()
		return
	}
	ru.reported = true
	ctx, a, res := ru.ctx, ru.a, ru.res
	ru.mu.Unlock()
	r.notify.Ended(ctx, a, res)
}

// outcome returns the run's decision, and whether it has one.
func (ru *run) outcome() (observe.Result, bool, bool) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	return ru.res, ru.exact, ru.decided
}

// flightKey is what RetryDelay can see of a run: asynq passes it a copy of
// the task built from the very same type string (and payload) the handler
// got, so the string's bytes identify the task message asynq is handling,
// and asynq's retry count the delivery.
type flightKey struct {
	typ unsafe.Pointer
	n   int
}

func keyOf(t *asynq.Task, n int) flightKey {
	return flightKey{typ: unsafe.Pointer(unsafe.StringData(t.Type())), n: n}
}

// flight holds the runs asynq is working on. One Retrier may serve several
// servers whose task IDs collide (one ID on two Redis databases); the key
// is the message asynq decoded, not the ID, so that never mixes them up.
type flight struct {
	mu   sync.Mutex
	runs map[flightKey][]*run
	n    int
}

func (f *flight) add(ru *run) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = make(map[flightKey][]*run)
	}
	f.runs[ru.key] = append(f.runs[ru.key], ru)
	f.n++
}

func (f *flight) remove(ru *run) {
	f.mu.Lock()
	defer f.mu.Unlock()
	list := f.runs[ru.key]
	i := slices.Index(list, ru)
	if i < 0 {
		return
	}
	f.n--
	if len(list) == 1 {
		delete(f.runs, ru.key)
		return
	}
	f.runs[ru.key] = slices.Delete(list, i, i+1)
}

// find returns the run of the task message t at retry count n, or nil.
// A key names one message, except when the type is a single byte, whose
// strings Go does not allocate: then the payload's bytes, and a run not
// yet decided, tell them apart.
func (f *flight) find(t *asynq.Task, n int) *run {
	if t == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	list := f.runs[keyOf(t, n)]
	if len(list) == 1 {
		return list[0]
	}
	pay := unsafe.Pointer(unsafe.SliceData(t.Payload()))
	var best *run
	bestScore := -1
	for _, ru := range list {
		score := 0
		if ru.pay == pay {
			score += 2
		}
		if _, _, decided := ru.outcome(); !decided {
			score++
		}
		if score > bestScore {
			best, bestScore = ru, score
		}
	}
	return best
}

// len returns the number of runs held.
func (f *flight) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// headerCarrier is the observe.Carrier an attempt's observer gets. It
// reads the task's headers as they were when the attempt began, plus what
// was set since; what is set stays here until RetryDelay, on asynq's own
// goroutine, copies it into the task's headers just before asynq stores
// the task for its next attempt. The observer never writes the map asynq
// owns: asynq reads and encodes that map on its own goroutine as soon as a
// task's context ends, while the handler may still be running.
type headerCarrier struct {
	mu   sync.Mutex
	base map[string]string
	set  map[string]string
}

func newHeaderCarrier(headers map[string]string) *headerCarrier {
	return &headerCarrier{base: maps.Clone(headers)}
}

// Get returns the value stored under key, or "".
func (c *headerCarrier) Get(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.set[key]; ok {
		return v
	}
	return c.base[key]
}

// Set stores value under key, for the task's next attempt.
func (c *headerCarrier) Set(key, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set == nil {
		c.set = make(map[string]string)
	}
	c.set[key] = value
}

// Keys lists the keys stored.
func (c *headerCarrier) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.base)+len(c.set))
	for k := range c.base {
		keys = append(keys, k)
	}
	for k := range c.set {
		if _, ok := c.base[k]; !ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// writes returns what was set since the attempt began.
func (c *headerCarrier) writes() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.set)
}
