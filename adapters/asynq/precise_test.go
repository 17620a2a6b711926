package reboundasynq

import (
	"fmt"
	"math"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/reboundtest"
)

// failFirstOffSecond is a recorder's script: attempt 1 fails, ending off a
// whole second; every later attempt succeeds.
func failFirstOffSecond(_ string, attempt int) error {
	if attempt == 1 {
		time.Sleep(123 * time.Millisecond) // end off a whole second
		return errBoom
	}
	return nil
}

// TestPreciseVersusRounding: by default the fire time is a whole second;
// in precise mode it is exact, travels in the task header and the retry
// starts no earlier; a precise-mode task without headers is rounded up.
func TestPreciseVersusRounding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		precise bool
		headers map[string]string
		exact   bool
	}{
		{"rounding", false, map[string]string{"h": "1"}, false},
		{"precise", true, map[string]string{"h": "1"}, true},
		{"precise-no-headers", true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &reboundtest.Recorder{}
				var opts []Option
				if tc.precise {
					opts = append(opts, WithPrecise())
				}
				r := mustNew(t, mustRule(t, fixed(t, 1300*time.Millisecond), 2), append(opts, WithObserver(obs))...)
				rc := newRecorder(failFirstOffSecond)
				s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
				id := s.enqueue(t, nil, tc.headers, asynq.Retention(time.Hour))
				info := s.waitState(t, id, asynq.TaskStateCompleted, time.Minute)
				runs := rc.get(id)
				_, res := results(obs)
				fire := res[0].FireAt
				if tc.exact {
					if !fire.Equal(runs[0].end.Add(1300*time.Millisecond)) && fire.Sub(runs[0].end) > 1300*time.Millisecond+time.Millisecond {
						t.Errorf("FireAt %v, want exactly end+1.3s (%v)", fire, runs[0].end.Add(1300*time.Millisecond))
					}
					if info.Headers[HeaderRetryAt] != strconv.FormatInt(fire.UnixNano(), 10) {
						t.Errorf("header %s = %q, want %d", HeaderRetryAt, info.Headers[HeaderRetryAt], fire.UnixNano())
					}
				} else if fire.Nanosecond() != 0 || fire.Before(runs[0].end.Add(1300*time.Millisecond)) {
					t.Errorf("FireAt %v, want a whole second at or after end+1.3s", fire)
				}
				if runs[1].start.Before(fire) {
					t.Errorf("retry started %v, before FireAt %v", runs[1].start, fire)
				}
			})
		})
	}
}

// TestNewTask: a task built by NewTask has headers and its type's
// MaxRetry, so precise mode is exact; options and headers given are kept.
func TestNewTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &reboundtest.Recorder{}
		r := mustNew(t, mustRule(t, fixed(t, 1300*time.Millisecond), 3), WithPrecise(), WithObserver(rec),
			WithKindRule("other", mustRule(t, fixed(t, time.Second), 9)))
		rc := newRecorder(failFirstOffSecond)
		s := start(t, miniRedis(t), "q", r, rc.handle, serverOpts{})
		info, err := s.client.Enqueue(r.NewTask(kind, []byte("p"), asynq.Retention(time.Hour)), asynq.Queue(s.queue))
		if err != nil {
			t.Fatal(err)
		}
		if info.MaxRetry != 3 || info.Headers[HeaderTask] == "" {
			t.Errorf("NewTask enqueued MaxRetry %d, headers %v; want 3 and %s", info.MaxRetry, info.Headers, HeaderTask)
		}
		done := s.waitState(t, info.ID, asynq.TaskStateCompleted, time.Minute)
		runs := rc.get(info.ID)
		e, _ := rec.Last(info.ID)
		first := rec.Job(info.ID)[0]
		if want := runs[0].end.Add(1300 * time.Millisecond); first.Result.FireAt.Sub(want).Abs() > time.Millisecond || first.Result.FireAt.Nanosecond() == 0 {
			t.Errorf("attempt 1 FireAt %v, want the exact end+1.3s %v (precise mode needs headers)", first.Result.FireAt, want)
		}
		if runs[1].start.Before(first.Result.FireAt) || e.Result.Outcome() != "success" {
			t.Errorf("retry started %v, before FireAt %v (or ended %s)", runs[1].start, first.Result.FireAt, e.Result.Outcome())
		}
		if done.Headers[HeaderRetryAt] == "" {
			t.Errorf("completed task headers %v, want %s stored by the retry", done.Headers, HeaderRetryAt)
		}

		task := r.NewTaskWithHeaders("other", nil, map[string]string{"traceparent": "x"}, asynq.MaxRetry(2))
		s.insp.PauseQueue(s.queue)
		info, err = s.client.Enqueue(task, asynq.Queue(s.queue))
		if err != nil || info.MaxRetry != 2 || info.Headers["traceparent"] != "x" || info.Headers[HeaderTask] == "" {
			t.Errorf("NewTaskWithHeaders enqueued %+v (%v), want MaxRetry 2 from the option and both headers", info, err)
		}
	})
}

// TestRetryAtFormat: HeaderRetryAt is decimal Unix nanoseconds, with more
// digits for times past 2262, so precise mode carries any fire time.
func TestRetryAtFormat(t *testing.T) {
	for _, at := range []time.Time{
		time.Unix(0, 123),
		time.Unix(1767225600, 123456789),
		time.Unix(0, math.MaxInt64),
		time.Now().Add(MaxDelay),
		time.Unix(1<<40, 999999999),
	} {
		v := formatRetryAt(at)
		back, ok := parseRetryAt(v)
		if !ok || !back.Equal(at) {
			t.Errorf("formatRetryAt(%v) = %q, read back as %v, %v", at, v, back, ok)
		}
		if at.Before(time.Unix(0, math.MaxInt64)) && at.UnixNano() > 1e9 && v != strconv.FormatInt(at.UnixNano(), 10) {
			t.Errorf("formatRetryAt(%v) = %q, want %d", at, v, at.UnixNano())
		}
	}
	for _, bad := range []string{"", "x", "12x4567890123", "-1-00000000"} {
		if _, ok := parseRetryAt(bad); ok && bad != "" {
			t.Errorf("parseRetryAt(%q) accepted it", bad)
		}
	}
}

// TestJitterWindows pins what the package docs say each mode can spread:
// in round-up mode a task's retry fires on a whole second, so a herd that
// fails together with a one-second jitter window lands on at most two
// instants, and a window of W seconds on at most W+1; in precise mode the
// fire times are as many as the tasks.
func TestJitterWindows(t *testing.T) {
	end := time.Now()
	for _, tc := range []struct {
		window  time.Duration
		precise bool
		most    int // distinct fire times at most; 0: one per task
	}{
		{time.Second, false, 2},
		{5 * time.Second, false, 6},
		{time.Second, true, 0},
	} {
		var opts []Option
		if tc.precise {
			opts = append(opts, WithPrecise())
		}
		r := mustNew(t, mustRule(t, backoff.Must(backoff.Jitter(fixed(t, tc.window))), 2), opts...)
		const tasks = 1000
		seen := map[time.Time]bool{}
		for i := range tasks {
			c := r.decideNow(r.NewTask(kind, nil), fmt.Sprint("task-", i), 0, 2, errBoom, end)
			_, at, _ := Decision(c)
			seen[at] = true
		}
		switch {
		case tc.most > 0 && len(seen) > tc.most:
			t.Errorf("round-up, window %v: %d distinct fire times, want at most %d", tc.window, len(seen), tc.most)
		case tc.most == 0 && len(seen) < tasks*99/100:
			t.Errorf("precise, window %v: %d distinct fire times for %d tasks, want about one each", tc.window, len(seen), tasks)
		}
	}
}
