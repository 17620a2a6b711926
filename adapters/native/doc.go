// Package native is rebound's own Redis job path: a small queue whose every
// state change is one atomic Lua script, and whose retries are scheduled at
// the millisecond the backoff policy computed.
//
// The guide, with the options, the operator actions and a table of the queue's limits: https://github.com/rebound-go/rebound/blob/main/docs/native.md
//
// It is for teams that use neither asynq nor River and want the retry
// semantics of package backoff end to end on a plain [redis.UniversalClient]
// (single node, Sentinel or Cluster).
//
// # Use
//
//	q, err := native.NewQueue(rdb, "emails")
//	id, err := q.Enqueue(ctx, payload, native.WithDelay(time.Minute))
//	res, err := q.EnqueueMany(ctx, []native.EnqueueParams{ // up to 1000 jobs a round trip
//		{Payload: a}, {Payload: b, Options: []native.EnqueueOption{native.WithID("order-7")}},
//	}) // res[i].ID, res[i].Err (ErrJobExists for a taken ID)
//
//	rule, _ := backoff.NewRule(backoff.Must(backoff.Jitter(
//		backoff.Must(backoff.Exponential(time.Second, time.Hour)))), 10)
//	w, err := native.NewWorker(q, rule, func(ctx context.Context, j *native.Job) error {
//		return send(ctx, j.Payload)
//	}, native.WithConcurrency(20))
//	err = w.Run(ctx) // until ctx ends, then a graceful shutdown
//
// # Semantics
//
// A handler's nil completes the job; an error fails the attempt, and the
// worker's [backoff.Rule] (or the rule [WithKindRule] gives the job's name)
// decides: retry after a delay (jitter keyed by the job ID, or by what
// [WithKey] picks; raised to a [backoff.RetryAfter] hint), or give up
// because the job ran MaxAttempts times or the error was marked
// [backoff.Permanent]. A panic is a failed attempt. The host computes the
// delay; the fail script receives that one number and adds it to the
// Redis server's clock. Attempt numbers are 1-based and MaxAttempts counts
// every run, as everywhere in rebound.
//
// Every attempt is reported to the worker's observer ([WithObserver]) once
// its outcome is stored, with what the script applied; every job given up
// to its give-up hook ([WithGiveUp]); and what goes wrong outside the
// handlers (Redis unreachable, a lost lease, a recovered panic of user
// code) to its error handler ([WithErrorHandler]).
//
// A job whose delay has passed (a retry, or a first run enqueued with
// [WithDelay]) moves to the due list, which workers drain before the wait
// list: a due retry does not queue behind a backlog of fresh jobs, so its
// lateness is bounded by the workers' capacity, not by the backlog. Jobs
// that completed or failed for good stay for the inspector within the
// queue's [WithCompletedRetention] and [WithFailedRetention].
//
// Each reservation carries a lease, renewed every third of its length while
// the handler runs. A worker that dies loses its lease; another worker
// reclaims the job through the same fail path, so the lost attempt counts
// and the job waits its backoff: a poison job that kills workers still stops
// at its cap. The reclaiming worker reports that attempt's end to its
// observer and give-up hook. Every reservation has its own token, so a
// worker that comes back after its job was reclaimed cannot overwrite the
// newer state: it is told [ErrLeaseLost] and reports nothing of that
// attempt to its observer; a retried call whose first reply was lost is
// recognised and changes nothing. Delivery is at least once.
//
// The give-up hook's call is recorded in Redis by the same fail script
// that gives the job up, when the worker has a hook, and cleared once the
// hook returned: a worker that dies in between leaves it owed, and once
// the dead worker's lease on the call has run out, the next reclaim pass
// of a worker with a hook makes the call (with the job's name and
// metadata as stored, and its error as the text stored). So the hook is
// called at least once for every job a worker gave up, across crashes.
//
// # Limits
//
// What the queue can hold, and what happens beyond it:
//
//   - Delays: up to [MaxDelay] (100 years), for WithDelay and retries
//     alike. A longer one (a policy's or a RetryAfter hint's, up to the
//     largest time.Duration) is clamped to it: never wrapped, never run at
//     once, and observers are told the delay applied.
//   - Resolution: fire times are whole milliseconds of the Redis server's
//     clock, rounded up, so a job is never due early; jobs due in one
//     millisecond run in FIFO order up to 2039-09-07 and in ID order after
//     (see Keys).
//   - Attempts: any cap a Rule or WithMaxAttempts can hold (an int).
//   - Error text: the stored error of a failed attempt is valid UTF-8 of at
//     most [MaxErrorBytes] (8 KiB); a longer one is cut with a note. An
//     error whose Error method panics, or a typed nil, is stored as its
//     type's description and fails the attempt like any error.
//   - Payload: [WithMaxPayload] (1 MiB by default); metadata: any bytes.
//
// And what each way an attempt can end counts as:
//
//   - A timeout ([WithTimeout]): a failed attempt (ErrTimeout), counted
//     and decided by the rule, at its deadline; the worker moves on, and a
//     handler that ignores its context runs on with its outcome discarded.
//   - A circuit breaker that holds a job back ([WithBreaker],
//     [WithDependency]): not an attempt. The handler does not run, the job
//     waits in the delayed set until the breaker may answer otherwise
//     (plus a keyed spread), its metadata counts the deferral
//     ([DeferralsKey]), and observers are told observe.Deferred.
//   - A shutdown ([Worker.Shutdown]) that cuts a handler short: not an
//     attempt. The job goes back to the front of the queue uncounted and
//     observers are told observe.Interrupted.
//   - A worker that dies, hangs or loses Redis for longer than its lease:
//     a failed attempt (ErrLeaseExpired), counted, ended by the worker
//     that reclaims the job, which tells its observer and give-up hook.
//   - A panic of the handler: a failed attempt (an *observe.PanicError);
//     of the policy while deciding: the fallback delay ([WithFallbackDelay]);
//     of an observer, key function or hook: reported to the error handler.
//   - An operator's cancel ([Queue.Cancel]) of a running job: a counted
//     attempt that ends the job failed, permanent, with an
//     [*observe.CancelledError] reading and matching [ErrCancelled];
//     the handler's context is cancelled and its return dropped, and the
//     worker tells its observer and give-up hook. A cancel of a waiting or
//     delayed job is no attempt: the job ends failed with no worker
//     involved, so no observer or hook hears of it.
//
// # Operator actions
//
// What asynq's inspector and CLI, River UI and BullMQ give their users,
// as methods of [Queue] (and as the rebound queue command and the rebound
// ui page):
//
//	page, err := q.List(ctx, native.StateFailed, native.ListOptions{Limit: 50})
//	job, err := q.Job(ctx, id)                  // one job: attempts, last error, payload
//	err = q.Retry(ctx, id, native.RetryOptions{ResetAttempts: true})
//	n, err := q.RetryFailed(ctx, native.FailedFilter{Error: "*connection refused*"}, native.RetryOptions{})
//	err = q.RunNow(ctx, id)                     // a delayed job, due at once
//	was, err := q.Delete(ctx, id)               // a job that is not running
//	was, err := q.Cancel(ctx, id)               // waiting, delayed or running: failed, cancelled
//	err = q.Pause(ctx)                          // and Resume, Paused; Counts says it too
//
// Each action is one atomic script over the queue's keys, safe while
// workers run (and Cluster-safe: every key is in KEYS, all in the queue's
// slot). It finds the job where it is at that instant and acts only if the
// action applies there: an unknown job is an error wrapping [ErrNotFound],
// a job in another state (one that moved meanwhile included) a
// [*StateError] matching [ErrWrongState] and naming the state found;
// either way nothing changed. RetryFailed, which may touch every failed
// job, works in bounded steps of one script each (at most 1000 jobs,
// about 4 MiB of records and a bounded amount of glob matching a step,
// matching that reads each text once), so it never holds Redis for long.
//
// List pages by cursor: each page goes on after the position of the last
// job of the page before, so pages stay correct while workers move jobs
// (see [Queue.List]). Pause stops workers from taking jobs, in the reserve
// script's one read of the queue's control hash; running jobs finish, and
// due retries are still promoted, so nothing is lost or late on resume.
// A cancel of a running job is published on the queue's cancels channel,
// where every worker listens and renews the job it holds under the token
// published, which tells it the job was cancelled; should the message be
// lost, the same read as Pause's tells it too (the cancel counts in the
// control hash and wakes an idle worker, and a worker whose reserve sees
// the count change renews its leases at once), and at the latest its next
// renewal does. The worker confirms in the cancelling hash, for the Cancel
// that waits on it.
//
// # Keys
//
// Every key of a queue shares one Cluster hash tag, so a queue lives in one
// slot ('{', '}' and '%' in the queue name are percent-encoded in the tag):
//
//	<prefix>:{<queue>}:wait       LIST  job IDs enqueued to run at once, oldest first
//	<prefix>:{<queue>}:due        LIST  job IDs whose delay has passed, run before wait
//	<prefix>:{<queue>}:active     ZSET  running jobs, scored by lease deadline (ms)
//	<prefix>:{<queue>}:delayed    ZSET  scheduled jobs, scored fire_ms*0x1000 + place in that ms
//	<prefix>:{<queue>}:failed     ZSET  jobs given up, scored by finish time (ms), trimmed by retention
//	<prefix>:{<queue>}:completed  ZSET  completed jobs, scored by finish time, trimmed by retention
//	<prefix>:{<queue>}:jobs       HASH  job ID -> the job's record, one packed string
//	<prefix>:{<queue>}:marker     ZSET  wake-up marker idle workers block on
//	<prefix>:{<queue>}:counter    STRING lease tokens
//	<prefix>:{<queue>}:control    HASH  operator flags: paused (since, ms), cancels (running jobs cancelled)
//	<prefix>:{<queue>}:giveup     ZSET  give-up hook calls owed, scored by the owing worker's lease deadline (ms)
//	<prefix>:{<queue>}:giveup:calls HASH job ID -> what the owed call tells (attempt, cap, outcome, error)
//	<prefix>:{<queue>}:cancelling HASH  job ID -> token and lease deadline of a running job cancelled, until its worker confirms
//	<prefix>:{<queue>}:cancels    Pub/Sub channel: the token of each running job cancelled
//
// A job has no key of its own: its record is one field of the jobs hash,
// holding attempts started, the token of the reservation that holds its
// lease (empty while no attempt runs), its own cap, created and finished
// times, the token of the reservation that last finished it ("0" and a
// token once an operator cancelled it), then its last error, metadata and
// name (each length-prefixed) and the payload. A job
// waiting for its retry therefore costs one hash entry and one delayed-set
// entry, a running one a hash entry and an active-set entry, and every
// script reaches every job through a key in KEYS.
//
// Fire times come from the server's TIME, rounded up to the millisecond so
// a job is never due early. The delayed score is the fire time times
// 0x1000 plus the job's place among the jobs of the delayed set due in
// that millisecond, one past the last one's (lua/lib/delayed_score.lua):
// jobs due in the same millisecond keep their FIFO order, up to 4096 of
// them in the set at once (later ones share the last place and run in the
// order of their IDs), for fire times up to 2039-09-07T15:47:35.551Z
// (where fire_ms*0x1000 reaches 2^53, the last integer a double holds
// exactly); later fire times, up to [MaxDelay] ahead, are kept to the
// millisecond and never early too, but jobs due in one millisecond then
// run in the order of their IDs.
//
// # Sharded queues
//
// [NewShardedQueue] spreads one queue over N shards: N sub-queues with the
// keys above, each under a hash tag of its own, chosen from the cluster's
// slot map so that the shards land on distinct masters, and written down
// in "<prefix>:{<queue>}:layout" (JSON) for every process to read
// ([OpenQueue]). Shard 0's tag is the queue's own, so a queue of one shard
// is the queue [NewQueue] opens, key for key. A job lives on the shard its
// ID hashes to (FNV-1a modulo N), so [WithID] stays idempotent and every
// action on one job is one script on one slot; a worker runs one part per
// shard, sharing its slots, handlers and breaker; Counts, List, scans and
// bulk actions cover every shard. FIFO holds within a shard, not across
// shards. See docs/native.md, "Sharded queues".
//
// # Scripts
//
// Each script is an embedded .lua file with one purpose, takes every key in
// KEYS and every input in ARGV, and is run by SHA: enqueue (a job to run
// at once), enqueue_delayed (a job with a delay), enqueue_many
// (up to 1000 jobs a call, each checked and stored as enqueue would, with
// one call per command for the batch: EnqueueMany's calls, and the group
// commits of concurrent Enqueue calls, where a call alone goes out at
// once with enqueue or enqueue_delayed and the calls made while it is in
// flight share the next enqueue_many call), reserve (promote
// due jobs, then lease up to N with one call per command for the batch),
// complete (one call for every success in a batch of outcomes, each job
// checked and stored in turn as if alone), fail (the same batching for
// failed attempts: attempts check, error, move to delayed or
// failed), promote (the due sweep), reclaim (list
// expired leases; each is then failed with a delay the host computed),
// extend (renew leases), give_up_claim and give_up_done (take over and
// clear owed give-up calls), release (put back, uncounted, the jobs of
// handlers cut short by Shutdown) and defer (put back, uncounted, the jobs a
// circuit breaker held back, to the delayed set); and for operators
// list_sorted and list_waiting (a page of one state), retry, retry_failed
// (one bounded step), delete, run_now, cancel, cancel_ack (a worker's
// confirmation that it stopped a job cancelled), pause and resume.
//
// # Waiting
//
// An idle worker does not poll. It blocks on the marker with a fractional
// BZPOPMIN (sent with Do; go-redis's typed call rounds to whole seconds) and
// keeps its own timer for the next due job, which reserve reports; a script
// that makes a job runnable, or schedules a new earliest one, wakes one idle
// worker. A retry therefore starts a timer wake-up and one round trip after
// its time (reserve hands out the jobs' records with their leases), not at
// Redis's 100ms blocking-timeout resolution.
//
// # Testing
//
// Package nativetest runs a queue and a real worker on an in-process
// Redis whose clock a test sets: a test follows a job attempt by attempt
// ("attempt 2 failed, and the job runs again at t") without sleeping and
// without a Redis server, and every attempt is reported to a
// reboundtest.Recorder.
//
// # Connections
//
// A worker holds one connection for its wake-up block and uses about four
// more at peak: reserving, renewing leases, reclaiming, and storing
// outcomes. A handler hands its outcome over before it frees its slot, so
// the outcomes that freed slots usually travel in the same pipelined round
// trip as the reserve that refills them (one complete call and one fail
// call for up to 128 outcomes, then reserve); outcomes that arrive while
// that round trip is out wait for the next one (or, when the worker is
// idle, go in a batch of their own). Several workers on one
// client need a pool to match (go-redis's ClusterClient defaults to 5 per
// CPU per node).
// The blocking call's timeout is kept under the client's ReadTimeout.
//
// # Prefetch
//
// One fetch loop reserves for all of a worker's handlers, one round trip
// at a time, so a handler that frees up would wait out a round trip for
// its next job. The worker therefore reserves ahead (see [WithPrefetch];
// by default as many jobs as it has handlers, at most 100): a finished
// handler takes the next job reserved, in the queue's order, at once. On a
// loaded machine a round trip is mostly time spent waiting for a CPU (the
// server's, then the worker's). Without jobs reserved ahead, every handler
// of a worker waits on the same serial chain of round trips, so one stall
// of the server's or the fetch loop's thread idles them all at once, while
// a peer that runs one blocking loop per handler (asynq) spreads such
// stalls over its handlers. Its rate per round trip is not what suffers: an
// added 300µs per round trip costs the native path less than asynq, which
// makes several round trips per job on each handler's loop.
package native
