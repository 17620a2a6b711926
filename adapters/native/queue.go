package native

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/internal/option"
)

// DefaultPrefix is the key prefix used unless [WithPrefix] says otherwise.
const DefaultPrefix = "rebound"

// DefaultMaxPayload is the payload limit used unless [WithMaxPayload] says
// otherwise: 1 MiB.
const DefaultMaxPayload = 1 << 20

// A Queue is one named queue on the user's Redis: the producer and the
// inspector, and what workers are built on. It is safe for concurrent use.
type Queue struct {
	rdb        redis.UniversalClient
	name       string
	prefix     string
	keys       keys
	maxPayload int
	keepFor    time.Duration
	keepMost   int
	failFor    time.Duration
	failMost   int
	group      enqueueGroup // Enqueue's group commit (enqueue_group.go)

	// A queue opened by its layout (OpenQueue, NewShardedQueue; shard.go)
	// holds the handle to it in lay, which the queue's shards hold in
	// their views; nil for a queue from NewQueue and for each shard. A
	// shard knows its index and every queue its hash tag; a shard's
	// enqueues carry the epoch of the layout it was built from (fenced).
	lay    *layoutHandle
	shard  int
	tag    string
	epoch  int64
	fenced bool
}

// A QueueOption configures a [Queue].
type QueueOption func(*Queue) error

// WithPrefix sets the prefix of every key of the queue (default
// [DefaultPrefix]). Keys are "<prefix>:{<queue>}:...". The prefix must not
// contain '{' or '}'.
func WithPrefix(prefix string) QueueOption {
	return func(q *Queue) error { q.prefix = prefix; return nil }
}

// WithMaxPayload sets the largest payload, in bytes, Enqueue accepts
// (default [DefaultMaxPayload]). n must be positive.
func WithMaxPayload(n int) QueueOption {
	return func(q *Queue) error {
		if n <= 0 {
			return fmt.Errorf("native: WithMaxPayload: %d is not positive, want a size in bytes > 0", n)
		}
		q.maxPayload = n
		return nil
	}
}

// WithCompletedRetention sets how long completed jobs are kept for the
// inspector (default 24h) and how many at most (default 10000; -1 for no
// count limit). Past either limit a completed job is deleted, record and
// all, by a later completion on the queue (up to 100 per completion), so a
// queue that stops completing jobs keeps its last ones.
func WithCompletedRetention(keepFor time.Duration, most int) QueueOption {
	return func(q *Queue) error {
		q.keepFor, q.keepMost = keepFor, most
		return checkRetention("WithCompletedRetention", keepFor, most)
	}
}

// WithFailedRetention sets how long jobs that failed for good (attempts
// exhausted or a permanent error) are kept for the inspector (default 7
// days, as River keeps discarded jobs) and how many at most (default 10000,
// as asynq keeps archived tasks; -1 for no count limit). Past either limit
// a failed job is deleted, record and all, by a later failure on the queue
// (up to 100 per failure), so a queue that stops failing jobs keeps its
// last ones.
func WithFailedRetention(keepFor time.Duration, most int) QueueOption {
	return func(q *Queue) error {
		q.failFor, q.failMost = keepFor, most
		return checkRetention("WithFailedRetention", keepFor, most)
	}
}

// checkRetention validates the retention option opt sets.
func checkRetention(opt string, keepFor time.Duration, most int) error {
	if keepFor < time.Millisecond {
		return fmt.Errorf("native: %s: keeping jobs for %s is below 1ms, want a positive duration", opt, keepFor)
	}
	if most < -1 {
		return fmt.Errorf("native: %s: keeping at most %d jobs is invalid, want >= 0, or -1 for no count limit", opt, most)
	}
	return nil
}

// NewQueue returns the queue called name on rdb, which may be a single
// node, Sentinel or Cluster client. Any name is allowed, braces and colons
// included; it is escaped inside the key's hash tag.
func NewQueue(rdb redis.UniversalClient, name string, opts ...QueueOption) (*Queue, error) {
	if isNil(rdb) {
		return nil, errors.New("native: redis client is nil, want a redis.UniversalClient")
	}
	q := &Queue{rdb: rdb, name: name, prefix: DefaultPrefix, maxPayload: DefaultMaxPayload,
		keepFor: 24 * time.Hour, keepMost: 10000, failFor: 7 * 24 * time.Hour, failMost: 10000}
	if err := option.Apply(q, opts); err != nil {
		return nil, err
	}
	if err := validateNames(q.prefix, name); err != nil {
		return nil, err
	}
	q.keys = newKeys(q.prefix, name)
	q.tag = escapeTag(name)
	return q, nil
}

// isNil reports whether rdb is nil or holds a nil pointer (a typed nil such
// as a nil *redis.Client), whose first command would panic.
func isNil(rdb redis.UniversalClient) bool {
	if rdb == nil {
		return true
	}
	v := reflect.ValueOf(rdb)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// Name returns the queue's name.
func (q *Queue) Name() string { return q.name }
