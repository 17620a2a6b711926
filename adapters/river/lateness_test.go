package reboundriver

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/rebound-go/rebound/backoff"
)

// timedArgs is a job that always fails, recording when each attempt ran.
type timedArgs struct{}

func (timedArgs) Kind() string { return "rebound_timed" }

type timedWorker struct {
	river.WorkerDefaults[timedArgs]
	mu   sync.Mutex
	runs map[int64][][2]time.Time // job ID -> [start, end] per attempt
}

func (w *timedWorker) Work(ctx context.Context, job *river.Job[timedArgs]) error {
	start := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.runs[job.ID] = append(w.runs[job.ID], [2]time.Time{start, time.Now()})
	return errScripted
}

// TestLateness measures how late River starts retries with the Retrier, on
// PostgreSQL, for the default FetchPollInterval and shorter ones. It is a
// measurement, not a check: it runs only with REBOUND_RIVER_LATENESS=1 and
// logs a table (run it without -race for production figures).
func TestLateness(t *testing.T) {
	if os.Getenv("REBOUND_RIVER_LATENESS") != "1" {
		t.Skip("set REBOUND_RIVER_LATENESS=1 to measure retry lateness")
	}
	rule := mustRule(t, backoff.Must(backoff.EqualJitter(backoff.Must(backoff.Exponential(200*time.Millisecond, 2*time.Second)))), 4)
	polls := []time.Duration{0, 500 * time.Millisecond, 100 * time.Millisecond, 50 * time.Millisecond}
	var table string
	for _, poll := range polls {
		pool, schema := postgresDB(t)
		r, _ := New(rule, quietErrors)
		w := &timedWorker{runs: map[int64][][2]time.Time{}}
		workers := river.NewWorkers()
		river.AddWorker(workers, w)
		cfg := clientConfig(t, r, schema, workers, 50, max(poll, time.Millisecond))
		cfg.FetchPollInterval, cfg.FetchCooldown = poll, min(poll, river.FetchCooldownDefault)
		client := startClient(t, riverpgxv5.New(pool), cfg)
		// One batch, so no later insert notification wakes the fetcher
		// early: every retry waits for the poll, as on an idle queue.
		params := make([]river.InsertManyParams, 30)
		for i := range params {
			params[i] = river.InsertManyParams{Args: timedArgs{}}
		}
		if _, err := client.InsertMany(context.Background(), params); err != nil {
			t.Fatal(err)
		}
		waitTerminal(t, client, 2*time.Minute)
		var late []time.Duration
		w.mu.Lock()
		for id, runs := range w.runs {
			for i := 0; i+1 < len(runs); i++ {
				want := rule.Decide(i+1, errScripted, backoff.Key(strconv.FormatInt(id, 10))).Delay
				late = append(late, runs[i+1][0].Sub(runs[i][1])-want)
			}
		}
		w.mu.Unlock()
		sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
		early := 0
		for _, d := range late {
			if d < 0 {
				early++
			}
		}
		pct := func(p float64) time.Duration { return late[min(len(late)-1, int(p*float64(len(late))))] }
		name := "1s (default)"
		if poll > 0 {
			name = poll.String()
		}
		table += fmt.Sprintf("| %s | %d | %v | %v | %v | %d |\n", name, len(late),
			pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), late[len(late)-1].Round(time.Millisecond), early)
	}
	t.Logf("retry lateness on PostgreSQL, policy %s, idle queue:\n| FetchPollInterval | retries | p50 | p99 | max | early |\n|---|---|---|---|---|---|\n%s", rule, table)
}
