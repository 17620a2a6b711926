package reboundasynq

import (
	"slices"
	"sync"
	"unsafe"

	"github.com/hibiken/asynq"
)

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
}

func (f *flight) add(ru *run) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = make(map[flightKey][]*run)
	}
	f.runs[ru.key] = append(f.runs[ru.key], ru)
}

func (f *flight) remove(ru *run) {
	f.mu.Lock()
	defer f.mu.Unlock()
	list := f.runs[ru.key]
	i := slices.Index(list, ru)
	if i < 0 {
		return
	}
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
	n := 0
	for _, list := range f.runs {
		n += len(list)
	}
	return n
}
