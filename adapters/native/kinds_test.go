package native_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/adapters/native/nativetest"
	"github.com/rebound-go/rebound/backoff"
)

// WithKindRule gives the jobs of one name their own rule: their own
// schedule and cap, while other jobs keep the worker's, and a job's own
// WithMaxAttempts still wins.
func TestKindRule(t *testing.T) {
	fixed := func(d time.Duration, n int) backoff.Rule {
		return backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(d)), n))
	}
	w := nativetest.NewWorker(t, fixed(10*time.Second, 2), func(context.Context, *native.Job) error {
		return errors.New("always")
	}, native.WithKindRule("report", fixed(30*time.Second, 4)))
	for _, c := range []struct {
		id, name string
		opts     []native.EnqueueOption
		story    string
	}{
		{"plain", "", nil, "1 retry 10s\n2 exhausted"},
		{"other", "mail", nil, "1 retry 10s\n2 exhausted"},
		{"report", "report", nil, "1 retry 30s\n2 retry 30s\n3 retry 30s\n4 exhausted"},
		{"own-cap", "report", []native.EnqueueOption{native.WithMaxAttempts(2)}, "1 retry 30s\n2 exhausted"},
	} {
		w.Enqueue(nil, append([]native.EnqueueOption{native.WithID(c.id), native.WithName(c.name)}, c.opts...)...)
		for {
			ev := w.Next(c.id)
			if ev.Attempt.Kind != c.name {
				t.Errorf("job %s: attempt told kind %q, want %q", c.id, ev.Attempt.Kind, c.name)
			}
			if !ev.Result.Decision.Retry() {
				break
			}
			if want := w.Now().Add(ev.Result.Decision.Delay); !ev.Result.FireAt.Equal(want) {
				t.Errorf("job %s attempt %d: fires at %s, want %s", c.id, ev.Attempt.Number, ev.Result.FireAt, want)
			}
			w.AdvanceTo(ev.Result.FireAt)
		}
		if got := w.Recorder.Story(c.id); got != c.story {
			t.Errorf("job %s:\n%s\nwant\n%s", c.id, got, c.story)
		}
	}
}
