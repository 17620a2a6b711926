package native

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rebound-go/rebound/internal/option"
)

// enqueueOptions collects what an [EnqueueOption] sets.
type enqueueOptions struct {
	id          string
	name        string
	delay       time.Duration
	maxAttempts int
	meta        map[string]string
}

// An EnqueueOption configures one [Queue.Enqueue] call.
type EnqueueOption func(*enqueueOptions) error

// WithID gives the job its own ID instead of a generated one. Enqueueing
// an ID that already exists fails with [ErrJobExists], which makes
// enqueueing idempotent. The ID must not be empty.
func WithID(id string) EnqueueOption {
	return func(o *enqueueOptions) error {
		if id == "" {
			return errors.New("native: WithID: the ID is empty, want a non-empty ID, or no WithID for a generated one")
		}
		o.id = id
		return nil
	}
}

// WithName sets the job's name (its kind), reported to observers.
func WithName(name string) EnqueueOption {
	return func(o *enqueueOptions) error { o.name = name; return nil }
}

// WithDelay makes the job wait d before its first run. The fire time is
// taken from the Redis server's clock, rounded up to the millisecond. A
// delay above [MaxDelay] is clamped to it.
func WithDelay(d time.Duration) EnqueueOption {
	return func(o *enqueueOptions) error {
		if d < 0 {
			return fmt.Errorf("native: WithDelay: %s is negative, want >= 0", d)
		}
		o.delay = clampDelay(d)
		return nil
	}
}

// WithMaxAttempts overrides the worker's rule for this job: n is the total
// number of runs, including the first. n must be at least 1.
func WithMaxAttempts(n int) EnqueueOption {
	return func(o *enqueueOptions) error {
		if n < 1 {
			return fmt.Errorf("native: WithMaxAttempts: %d is below 1, want the total number of runs (>= 1)", n)
		}
		o.maxAttempts = n
		return nil
	}
}

// WithMetadata sets the job's initial metadata, the string map that travels
// with the job from attempt to attempt (observers keep trace context in it).
// Keys and values may hold any bytes, UTF-8 or not: they are stored and
// handed back exactly as given.
func WithMetadata(m map[string]string) EnqueueOption {
	return func(o *enqueueOptions) error {
		o.meta = make(map[string]string, len(m))
		for k, v := range m {
			o.meta[k] = v
		}
		return nil
	}
}

// Enqueue adds a job with payload to the queue and returns its ID (without
// [WithID], 128 random bits as 22 characters of unpadded base64url). Without
// options the job runs as soon as a worker is free, under the worker's rule.
// To add many jobs at once, [Queue.EnqueueMany] stores up to 1000 of them
// in one round trip.
//
// Concurrent calls on one Queue share round trips (group commit): a call
// that finds none of the queue's in flight sends its job at once, alone;
// calls made meanwhile wait for it to return, then go together in one
// script call (up to 1000 jobs and 4 MiB, as EnqueueMany sends them), in
// the order they were made. Each still gets its own result: its ID, or
// [ErrJobExists] when the ID was taken, by a stored job or by a call before
// it in the same script call. Bad input (a payload above the limit, an
// invalid option) fails only its own call, before anything is sent.
//
// ctx bounds the call. When it ends while the call waits for a round
// trip, the job is not sent, nothing is stored, and Enqueue returns
// ctx.Err() itself. Once the job is sent, the call waits for Redis's
// answer whatever ctx does (the client's read timeout bounds it) and
// reports what was stored; only when the ctx of every call sharing that
// round trip has ended is it abandoned, where the client still can (before
// it is written, or at the latest of those calls' deadlines), and then
// Enqueue returns an error wrapping ctx.Err() that says the job may or may
// not be stored. A nil ctx
// is an error. The queue runs no goroutine of its own for this, so there
// is nothing to close: a call in flight when the client is closed returns
// the client's error.
func (q *Queue) Enqueue(ctx context.Context, payload []byte, opts ...EnqueueOption) (string, error) {
	if ctx == nil {
		return "", fmt.Errorf("native: Enqueue on queue %q: ctx is nil, want a context.Context (context.Background() for none)", q.name)
	}
	j, err := q.prepare(payload, opts)
	if err != nil {
		return "", err
	}
	code, err := q.enqueueOne(ctx, j)
	if err != nil {
		return "", err
	}
	if code == 0 {
		return "", q.exists(j.id)
	}
	return j.id, nil
}

// enqueueOne stores j on its shard and returns the script's code (0: the
// ID is taken). A shard that refuses the queue's layout as stale (a change
// of N) stored nothing: the queue reads the layout again and sends j where
// the new layout puts it.
func (q *Queue) enqueueOne(ctx context.Context, j preparedJob) (int64, error) {
	if q.lay == nil {
		return q.enqueueGrouped(ctx, j)
	}
	v := q.view()
	for round := 0; ; round++ {
		s := v.cur[shardIndex(j.id, len(v.cur))]
		if v.prev != nil { // a change drains: WithID looks on the ID's old shard too
			res := make([]EnqueueResult, 1)
			kept, _, err := s.dedupeAcross(ctx, v, []preparedJob{j}, []int{0}, res)
			if err != nil {
				return 0, err
			}
			if len(kept) == 0 {
				return 0, nil // the previous layout's shard holds the ID
			}
		}
		code, err := s.enqueueGrouped(ctx, j)
		if !isStale(err) || round == staleRetries {
			return code, err
		}
		if v, err = q.reload(ctx); err != nil {
			return 0, err
		}
	}
}

// A preparedJob is one job to enqueue, checked and ready for the enqueue
// scripts: what [Queue.Enqueue] and [Queue.EnqueueMany] share.
type preparedJob struct {
	id, name, meta string
	payload        []byte
	maxAttempts    int
	delayUs        int64
}

// prepare checks payload against the queue's limit, applies opts in order
// (a nil one is skipped) and gives the job its ID.
func (q *Queue) prepare(payload []byte, opts []EnqueueOption) (preparedJob, error) {
	if len(payload) > q.maxPayload {
		return preparedJob{}, &PayloadTooLargeError{Size: len(payload), Limit: q.maxPayload}
	}
	var o enqueueOptions
	if err := option.Apply(&o, opts); err != nil {
		return preparedJob{}, err
	}
	if o.id == "" {
		o.id = newID()
	}
	return preparedJob{id: o.id, name: o.name, meta: encodeMeta(o.meta), payload: payload,
		maxAttempts: o.maxAttempts, delayUs: ceilMicros(o.delay)}, nil
}

// argCount is how many script arguments one job takes (see args).
const argCount = 6

// args are the job's arguments to the enqueue_delayed and enqueue_many
// scripts, in their order: ID, payload, name, max attempts (0: the
// worker's rule), delay in microseconds, packed metadata.
func (j *preparedJob) args() []any {
	return j.appendArgs(make([]any, 0, argCount))
}

// size is how many bytes the job's arguments (see args) carry: its
// strings, and at most 20 digits for each number.
func (j *preparedJob) size() int {
	return len(j.id) + len(j.payload) + len(j.name) + len(j.meta) + 2*20
}

// appendArgs appends the job's arguments (see args) to dst.
func (j *preparedJob) appendArgs(dst []any) []any {
	return append(dst, j.id, j.payload, j.name, j.maxAttempts, j.delayUs, j.meta)
}

// texts are the job's metadata and name as its record holds them, each led
// by its byte length and ':' (see lua/lib/rec_new.lua), for the enqueue
// script.
func (j *preparedJob) texts() string {
	return strconv.Itoa(len(j.meta)) + ":" + j.meta + strconv.Itoa(len(j.name)) + ":" + j.name
}

// exists is the error of a job whose ID the queue already holds.
func (q *Queue) exists(id string) error {
	return fmt.Errorf("%w (queue %q, ID %q)", ErrJobExists, q.name, id)
}

// newID returns a random 128-bit ID in unpadded base64url: 22 characters
// (hex would take 32), which matters because an ID is stored twice per
// waiting job, as the jobs hash field and as the delayed-set member.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// MaxDelay is the longest delay the queue schedules: 100 years of 365
// days. A longer one, from [WithDelay] or a retry (the policy's delay or a
// [backoff.RetryAfter] hint, up to the largest time.Duration), is clamped
// to it: the job waits MaxDelay, never less, and never runs at once by
// overflow. Within it every fire time is kept to the millisecond (see the
// package doc's Keys).
const MaxDelay = 100 * 365 * 24 * time.Hour

// clampDelay bounds d to [0, MaxDelay].
func clampDelay(d time.Duration) time.Duration {
	return min(max(d, 0), MaxDelay)
}

// ceilMicros rounds d, clamped to [0, MaxDelay], up to whole microseconds,
// the unit delays are sent to the scripts in.
func ceilMicros(d time.Duration) int64 {
	d = clampDelay(d)
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++
	}
	return us
}
