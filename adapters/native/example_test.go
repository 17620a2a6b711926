package native_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/adapters/native"
	"github.com/rebound-go/rebound/backoff"
)

// A job that fails twice and then succeeds, retried 10ms apart. (miniredis
// stands in for Redis to keep the example self-contained.)
func Example() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	q, err := native.NewQueue(rdb, "emails")
	if err != nil {
		panic(err)
	}
	rule, err := backoff.NewRule(backoff.Must(backoff.Fixed(10*time.Millisecond)), 5)
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	w, err := native.NewWorker(q, rule, func(ctx context.Context, j *native.Job) error {
		fmt.Printf("attempt %d of %d: %s\n", j.Attempt, j.MaxAttempts, j.Payload)
		if j.Attempt < 3 {
			return errors.New("smtp: try again")
		}
		close(done)
		return nil
	})
	if err != nil {
		panic(err)
	}
	if err := w.Start(); err != nil {
		panic(err)
	}
	id, err := q.Enqueue(ctx, []byte("hello"), native.WithID("mail-1"))
	if err != nil {
		panic(err)
	}
	<-done
	if err := w.Shutdown(ctx); err != nil {
		panic(err)
	}
	info, _ := q.Job(ctx, id)
	fmt.Println(info.State, info.Attempts, info.LastError)
	// Output:
	// attempt 1 of 5: hello
	// attempt 2 of 5: hello
	// attempt 3 of 5: hello
	// completed 3 smtp: try again
}

// Enqueue refuses a payload above the queue's limit with an error that says
// both sizes.
func ExampleWithMaxPayload() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"}) // never dialled
	defer rdb.Close()
	q, _ := native.NewQueue(rdb, "uploads", native.WithMaxPayload(1024))
	_, err := q.Enqueue(context.Background(), make([]byte, 4096))
	fmt.Println(err)
	// Output:
	// native: payload is 4096 bytes, above the queue's limit of 1024 bytes (raise it with WithMaxPayload)
}
