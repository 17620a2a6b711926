package reboundasynq_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/hibiken/asynq"

	reboundasynq "github.com/rebound-go/rebound/adapters/asynq"
	"github.com/rebound-go/rebound/backoff"
)

// One Retrier, plugged in twice: its RetryDelay as the server's
// RetryDelayFunc, its Middleware on the mux. Tasks built with its NewTask
// carry the headers rebound uses and the MaxRetry of their type's rule.
func Example() {
	policy := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(time.Second, 5*time.Minute))))
	rule, err := backoff.NewRule(policy, 8)
	if err != nil {
		log.Fatal(err)
	}
	retry, err := reboundasynq.New(rule)
	if err != nil {
		log.Fatal(err)
	}

	redisOpt := asynq.RedisClientOpt{Addr: "127.0.0.1:6379"}
	srv := asynq.NewServer(redisOpt, asynq.Config{
		RetryDelayFunc:           retry.RetryDelay, // the one line in your config
		DelayedTaskCheckInterval: 100 * time.Millisecond,
	})
	mux := asynq.NewServeMux()
	mux.Use(retry.Middleware) // ... and the one line on your mux
	mux.HandleFunc("email:send", func(ctx context.Context, t *asynq.Task) error {
		return nil
	})

	client := asynq.NewClient(redisOpt)
	defer client.Close()
	_, _ = client.Enqueue(retry.NewTask("email:send", nil))
	_ = srv.Run(mux)
}

// The retry delays a job will see are the core's, keyed by its task ID.
func ExampleRetrier_Rule() {
	rule, _ := backoff.NewRule(backoff.Must(backoff.Exponential(time.Second, time.Minute)), 4)
	retry, _ := reboundasynq.New(rule)
	for _, s := range backoff.Schedule(retry.Rule().Policy(), backoff.Key("task-id"), retry.Rule().MaxAttempts()-1) {
		fmt.Printf("after attempt %d: wait %v\n", s.Attempt, s.Delay)
	}
	// Output:
	// after attempt 1: wait 1s
	// after attempt 2: wait 2s
	// after attempt 3: wait 4s
}
