package native

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// stopMarker is the marker member Shutdown adds to end its own worker's
// block at once; another worker that pops it just looks for work.
const stopMarker = "stop"

// wakeListener ends the listener's block on the marker, if it is blocked,
// so that Shutdown need not wait out the block's timeout.
func (w *Worker) wakeListener() {
	if !w.blocked.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	w.q.rdb.ZAdd(ctx, w.q.keys.marker, redis.Z{Score: 0, Member: stopMarker})
}

// listen blocks on the queue's marker while the fetch loop is idle and
// wakes it when a job is enqueued, promoted or rescheduled. The block is a
// fractional BZPOPMIN sent with Do: go-redis's typed call rounds timeouts to
// whole seconds. Precise fire times come from the fetch loop's own timer,
// not from this block, whose timeout Redis checks only at its hz rate.
func (w *Worker) listen() {
	defer w.bg.Done()
	secs := strconv.FormatFloat(w.block.Seconds(), 'f', 3, 64)
	failures := 0
	for {
		select {
		case <-w.stop:
			return
		case <-w.listenReq:
		}
		for w.waiting.Load() {
			select {
			case <-w.stop:
				return
			default:
			}
			w.blocked.Store(true)
			res, err := w.q.rdb.Do(context.Background(), "BZPOPMIN", w.q.keys.marker, secs).Slice()
			w.blocked.Store(false)
			if errors.Is(err, redis.Nil) {
				continue // timed out: block again while still idle
			}
			select {
			case <-w.stop:
				// Shutting down: a wake-up meant for the queue (not the one
				// Shutdown sent to end this block) goes on to another
				// worker.
				if err == nil && len(res) == 3 && res[1] != stopMarker {
					w.q.rdb.ZAdd(context.Background(), w.q.keys.marker, redis.Z{Score: 0, Member: res[1]})
				}
				return
			default:
			}
			if err != nil {
				failures++
				if !w.pause("wait for jobs", failures, err) {
					return
				}
				continue
			}
			failures = 0
			if w.waiting.Load() {
				select {
				case w.wake <- struct{}{}:
				default:
				}
			} else {
				// The fetch loop got busy meanwhile: pass the wake-up on
				// to another idle worker.
				w.q.rdb.ZAdd(context.Background(), w.q.keys.marker, redis.Z{Score: 0, Member: "w"})
			}
			break
		}
	}
}
