package reboundasynq

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
)

// TestWithoutMiddleware: RetryDelay alone gives the rule's delay for
// attempt n+1, landing on a whole second, never shorter.
func TestWithoutMiddleware(t *testing.T) {
	exp := backoff.Must(backoff.Exponential(300*time.Millisecond, time.Minute))
	r := mustNew(t, mustRule(t, exp, 5))
	for n := range 8 {
		now := time.Now()
		d := r.RetryDelay(n, errBoom, asynq.NewTask(kind, nil))
		want := backoff.Delay(exp, n+1, backoff.Source{})
		// asynq stores time.Now().Add(d).Unix(): that second must not be
		// before the delay has passed.
		stored := time.Unix(time.Now().Add(d).Unix(), 0)
		if d < want || d > want+time.Second+50*time.Millisecond {
			t.Errorf("n=%d: delay %v, want %v rounded up to a whole second", n, d, want)
		}
		if stored.Before(now.Add(want)) {
			t.Errorf("n=%d: stored second %v is before now+delay %v", n, stored, now.Add(want))
		}
	}
	// The same through a server with no middleware: numbering still holds.
	synctest.Test(t, func(t *testing.T) {
		rc := newRecorder(func(string, int) error { return errBoom })
		s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{noMiddleware: true})
		id := s.enqueue(t, nil, nil, asynq.MaxRetry(4))
		s.waitState(t, id, asynq.TaskStateArchived, 2*time.Minute)
		runs := rc.get(id)
		if len(runs) != 5 {
			t.Fatalf("ran %d times, want 5", len(runs))
		}
		for i := 1; i < len(runs); i++ {
			if gap, want := runs[i].start.Sub(runs[i-1].end), backoff.Delay(exp, i, backoff.Source{}); gap < want {
				t.Errorf("retry %d after %v, before the %v delay", i, gap, want)
			}
		}
	})
}
