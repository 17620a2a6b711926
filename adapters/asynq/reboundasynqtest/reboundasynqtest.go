// Package reboundasynqtest helps a user's own tests check the retry story of
// an asynq handler under a rebound rule: "this task failed attempt 2 and its
// next run is at 00:00:03.750".
//
// The guide to testing, with an example of each kit: https://github.com/rebound-go/rebound/blob/main/docs/testing.md
//
// asynq offers no way to build a handler's context with task metadata (ID,
// retry count) outside a server, and reads the wall clock itself. So a
// [Server] is a real asynq server on an in-process miniredis, with a
// [reboundasynq.Retrier] installed as that package documents (RetryDelay as
// the RetryDelayFunc, the middleware outermost, tasks built by NewTask):
// each attempt runs through asynq's own processor, and what the Retrier
// reports goes to a [reboundtest.Recorder].
//
// Run the test inside testing/synctest's bubble (synctest.Test) and the
// server runs on the bubble's fake clock: retries a minute apart take no
// real time, and fire times are exact instants the test can compare
// (the bubble's clock starts at 2000-01-01 00:00:00 UTC). Outside a bubble
// it works on the real clock, polling every 100ms.
//
//	synctest.Test(t, func(t *testing.T) {
//		s := reboundasynqtest.NewServer(t, nil, asynq.HandlerFunc(sendEmail), rule)
//		id := s.Enqueue(t, "email:send", payload)
//		ev := s.Attempt(t, id, 1)
//		// ev.Result.Outcome() == "retry", ev.Result.FireAt == the next run
//		s.Attempt(t, id, 2)
//		// s.Recorder.Story(id) == "1 retry 1s\n2 success"
//	})
package reboundasynqtest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	reboundasynq "github.com/rebound-go/rebound/adapters/asynq"
	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/reboundtest"
)

// Queue is the asynq queue a Server serves and enqueues on.
const Queue = "default"

// pollInterval is asynq's TaskCheckInterval and DelayedTaskCheckInterval in
// a Server, and how often its waits look.
const pollInterval = 100 * time.Millisecond

// Server is an asynq server on an in-process miniredis, running one
// handler behind a Retrier.
type Server struct {
	// Retrier is the Retrier installed in the server.
	Retrier *reboundasynq.Retrier
	// Recorder is the Retrier's observer and give-up hook, unless the
	// options given to NewServer name others.
	Recorder *reboundtest.Recorder
	// Client enqueues on the server's miniredis.
	Client *asynq.Client
	// Inspector reads the server's tasks as asynq stored them.
	Inspector *asynq.Inspector
	// WaitLimit bounds how long Attempt and WaitState wait before they
	// fail the test: an hour by default, which in a synctest bubble takes
	// no real time. Set it lower for a test on the real clock.
	WaitLimit time.Duration

	srv *asynq.Server
	mr  *miniredis.Miniredis
	rdb *redis.Client
}

// NewServer starts a server that runs handler for every task type, behind a
// Retrier for rule and opts, and stops it when tb's test ends. config is
// the user's asynq configuration, or nil; a copy is used, with the
// Retrier's RetryDelay as RetryDelayFunc, Queues set to [Queue], both
// polling intervals at 100ms, a one-second ShutdownTimeout, and asynq's
// own logging off unless config sets a LogLevel. The Retrier reports to
// Recorder and knows config's IsFailure (WithObserver, WithGiveUp and
// WithIsFailure come first, so opts may name others).
func NewServer(tb testing.TB, config *asynq.Config, handler asynq.Handler, rule backoff.Rule, opts ...reboundasynq.Option) *Server {
	tb.Helper()
	cfg := asynq.Config{}
	if config != nil {
		cfg = *config
	}
	rec := &reboundtest.Recorder{}
	first := []reboundasynq.Option{reboundasynq.WithObserver(rec), reboundasynq.WithGiveUp(rec.GiveUp), reboundasynq.WithIsFailure(cfg.IsFailure)}
	r, err := reboundasynq.New(rule, append(first, opts...)...)
	if err != nil {
		tb.Fatalf("reboundasynqtest: %v", err)
	}
	mr := miniredis.NewMiniRedis()
	mr.ClockTTL(true) // asynq relies on keys expiring
	rdb := redis.NewClient(&redis.Options{
		Addr:   "127.0.0.1:1", // never dialled (an IP, so never resolved): the Dialer connects in-process
		Dialer: func(context.Context, string, string) (net.Conn, error) { return mr.Dial() },
	})
	cfg.RetryDelayFunc = r.RetryDelay
	cfg.Queues = map[string]int{Queue: 1}
	cfg.TaskCheckInterval = pollInterval
	cfg.DelayedTaskCheckInterval = pollInterval
	cfg.ShutdownTimeout = time.Second
	if cfg.LogLevel == 0 {
		cfg.LogLevel = asynq.FatalLevel
	}
	s := &Server{
		Retrier:   r,
		Recorder:  rec,
		Client:    asynq.NewClientFromRedisClient(rdb),
		Inspector: asynq.NewInspectorFromRedisClient(rdb),
		WaitLimit: time.Hour,
		srv:       asynq.NewServerFromRedisClient(rdb, cfg),
		mr:        mr,
		rdb:       rdb,
	}
	if err := s.srv.Start(r.Middleware(handler)); err != nil {
		s.close()
		tb.Fatalf("reboundasynqtest: start asynq server: %v", err)
	}
	tb.Cleanup(s.close)
	return s
}

func (s *Server) close() {
	s.srv.Shutdown()
	_ = s.Client.Close()
	_ = s.rdb.Close()
	s.mr.Close()
}

// Enqueue enqueues a task of the given type and payload, built by the
// Retrier's NewTask (headers, and the MaxRetry of its type's rule), kept
// for an hour once done so that its final state can be read, and returns
// its ID. opts are asynq's options; they replace NewTask's.
func (s *Server) Enqueue(tb testing.TB, typename string, payload []byte, opts ...asynq.Option) string {
	tb.Helper()
	opts = append([]asynq.Option{asynq.Retention(time.Hour)}, opts...)
	info, err := s.Client.Enqueue(s.Retrier.NewTask(typename, payload, opts...))
	if err != nil {
		tb.Fatalf("reboundasynqtest: enqueue %s: %v", typename, err)
	}
	return info.ID
}

// Attempt waits until attempt n (1-based) of the task with the given ID
// has ended and the Retrier has reported it, and returns it as the
// Recorder has it: its outcome, and for a retry its delay and the time the
// task runs again (Result.FireAt). An attempt cut short by a server
// shutdown and run again keeps its number; Attempt returns the last run
// with that number that ended. It fails tb if the attempt has not ended
// within WaitLimit.
func (s *Server) Attempt(tb testing.TB, id string, n int) reboundtest.Event {
	tb.Helper()
	var found reboundtest.Event
	s.wait(tb, func() bool {
		for _, e := range s.Recorder.Job(id) {
			if e.Attempt.Number == n && e.Ended {
				found = e
			}
		}
		return found.Ended
	}, "attempt %d of task %s to end", n, id)
	return found
}

// Task returns the task as asynq stores it now: its state, retry count,
// last error, and the time asynq runs it next (whole seconds: in precise
// mode the middleware then waits for the exact Result.FireAt).
func (s *Server) Task(tb testing.TB, id string) *asynq.TaskInfo {
	tb.Helper()
	info, err := s.Inspector.GetTaskInfo(Queue, id)
	if err != nil {
		tb.Fatalf("reboundasynqtest: task %s: %v", id, err)
	}
	return info
}

// WaitState waits until the task is in the given state and returns it as
// asynq stores it. It fails tb if that has not happened within WaitLimit.
func (s *Server) WaitState(tb testing.TB, id string, state asynq.TaskState) *asynq.TaskInfo {
	tb.Helper()
	var info *asynq.TaskInfo
	s.wait(tb, func() bool {
		var err error
		info, err = s.Inspector.GetTaskInfo(Queue, id)
		return err == nil && info.State == state
	}, "task %s to be %s", id, state)
	return info
}

// wait polls cond until it holds, failing tb after WaitLimit.
func (s *Server) wait(tb testing.TB, cond func() bool, format string, args ...any) {
	tb.Helper()
	deadline := time.Now().Add(s.WaitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("reboundasynqtest: still waiting after %v for "+format, append([]any{s.WaitLimit}, args...)...)
		}
		time.Sleep(pollInterval / 10)
	}
}
