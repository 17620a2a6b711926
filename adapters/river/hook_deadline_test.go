package reboundriver

import (
	"context"
	"errors"
	"testing"
	"time"
)

// pastDeadline is a context whose deadline has passed but whose timer has
// not fired yet: the state a busy machine leaves a timeout context in when
// the worker returns just after the deadline (the cancel runs on a
// goroutine of its own).
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestWorkEndPastDeadlineBeforeTheTimerFired: a nil returned after the
// deadline is a timed-out attempt even when the context has not ended yet;
// one returned before it, or with the deadline far ahead, stays nil; a
// worker's error passes through.
func TestWorkEndPastDeadlineBeforeTheTimerFired(t *testing.T) {
	r := &Retrier{}
	if err := r.WorkEnd(pastDeadline{context.Background()}, nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WorkEnd after the deadline, timer not yet fired: %v, want context.DeadlineExceeded (River would record a success)", err)
	}
	ahead, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := r.WorkEnd(ahead, nil, nil); err != nil {
		t.Errorf("WorkEnd an hour before the deadline: %v, want nil", err)
	}
	if err := r.WorkEnd(context.Background(), nil, nil); err != nil {
		t.Errorf("WorkEnd with no deadline: %v, want nil", err)
	}
	boom := errors.New("boom")
	if err := r.WorkEnd(pastDeadline{context.Background()}, nil, boom); err != boom {
		t.Errorf("WorkEnd of a worker's error: %v, want it unchanged", err)
	}
}
