package native

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
)

// Jobs a worker holds without having started their handler (reserved
// ahead of a free handler, see WithPrefetch) are started only while the
// worker is sure their lease is still its own, without asking Redis: each
// held job has a start deadline on the worker's monotonic clock, the time
// the worker sent the reserve (or the last renewal that renewed the job)
// plus the lease less a margin (startMargin). The lease Redis keeps runs
// from when the script ran, which is later, so before that deadline the
// lease has not run out and no reclaim can have taken the job. Past it (a
// process stopped by SIGSTOP and resumed, a stalled connection, a starved
// machine: the monotonic clock runs on through all of them) the job starts
// only after one round trip renewed its lease (extend), which shows a
// lost lease or an operator's cancel, and drops the job if so. What is
// left is the instant between the check and the handler's call: a process
// stopped right there for longer than the margin still starts the job on
// resume.
//
// An operator's cancel of a job a worker holds (Queue.Cancel) waits for
// that worker to confirm that it dropped the job or cancelled its
// handler's context (cancel_ack), or for the lease to run out: after that
// the rule above keeps the worker from starting the job unseen. The cancel
// script publishes the cancelled reservation's token on the queue's
// cancels channel; each worker listens there (cancelListen) and checks at
// once the jobs it holds under that token.

// startMargin is how long before its lease, as the worker last knows it,
// a held job stops being started without a check: a tenth of the lease,
// at least 5ms (or half of a lease shorter than 10ms).
func (w *Worker) startMargin() time.Duration {
	return max(w.lease/10, min(5*time.Millisecond, w.lease/2))
}

// startWindow is how long after sending the round trip that leased or
// renewed a job the worker may start it without a check.
func (w *Worker) startWindow() time.Duration {
	return w.lease - w.startMargin()
}

// mayStart reports whether rj's handler may start: before its start
// deadline at once; past it only once a renewal of its lease succeeded.
// A held job whose lease was lost, or that an operator cancelled (then
// told by Worker.cancelled), is not started.
func (w *Worker) mayStart(rj *runningJob) bool {
	if rj.lost.Load() {
		return false
	}
	w.mu.Lock()
	by := rj.startBy
	w.mu.Unlock()
	if w.now().Before(by) {
		return true
	}
	code, sent, err := w.renewOne(rj)
	if err != nil {
		w.report(fmt.Errorf("native: job %q on queue %q was held past its lease's start deadline and the renewal that checks the lease failed, so it is not started here (its lease runs out and a reclaim counts the attempt): %w", rj.id, w.q.name, err))
		return false
	}
	w.renewed(rj, code, sent)
	return code == 1 && !rj.lost.Load()
}

// renewOne renews the lease of rj alone, returning extend's flag for it
// and when the renewal was sent.
func (w *Worker) renewOne(rj *runningJob) (int64, time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sent := w.now()
	k := w.q.keys
	res, err := scriptExtend.Run(ctx, w.q.rdb, []string{k.active, k.jobs}, w.lease.Milliseconds(), rj.id, rj.token).Slice()
	if err != nil {
		return 0, sent, err
	}
	if len(res) != 1 {
		return 0, sent, fmt.Errorf("native: extend returned %d flags for 1 job, want 1", len(res))
	}
	return parseInt(res[0]), sent, nil
}

// renewed acts on extend's flag for rj, from a renewal sent at sent: 1
// renewed (its start deadline moves on), 2 cancelled by an operator (see
// Worker.cancelled), 0 lost (its handler's context is cancelled with
// ErrLeaseLost, if it started, and the loss reported) unless its attempt
// ended since the renewal was sent.
func (w *Worker) renewed(rj *runningJob, code int64, sent time.Time) {
	switch code {
	case 1:
		w.mu.Lock()
		if by := sent.Add(w.startWindow()); by.After(rj.startBy) {
			rj.startBy = by
		}
		w.mu.Unlock()
	case 2:
		w.cancelled(rj)
	default:
		w.mu.Lock()
		// A job whose outcome was stored since the renewal was sent has
		// given its lease back, not lost it.
		lost := !rj.ended.Load()
		if lost && rj.cancel != nil {
			rj.cancel(ErrLeaseLost)
		}
		w.mu.Unlock()
		if lost {
			w.leaseLost(rj)
		}
	}
}

// ackCancel confirms to Redis that this worker stopped the job id it held
// under token, which an operator cancelled: its handler will not start, or
// its context is cancelled (lua/cancel_ack.lua). Queue.Cancel waits for
// it. If the call fails, Cancel waits until the lease runs out instead.
func (w *Worker) ackCancel(id, token string) {
	if w.abandoned.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := scriptCancelAck.Run(ctx, w.q.rdb, []string{w.q.keys.cancelling}, id, token).Err(); err != nil {
		w.report(fmt.Errorf("native: confirm the cancel of job %q on queue %q (its Cancel waits until the lease runs out instead): %w", id, w.q.name, err))
	}
}

// cancelListen listens on the queue's cancels channel, where the cancel
// script publishes the token of each running job it cancels, and checks
// at once the job this worker holds under that token: its renewal tells
// whether it was cancelled (a message alone is not trusted). Lost
// messages (a connection cut meanwhile) leave the slower paths: the
// reserves' count of cancels and the lease renewals. After a failure the
// subscription is closed, not left unread, and made anew after the
// reconnect backoff.
func (w *Worker) cancelListen() {
	defer w.bg.Done()
	var mu sync.Mutex
	var sub *redis.PubSub // the current subscription, under mu; nil once stopped
	stopped := false
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-w.bgStop
		mu.Lock()
		stopped = true
		if sub != nil {
			_ = sub.Close()
		}
		mu.Unlock()
	}()
	defer func() { <-closed }()
	ctx := context.Background()
	for failures := 0; ; failures++ {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		if w.beforeCancelSubscribe != nil {
			w.beforeCancelSubscribe()
		}
		s := w.q.rdb.Subscribe(ctx, w.q.keys.cancels)
		sub = s
		mu.Unlock()
		if w.listenCancels(ctx, s) {
			failures = 0
		}
		mu.Lock()
		sub = nil
		mu.Unlock()
		_ = s.Close()
		if !w.sleep(backoff.Delay(w.reconnect, failures+1, backoff.Source{}), w.bgStop) {
			return
		}
	}
}

// listenCancels handles the messages of sub until it fails (or is closed),
// and reports whether any came. Each confirmation that sub is subscribed
// (the first, and go-redis's own after a reconnect) is followed by a look
// at the cancelling hash for the jobs this worker runs: a cancel published
// before the subscription was live reached no one, and its job would
// otherwise wait for the next renewal (a Cancel against a worker whose
// subscription came up late under load took the whole 10s).
func (w *Worker) listenCancels(ctx context.Context, sub *redis.PubSub) bool {
	got := false
	for {
		m, err := sub.Receive(ctx)
		if err != nil {
			return got
		}
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				w.catchUpCancels()
			}
		case *redis.Message:
			got = true
			w.mu.Lock()
			rj := w.running[m.Payload]
			w.mu.Unlock()
			w.stopCancelled(rj)
		}
	}
}

// stopCancelled renews rj, a job an operator may have cancelled, so that
// the renewal's answer stops it (the held job dropped, or the handler's
// context cancelled) and confirms the cancel.
func (w *Worker) stopCancelled(rj *runningJob) {
	if rj == nil || rj.lost.Load() {
		return
	}
	if code, sent, err := w.renewOne(rj); err == nil {
		w.renewed(rj, code, sent)
	}
}

// catchUpCancels reads the cancelling hash for every job the worker runs
// or holds (one HMGET) and stops those cancelled under the reservation it
// holds. An error leaves them to the renewals, as before.
func (w *Worker) catchUpCancels() {
	w.mu.Lock()
	jobs := make([]*runningJob, 0, len(w.running))
	for _, rj := range w.running {
		jobs = append(jobs, rj)
	}
	w.mu.Unlock()
	if len(jobs) == 0 {
		return
	}
	ids := make([]string, len(jobs))
	for i, rj := range jobs {
		ids[i] = rj.id
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	vals, err := w.q.rdb.HMGet(ctx, w.q.keys.cancelling, ids...).Result()
	if err != nil {
		return
	}
	for i, v := range vals {
		entry, ok := v.(string)
		if !ok {
			continue
		}
		if tok, _, _ := strings.Cut(entry, ","); tok == jobs[i].token {
			w.stopCancelled(jobs[i])
		}
	}
}
