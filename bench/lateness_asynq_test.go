package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	reboundasynq "github.com/rebound-go/rebound/adapters/asynq"
)

// asynqIntervals are asynq's two polling intervals of one lateness run.
type asynqIntervals struct {
	name string
	// delayed is Config.DelayedTaskCheckInterval, check
	// Config.TaskCheckInterval; zero leaves asynq's default (5s, 1s).
	delayed, check time.Duration
}

var asynqLatenessIntervals = []asynqIntervals{
	{name: "default"},
	{name: "100ms", delayed: 100 * time.Millisecond, check: 100 * time.Millisecond},
}

// benchLatenessAsynq runs one lateness measurement of asynq through the
// rebound adapter (RetryDelay + Middleware, rounding or precise) on a
// private redis-server.
func benchLatenessAsynq(b *testing.B, iv asynqIntervals, precise bool, load latenessLoad) {
	ctx := context.Background()
	rdb := privateRedis(b)
	_, rule := mustRule(b, latenessPolicy, 2)
	var opts []reboundasynq.Option
	if precise {
		opts = append(opts, reboundasynq.WithPrecise())
	}
	retrier, err := reboundasynq.New(rule, opts...)
	if err != nil {
		b.Fatal(err)
	}
	const queue = "lateness"
	rec := newLatenessRecorder(load.jobs)
	mux := asynq.NewServeMux()
	mux.Use(retrier.Middleware)
	mux.HandleFunc("lateness", func(ctx context.Context, t *asynq.Task) error {
		i, err := strconv.Atoi(string(t.Payload()))
		if err != nil {
			return err
		}
		if n, _ := asynq.GetRetryCount(ctx); n == 0 {
			rec.failed(i)
			return errDependencyDown
		}
		rec.retried(i)
		return nil
	})
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:              latenessConcurrency,
		Queues:                   map[string]int{queue: 1},
		RetryDelayFunc:           retrier.RetryDelay,
		DelayedTaskCheckInterval: iv.delayed,
		TaskCheckInterval:        iv.check,
		LogLevel:                 asynq.ErrorLevel,
	})
	if err := srv.Start(mux); err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	client := asynq.NewClientFromRedisClient(rdb)
	// Precise mode keeps the fire time in a header and rounds up tasks
	// that have none: every task gets one, in both modes.
	headers := map[string]string{"bench": "lateness"}
	rec.produce(b, load, func(from, to int) error {
		for i := from; i < to; i++ {
			t := asynq.NewTaskWithHeaders("lateness", []byte(strconv.Itoa(i)), headers)
			if _, err := client.EnqueueContext(ctx, t, asynq.Queue(queue), retrier.MaxRetry()); err != nil {
				return err
			}
		}
		return nil
	})
	rec.wait(b, 3*time.Minute)
	rec.report(b)
}
