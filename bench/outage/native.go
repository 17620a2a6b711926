package outage

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/breaker/redisstore"
)

// Native runs the scenario on rebound's own Redis queue, the breaker in
// the same Redis (redisstore).
type Native struct {
	Addr string // Redis address

	rdb    *redis.Client
	queue  *native.Queue
	prefix string
}

// Name returns "native".
func (n *Native) Name() string { return "native" }

const nativeQueue = "outage"

// Setup enqueues the jobs under a prefix of the run's own.
func (n *Native) Setup(ctx context.Context, s Scenario, mode string) (Spec, error) {
	n.rdb = newRedis(n.Addr)
	n.prefix = fmt.Sprintf("rbo-native-%s-%d", mode, time.Now().UnixNano())
	q, err := openNativeQueue(n.rdb, nativeQueue, n.prefix)
	if err != nil {
		return Spec{}, err
	}
	n.queue = q
	if err := parallel(ctx, s.Jobs, func(ctx context.Context) error {
		_, err := q.Enqueue(ctx, []byte("order"), native.WithName(Kind))
		return err
	}); err != nil {
		return Spec{}, err
	}
	return Spec{Redis: n.Addr, Prefix: n.prefix, Queue: nativeQueue}, nil
}

// Ended reads the queue's counts.
func (n *Native) Ended(ctx context.Context) (int, int, error) {
	c, err := n.queue.Counts(ctx)
	return int(c.Completed), int(c.Failed), err
}

// Teardown deletes the run's keys.
func (n *Native) Teardown(ctx context.Context) {
	deleteKeys(ctx, n.rdb, n.prefix+":*")
	_ = n.rdb.Close()
}

// openNativeQueue opens the run's queue as the measuring process and the
// workers both do: jobs kept an hour once done, so that they can be
// counted.
func openNativeQueue(rdb *redis.Client, name, prefix string) (*native.Queue, error) {
	return native.NewQueue(rdb, name, native.WithPrefix(prefix),
		native.WithCompletedRetention(time.Hour, -1), native.WithFailedRetention(time.Hour, -1))
}

// newRedis is a client of the Redis at addr with room for the workers'
// handlers and the enqueuing goroutines.
func newRedis(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32})
}

// deleteKeys deletes the keys matching pattern.
func deleteKeys(ctx context.Context, rdb *redis.Client, pattern string) {
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 500 {
			rdb.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	if len(keys) > 0 {
		rdb.Unlink(ctx, keys...)
	}
}

// runNative is a worker process of the native queue.
func runNative(ctx context.Context, sp Spec, stop <-chan struct{}) error {
	rule, err := sp.rule()
	if err != nil {
		return err
	}
	rdb := newRedis(sp.Redis)
	defer rdb.Close()
	q, err := openNativeQueue(rdb, sp.Queue, sp.Prefix)
	if err != nil {
		return err
	}
	dep := newCaller(sp.Dep, sp.Concurrency)
	opts := []native.WorkerOption{native.WithConcurrency(sp.Concurrency), native.WithErrorHandler(report("native"))}
	if sp.Guarded() {
		rules, err := sp.rules()
		if err != nil {
			return err
		}
		opts = append(opts, native.WithBreaker(redisstore.New(rdb, rules, redisstore.Options{Prefix: sp.Prefix})),
			native.WithDependency(Kind, Dependency))
	}
	w, err := native.NewWorker(q, rule, func(ctx context.Context, _ *native.Job) error { return dep.call(ctx) }, opts...)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	return untilStop(ctx, stop, w.Shutdown)
}
