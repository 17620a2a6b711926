package reboundasynq

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/rebound-go/rebound/backoff"
)

// TestLateness measures, on real Redis, how late retries start after their
// planned delay (gap between an attempt's end and the next attempt's start,
// minus the delay), for asynq's default polling intervals and for the
// recommended ones, in rounding and in precise mode. It takes about a
// minute, so it runs only with REBOUND_ASYNQ_LATENESS=1, and logs the table
// the package README quotes. It fails if any retry starts early.
func TestLateness(t *testing.T) {
	if os.Getenv("REBOUND_ASYNQ_LATENESS") != "1" {
		t.Skip("set REBOUND_ASYNQ_LATENESS=1 to measure lateness on real Redis (about a minute)")
	}
	delays := []time.Duration{200 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond, 2300 * time.Millisecond}
	const perDelay = 15
	var table strings.Builder
	fmt.Fprintf(&table, "| intervals (delayed / task check) | mode | retries | p50 | p99 | max | early |\n|---|---|---|---|---|---|---|\n")
	for _, iv := range []struct {
		name           string
		delayed, check time.Duration
	}{
		{"defaults (5s / 1s)", 5 * time.Second, time.Second},
		{"100ms / 100ms", 100 * time.Millisecond, 100 * time.Millisecond},
	} {
		for _, precise := range []bool{false, true} {
			mode := "round up"
			var opts []Option
			if precise {
				mode = "precise"
				opts = append(opts, WithPrecise())
			}
			t.Run(iv.name+"/"+mode, func(t *testing.T) {
				late := measureLateness(t, iv.delayed, iv.check, delays, perDelay, opts...)
				slices.Sort(late)
				early := 0
				for _, l := range late {
					if l < 0 {
						early++
					}
				}
				q := func(p float64) time.Duration { return late[min(len(late)-1, int(p*float64(len(late))))] }
				fmt.Fprintf(&table, "| %s | %s | %d | %v | %v | %v | %d |\n", iv.name, mode, len(late),
					q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond), late[len(late)-1].Round(time.Millisecond), early)
				if early > 0 {
					t.Errorf("%d of %d retries started early; earliest %v", early, len(late), late[0])
				}
			})
		}
	}
	t.Logf("lateness (gap minus planned delay), delays %v, %d tasks each:\n%s", delays, perDelay, table.String())
}

// measureLateness runs len(delays)*perDelay tasks that fail once with a
// retry-after hint of their delay and succeed on the retry, enqueued over a
// second so failures fall at every phase of the second, and returns each
// retry's lateness.
func measureLateness(t *testing.T, delayed, check time.Duration, delays []time.Duration, perDelay int, opts ...Option) []time.Duration {
	c, queue := realRedis(t)
	r := mustNew(t, mustRule(t, fixed(t, time.Millisecond), 2), opts...)
	type rec struct {
		end, start time.Time
		delay      time.Duration
	}
	var mu sync.Mutex
	recs := map[string]*rec{}
	done := make(chan struct{}, len(delays)*perDelay)
	h := func(ctx context.Context, task *asynq.Task) error {
		now := time.Now()
		id, _ := asynq.GetTaskID(ctx)
		n, _ := asynq.GetRetryCount(ctx)
		mu.Lock()
		defer mu.Unlock()
		if n == 0 {
			d, _ := time.ParseDuration(string(task.Payload()))
			recs[id] = &rec{delay: d, end: time.Now()}
			return backoff.RetryAfter(errBoom, d)
		}
		recs[id].start = now
		done <- struct{}{}
		return nil
	}
	s := start(t, c, queue, r, h, serverOpts{delayedCheck: delayed, taskCheck: check, concurrency: 16})
	total := 0
	for i := range perDelay {
		for _, d := range delays {
			s.enqueue(t, []byte(d.String()), map[string]string{"lateness": "1"})
			total++
		}
		time.Sleep(time.Second / time.Duration(perDelay) * time.Duration(1+i%3) / 2)
	}
	timeout := time.After(time.Minute)
	for range total {
		select {
		case <-done:
		case <-timeout:
			t.Fatalf("retries did not all run within a minute")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var late []time.Duration
	for _, x := range recs {
		late = append(late, x.start.Sub(x.end)-x.delay)
	}
	return late
}
