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

// Three jobs in one round trip, one of them delayed; the fourth repeats an
// ID of the batch and is refused with ErrJobExists while the others are
// stored.
func ExampleQueue_EnqueueMany() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	q, err := native.NewQueue(rdb, "emails")
	if err != nil {
		panic(err)
	}
	res, err := q.EnqueueMany(ctx, []native.EnqueueParams{
		{Payload: []byte("welcome"), Options: []native.EnqueueOption{native.WithID("mail-1")}},
		{Payload: []byte("receipt"), Options: []native.EnqueueOption{native.WithID("mail-2")}},
		{Payload: []byte("reminder"), Options: []native.EnqueueOption{native.WithID("mail-3"), native.WithDelay(time.Hour)}},
		{Payload: []byte("welcome again"), Options: []native.EnqueueOption{native.WithID("mail-1")}},
	})
	if err != nil {
		panic(err)
	}
	for _, r := range res {
		fmt.Println(r.ID, r.Err == nil, errors.Is(r.Err, native.ErrJobExists))
	}
	c, _ := q.Counts(ctx)
	fmt.Println("waiting", c.Waiting, "delayed", c.Delayed)
	// Output:
	// mail-1 true false
	// mail-2 true false
	// mail-3 true false
	// mail-1 false true
	// waiting 2 delayed 1
}
