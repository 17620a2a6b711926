package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	reboundasynq "github.com/rebound-go/rebound/adapters/asynq"
	"github.com/rebound-go/rebound/adapters/native"
	reboundriver "github.com/rebound-go/rebound/adapters/river"
	"github.com/rebound-go/rebound/backoff"
)

// Polling intervals, short so that retries due in milliseconds run
// promptly. Each engine's default is about a second or more.
const (
	asynqPoll = 50 * time.Millisecond // asynq's TaskCheckInterval and DelayedTaskCheckInterval
	riverPoll = 50 * time.Millisecond // River's FetchPollInterval
)

// engine is one job system running the jobs under the rule.
type engine interface {
	// name is the engine's column title.
	name() string
	// note is the footnote saying how the engine times a retry.
	note() string
	// enqueue adds the job called key and returns the engine's ID for it.
	enqueue(ctx context.Context, key string) (string, error)
	// start starts the engine's workers.
	start(ctx context.Context) error
	// final returns the state of the job with the given ID and whether the
	// engine will never run it again.
	final(ctx context.Context, id string) (state string, done bool, err error)
	// stop stops the workers.
	stop(ctx context.Context) error
}

// asynqEngine runs the jobs on asynq with reboundasynq plugged in.
type asynqEngine struct {
	rdb     redis.UniversalClient
	queue   string
	precise bool
	retrier *reboundasynq.Retrier
	client  *asynq.Client
	insp    *asynq.Inspector
	srv     *asynq.Server
	rec     *recorder
	stderr  io.Writer
}

const taskType = "quickstart"

func newAsynq(rdb redis.UniversalClient, queue string, rule backoff.Rule, precise bool, rec *recorder, stderr io.Writer) (*asynqEngine, error) {
	opts := []reboundasynq.Option{
		reboundasynq.WithObserver(rec),
		reboundasynq.WithErrorHandler(func(err error) { fmt.Fprintln(stderr, "asynq:", err) }),
	}
	if precise {
		opts = append(opts, reboundasynq.WithPrecise())
	}
	r, err := reboundasynq.New(rule, opts...)
	if err != nil {
		return nil, err
	}
	return &asynqEngine{
		rdb: rdb, queue: queue, precise: precise, retrier: r, rec: rec, stderr: stderr,
		client: asynq.NewClientFromRedisClient(rdb),
		insp:   asynq.NewInspectorFromRedisClient(rdb),
	}, nil
}

func (e *asynqEngine) name() string { return "asynq" }

func (e *asynqEngine) note() string {
	if e.precise {
		return "asynq keeps retry times in whole seconds; with WithPrecise the exact time rides in a task header and the middleware waits out the rest of the second."
	}
	return "asynq keeps retry times in whole seconds; rebound rounds each fire time up to the next second so no retry runs early (-precise: to the millisecond)."
}

func (e *asynqEngine) enqueue(ctx context.Context, key string) (string, error) {
	// The task ID is the job's key, so the middleware's jitter key
	// (the task ID) is the same key the other engines use. The header
	// lets precise mode store its exact fire time.
	task := asynq.NewTaskWithHeaders(taskType, []byte(key), map[string]string{"job": key})
	info, err := e.client.EnqueueContext(ctx, task,
		asynq.Queue(e.queue), asynq.TaskID(key), e.retrier.MaxRetry(), asynq.Retention(time.Hour))
	if err != nil {
		return "", fmt.Errorf("asynq: enqueue %s: %w", key, err)
	}
	return info.ID, nil
}

func (e *asynqEngine) start(context.Context) error {
	e.srv = asynq.NewServerFromRedisClient(e.rdb, asynq.Config{
		Concurrency:              10,
		Queues:                   map[string]int{e.queue: 1},
		RetryDelayFunc:           e.retrier.RetryDelay,
		TaskCheckInterval:        asynqPoll,
		DelayedTaskCheckInterval: asynqPoll,
		ShutdownTimeout:          5 * time.Second,
		LogLevel:                 asynq.ErrorLevel, // asynq warns "Retry exhausted" for every archived task
		Logger:                   asynqLogger{e.stderr},
	})
	mux := asynq.NewServeMux()
	mux.Use(e.retrier.Middleware)
	mux.HandleFunc(taskType, func(ctx context.Context, t *asynq.Task) error {
		n, _ := asynq.GetRetryCount(ctx)
		return e.rec.handle("asynq", string(t.Payload()), n+1)
	})
	if err := e.srv.Start(mux); err != nil {
		return fmt.Errorf("asynq: start server: %w", err)
	}
	return nil
}

func (e *asynqEngine) final(_ context.Context, id string) (string, bool, error) {
	info, err := e.insp.GetTaskInfo(e.queue, id)
	if err != nil {
		return "", false, fmt.Errorf("asynq: task %s: %w", id, err)
	}
	done := info.State == asynq.TaskStateCompleted || info.State == asynq.TaskStateArchived
	return info.State.String(), done, nil
}

func (e *asynqEngine) stop(context.Context) error {
	if e.srv != nil {
		e.srv.Shutdown()
	}
	return nil
}

// asynqLogger writes asynq's log lines to w.
type asynqLogger struct{ w io.Writer }

func (l asynqLogger) log(level string, args []any) {
	fmt.Fprintf(l.w, "asynq: %s: %s", level, fmt.Sprintln(args...))
}

func (l asynqLogger) Debug(args ...any) { l.log("debug", args) }
func (l asynqLogger) Info(args ...any)  { l.log("info", args) }
func (l asynqLogger) Warn(args ...any)  { l.log("warn", args) }
func (l asynqLogger) Error(args ...any) { l.log("error", args) }
func (l asynqLogger) Fatal(args ...any) { l.log("fatal", args) }

// quickArgs are the River jobs' arguments: the job's key.
type quickArgs struct {
	Key string `json:"key"`
}

// Kind implements river.JobArgs.
func (quickArgs) Kind() string { return "quickstart" }

// quickWorker is the River worker of quickArgs jobs.
type quickWorker struct {
	river.WorkerDefaults[quickArgs]
	rec *recorder
}

// Work implements river.Worker.
func (w *quickWorker) Work(_ context.Context, job *river.Job[quickArgs]) error {
	return w.rec.handle("river", job.Args.Key, job.Attempt)
}

// keyByArgs keys a River job's jitter by its key rather than River's
// numeric job ID, so its schedule matches the other engines'.
func keyByArgs(job *rivertype.JobRow) backoff.Source {
	var args quickArgs
	if err := json.Unmarshal(job.EncodedArgs, &args); err != nil || args.Key == "" {
		return backoff.Key(strconv.FormatInt(job.ID, 10))
	}
	return backoff.Key(args.Key)
}

// riverEngine runs the jobs on River with reboundriver plugged in, on any
// River driver (SQLite or PostgreSQL).
type riverEngine[TTx any] struct {
	client *river.Client[TTx]
}

func newRiver[TTx any](driver riverdriver.Driver[TTx], schema string, rule backoff.Rule, rec *recorder, stderr io.Writer) (*riverEngine[TTx], error) {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := reboundriver.New(rule,
		reboundriver.WithObserver(rec),
		reboundriver.WithKey(keyByArgs),
		reboundriver.WithErrorHandler(func(err error) { logger.Error("reboundriver: internal error", "err", err) }))
	if err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &quickWorker{rec: rec})
	client, err := river.NewClient(driver, &river.Config{
		RetryPolicy:       r,
		Plugins:           []rivertype.Plugin{r},
		Workers:           workers,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 10}},
		FetchPollInterval: riverPoll,
		FetchCooldown:     riverPoll,
		Schema:            schema,
		Logger:            logger,
	})
	if err != nil {
		return nil, fmt.Errorf("river: new client: %w", err)
	}
	return &riverEngine[TTx]{client: client}, nil
}

func (e *riverEngine[TTx]) name() string { return "river" }

func (e *riverEngine[TTx]) note() string {
	return fmt.Sprintf("river picks a due retry up on its next fetch poll: every %s here, every 1s by default.", riverPoll)
}

func (e *riverEngine[TTx]) enqueue(ctx context.Context, key string) (string, error) {
	res, err := e.client.Insert(ctx, quickArgs{Key: key}, nil)
	if err != nil {
		return "", fmt.Errorf("river: insert %s: %w", key, err)
	}
	return strconv.FormatInt(res.Job.ID, 10), nil
}

func (e *riverEngine[TTx]) start(ctx context.Context) error {
	if err := e.client.Start(ctx); err != nil {
		return fmt.Errorf("river: start client: %w", err)
	}
	return nil
}

func (e *riverEngine[TTx]) final(ctx context.Context, id string) (string, bool, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return "", false, fmt.Errorf("river: job ID %q: %w", id, err)
	}
	job, err := e.client.JobGet(ctx, n)
	if err != nil {
		return "", false, fmt.Errorf("river: job %s: %w", id, err)
	}
	switch job.State {
	case rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
		return string(job.State), true, nil
	}
	return string(job.State), false, nil
}

func (e *riverEngine[TTx]) stop(ctx context.Context) error {
	return e.client.Stop(ctx)
}

// nativeEngine runs the jobs on rebound's own Redis queue.
type nativeEngine struct {
	q *native.Queue
	w *native.Worker
}

func newNative(rdb redis.UniversalClient, prefix string, rule backoff.Rule, rec *recorder, stderr io.Writer) (*nativeEngine, error) {
	q, err := native.NewQueue(rdb, "quickstart", native.WithPrefix(prefix))
	if err != nil {
		return nil, err
	}
	w, err := native.NewWorker(q, rule,
		func(_ context.Context, j *native.Job) error { return rec.handle("native", j.ID, j.Attempt) },
		native.WithObserver(rec),
		native.WithErrorHandler(func(err error) { fmt.Fprintln(stderr, "native:", err) }))
	if err != nil {
		return nil, err
	}
	return &nativeEngine{q: q, w: w}, nil
}

func (e *nativeEngine) name() string { return "native" }

func (e *nativeEngine) note() string {
	return "native (rebound's own Redis queue) sleeps on its own timer until the next retry is due: no polling, millisecond fire times."
}

func (e *nativeEngine) enqueue(ctx context.Context, key string) (string, error) {
	// The job ID is the key: the worker keys jitter by the job ID.
	id, err := e.q.Enqueue(ctx, []byte(key), native.WithID(key), native.WithName("quickstart"))
	if err != nil {
		return "", fmt.Errorf("native: enqueue %s: %w", key, err)
	}
	return id, nil
}

func (e *nativeEngine) start(context.Context) error { return e.w.Start() }

func (e *nativeEngine) final(ctx context.Context, id string) (string, bool, error) {
	info, err := e.q.Job(ctx, id)
	if err != nil {
		return "", false, fmt.Errorf("native: job %s: %w", id, err)
	}
	done := info.State == native.StateCompleted || info.State == native.StateFailed
	return info.State.String(), done, nil
}

func (e *nativeEngine) stop(ctx context.Context) error { return e.w.Shutdown(ctx) }
