package outage

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	reboundasynq "github.com/rebound-go/rebound/adapters/asynq"
	"github.com/rebound-go/rebound/breaker/redisstore"
)

// Asynq runs the scenario on asynq, the breaker in the same Redis
// (redisstore).
type Asynq struct {
	Addr string // Redis address

	rdb    *redis.Client
	insp   *asynq.Inspector
	queue  string
	prefix string
}

// Name returns "asynq".
func (a *Asynq) Name() string { return "asynq" }

// Setup enqueues the jobs on a queue of the run's own, built with the
// Retrier's NewTask (headers for precise mode, MaxRetry with room for
// deferrals), kept an hour once done so that they can be counted.
func (a *Asynq) Setup(ctx context.Context, s Scenario, mode string) (Spec, error) {
	a.rdb = newRedis(a.Addr)
	a.queue = fmt.Sprintf("rbo-asynq-%s-%d", mode, time.Now().UnixNano())
	a.prefix = a.queue
	a.insp = asynq.NewInspectorFromRedisClient(a.rdb)
	r, err := reboundasynq.New(s.Rule)
	if err != nil {
		return Spec{}, err
	}
	client := asynq.NewClientFromRedisClient(a.rdb)
	if err := parallel(ctx, s.Jobs, func(ctx context.Context) error {
		_, err := client.EnqueueContext(ctx, r.NewTask(Kind, []byte("order")), asynq.Queue(a.queue), asynq.Retention(time.Hour))
		return err
	}); err != nil {
		return Spec{}, err
	}
	return Spec{Redis: a.Addr, Queue: a.queue, Prefix: a.prefix}, nil
}

// Ended reads the queue's completed and archived counts.
func (a *Asynq) Ended(context.Context) (int, int, error) {
	info, err := a.insp.GetQueueInfo(a.queue)
	if err != nil {
		return 0, 0, err
	}
	return info.Completed, info.Archived, nil
}

// Teardown deletes the queue and the breaker's keys.
func (a *Asynq) Teardown(ctx context.Context) {
	deleteKeys(ctx, a.rdb, "asynq:{"+a.queue+"}*")
	a.rdb.SRem(ctx, "asynq:queues", a.queue)
	deleteKeys(ctx, a.rdb, a.prefix+":*")
	_ = a.rdb.Close()
}

// runAsynq is a worker process: an asynq server with the Retrier plugged
// in as documented (RetryDelay, the middleware, and in breaker mode
// IsFailure), precise (asynq stores whole seconds), polling every 100ms.
func runAsynq(ctx context.Context, sp Spec, stop <-chan struct{}) error {
	rule, err := sp.rule()
	if err != nil {
		return err
	}
	rdb := newRedis(sp.Redis)
	defer rdb.Close()
	opts := []reboundasynq.Option{reboundasynq.WithPrecise(), reboundasynq.WithErrorHandler(report("asynq"))}
	if sp.Guarded() {
		rules, err := sp.rules()
		if err != nil {
			return err
		}
		opts = append(opts, reboundasynq.WithBreaker(redisstore.New(rdb, rules, redisstore.Options{Prefix: sp.Prefix})),
			reboundasynq.WithDependency(Kind, Dependency))
	}
	r, err := reboundasynq.New(rule, opts...)
	if err != nil {
		return err
	}
	cfg := asynq.Config{
		Concurrency:              sp.Concurrency,
		Queues:                   map[string]int{sp.Queue: 1},
		RetryDelayFunc:           r.RetryDelay,
		TaskCheckInterval:        100 * time.Millisecond,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		LogLevel:                 asynq.ErrorLevel,
	}
	if sp.Guarded() {
		cfg.IsFailure = r.IsFailure
	}
	srv := asynq.NewServerFromRedisClient(rdb, cfg)
	dep := newCaller(sp.Dep, sp.Concurrency)
	mux := asynq.NewServeMux()
	mux.Use(r.Middleware)
	mux.HandleFunc(Kind, func(ctx context.Context, _ *asynq.Task) error { return dep.call(ctx) })
	if err := srv.Start(mux); err != nil {
		return err
	}
	return untilStop(ctx, stop, func(context.Context) error {
		srv.Shutdown() // asynq's own timeout: Config.ShutdownTimeout
		return nil
	})
}
