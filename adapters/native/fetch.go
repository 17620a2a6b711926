package native

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// fetchLoop reserves jobs while slots are free and waits, without polling,
// for the next due job or a wake-up when there is nothing to run. It also
// stores the outcomes of finished attempts: a handler hands its outcome
// over before it frees its slot, so the outcomes that freed the slots
// travel in the same round trip as the reserve that refills them.
func (w *Worker) fetchLoop() {
	defer close(w.fetchDone)
	defer w.bg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	failures := 0
	var outs []*finishReq
	for {
		// Take one free slot (waiting for it) or an outcome to store.
		outs = outs[:0]
		n := 0
		select {
		case <-w.stop:
			return
		case w.slots <- struct{}{}:
			n = 1
		case r := <-w.finishCh:
			outs = append(outs, r)
		}
		// select picks at random among ready cases: a slot that freed up
		// after Shutdown began must not take one more job.
		select {
		case <-w.stop:
			if n == 1 {
				<-w.slots
			}
			w.sendBatch(outs)
			return
		default:
		}
		outs = w.drainOutcomes(outs)
		if n == 0 && freesSlot(outs) && !w.part {
			// Every slot was taken (running or reserved ahead) when the
			// outcome came, but its handler frees its slot right after
			// handing the outcome over: wait for that slot, so the outcome
			// rides with the reserve that refills it instead of taking a
			// round trip of its own. (A part of a sharded worker does not:
			// another part may take that slot, and the outcomes would wait
			// for one that only the end of other attempts frees.)
			select {
			case <-w.stop:
				w.sendBatch(outs)
				return
			case w.slots <- struct{}{}:
				n = 1
			}
		}
	more:
		for n < min(cap(w.slots), reserveBatch) {
			select {
			case w.slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		if n == 0 {
			w.sendBatch(outs)
			continue
		}
		jobs, due, err := w.reserveWith(n, outs)
		for range n - len(jobs) {
			<-w.slots
		}
		if err != nil {
			failures++
			if !w.pause("reserve", failures, err) {
				return
			}
			continue
		}
		failures = 0
		for _, rj := range jobs {
			w.handlers.Add(1)
			w.dispatch(rj)
		}
		if len(jobs) == n {
			continue
		}
		// Nothing more to run now: wait for the next due job, a wake-up or
		// the safety poll, whichever comes first, storing outcomes as they
		// come.
		w.waiting.Store(true)
		select {
		case w.listenReq <- struct{}{}:
		default:
		}
		timer.Reset(min(time.Until(due), w.idlePoll))
	idle:
		for {
			select {
			case <-w.stop:
				w.waiting.Store(false)
				return
			case <-w.wake:
				break idle
			case <-timer.C:
				break idle
			case r := <-w.finishCh:
				w.sendBatch(w.drainOutcomes(append(outs[:0], r)))
			}
		}
		w.waiting.Store(false)
	}
}

// freesSlot reports whether the sender of one of outs frees a slot once it
// was taken (see finishReq.freesSlot).
func freesSlot(outs []*finishReq) bool {
	for _, r := range outs {
		if r.freesSlot {
			return true
		}
	}
	return false
}

// drainOutcomes appends the outcomes waiting to be stored, up to a batch.
func (w *Worker) drainOutcomes(outs []*finishReq) []*finishReq {
	for len(outs) < finisherBatch {
		select {
		case r := <-w.finishCh:
			outs = append(outs, r)
		default:
			return outs
		}
	}
	return outs
}

// reserveBatch is the most jobs one reserve call takes (the script's own
// limit).
const reserveBatch = 1000

// reserveWith runs the reserve script for up to n jobs, which come back
// with their records in the same reply, after storing the outcomes in outs
// in the same round trip. The jobs are registered as running, their leases
// renewed from here on. due is when, by the local clock, the earliest
// delayed job becomes due (taken as the reply arrives).
func (w *Worker) reserveWith(n int, outs []*finishReq) ([]*runningJob, time.Time, error) {
	ctx := context.Background()
	keys := w.q.keys.reserveKeys
	startBy := w.now().Add(w.startWindow()) // see held.go
	var res []any
	var err error
	if len(outs) == 0 {
		res, err = scriptReserve.Run(ctx, w.q.rdb, keys, n, w.lease.Milliseconds()).Slice()
	} else {
		var rc *redis.Cmd
		b := w.prepareBatch(outs)
		_, _ = w.q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			b.queue(ctx, p)
			rc = scriptReserve.EvalSha(ctx, p, keys, n, w.lease.Milliseconds())
			return nil
		})
		w.answerBatch(b)
		res, err = rc.Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			res, err = scriptReserve.Run(ctx, w.q.rdb, keys, n, w.lease.Milliseconds()).Slice()
		}
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(res) < 3 {
		return nil, time.Time{}, fmt.Errorf("native: reserve returned %d values, want at least 3", len(res))
	}
	if cancels := parseInt(res[2]); w.cancels.Swap(cancels) != cancels {
		// An operator cancelled a running job since the last reserve:
		// renew now, which tells whether it was one of ours.
		select {
		case w.renewNow <- struct{}{}:
		default:
		}
	}
	due := time.Now().Add(w.idlePoll)
	if next := parseInt(res[1]); next >= 0 {
		due = time.Now().Add(max(time.Duration(next*1000-parseInt(res[0]))*time.Microsecond, 0))
	}
	var jobs []*runningJob
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := 3; i+2 < len(res); i += 3 {
		id, token := replyString(res[i]), replyString(res[i+1])
		rec, rerr := decodeRecord(replyString(res[i+2]))
		if rerr == nil && rec.attempts < 1 {
			rerr = fmt.Errorf("native: job record is malformed (attempts %d after a reservation), want at least 1", rec.attempts)
		}
		if rerr != nil {
			// Leased but unreadable: renew nothing, so the lease runs out
			// and the reclaim path fails the attempt.
			w.report(fmt.Errorf("native: job %q on queue %q: %w", id, w.q.name, rerr))
			continue
		}
		// The job is leased to us from here on: register it so its lease
		// is renewed.
		rj := &runningJob{id: id, token: token, job: w.newJob(id, rec.attempts, rec), startBy: startBy}
		w.running[token] = rj
		jobs = append(jobs, rj)
	}
	return jobs, due, nil
}
