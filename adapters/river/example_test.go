package reboundriver_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/rebound-go/rebound/adapters/river"
	"github.com/rebound-go/rebound/backoff"
)

type WebhookArgs struct {
	URL string `json:"url"`
}

func (WebhookArgs) Kind() string { return "webhook" }

type WebhookWorker struct {
	river.WorkerDefaults[WebhookArgs]
}

func (w *WebhookWorker) Work(ctx context.Context, job *river.Job[WebhookArgs]) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.Args.URL, nil)
	if err != nil {
		return backoff.Permanent(err) // a bad URL will not fix itself: cancelled
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err // retried on the rule's curve
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		// Wait at least as long as the server asks.
		return backoff.RetryAfter(errors.New("rate limited"), 30*time.Second)
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return backoff.Permanent(fmt.Errorf("webhook refused: %s", resp.Status))
	case resp.StatusCode >= 500:
		return fmt.Errorf("webhook failed: %s", resp.Status)
	}
	return nil
}

// Plug one Retrier into River's own Config, as the retry policy and as a
// plugin. Jobs then retry on full-jitter exponential backoff keyed by job
// ID, at most 8 runs in total whatever they were inserted with.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://localhost/app")
	if err != nil {
		log.Fatal(err)
	}

	policy := backoff.Must(backoff.Jitter(backoff.Must(backoff.Exponential(time.Second, 10*time.Minute))))
	rule, err := backoff.NewRule(policy, 8)
	if err != nil {
		log.Fatal(err)
	}
	retrier, err := reboundriver.New(rule)
	if err != nil {
		log.Fatal(err)
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &WebhookWorker{})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:      map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 50}},
		Workers:     workers,
		RetryPolicy: retrier,                     // decides when
		Plugins:     []rivertype.Plugin{retrier}, // sees the error, keeps the cap
		// Retries shorter than a few seconds run up to one poll interval
		// late; poll more often if they matter.
		FetchPollInterval: 100 * time.Millisecond,
		FetchCooldown:     50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
}

// A kind with its own rule: the middleware, NextRetry and the insert
// middleware all apply it to that kind.
func ExampleWithKindRule() {
	def := backoff.Must(backoff.NewRule(backoff.Must(backoff.Exponential(time.Second, time.Minute)), 5))
	slow := backoff.Must(backoff.NewRule(backoff.Must(backoff.Fixed(time.Hour)), 24))
	retrier, err := reboundriver.New(def, reboundriver.WithKindRule("webhook", slow))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(retrier.RuleFor("webhook"))
	fmt.Println(retrier.RuleFor("email"))
	fmt.Println(retrier.Rule())
	// Output:
	// fixed(1h) x 24
	// exponential(1s, 1m) x 5
	// exponential(1s, 1m) x 5
}
