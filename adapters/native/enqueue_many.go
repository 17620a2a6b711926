package native

import (
	"context"
	"fmt"
)

// EnqueueParams is one job of a [Queue.EnqueueMany] call: what one
// [Queue.Enqueue] call takes, its payload and its options.
type EnqueueParams struct {
	// Payload is the job's payload, at most the queue's limit
	// ([WithMaxPayload]).
	Payload []byte
	// Options are the job's options, applied in order as Enqueue applies
	// them; nil ones are skipped.
	Options []EnqueueOption
}

// An EnqueueResult is what [Queue.EnqueueMany] did with one job.
type EnqueueResult struct {
	// ID is the job's ID: its [WithID], or the one generated for it. It is
	// set whatever Err says.
	ID string
	// Err is nil when the job was stored. It wraps [ErrJobExists] when the
	// ID was taken, by a job stored before the call or by an earlier job of
	// the same call, and nothing of this job was stored. When the call
	// itself failed (EnqueueMany's error is not nil), the jobs it could not
	// confirm carry that error: they may or may not be stored.
	Err error
}

// manyChunk is the most jobs one enqueue_many call carries, and
// manyChunkBytes the most bytes of arguments (every job's ID, payload,
// name, metadata and numbers; see preparedJob.size), though a call always
// carries at least one job: large inputs go in several calls, so that no
// call holds Redis for long.
const (
	manyChunk      = 1000
	manyChunkBytes = 4 << 20
)

// EnqueueMany adds jobs to the queue, each exactly as [Queue.Enqueue] would
// add it alone, in a few round trips: one atomic script call stores up to
// 1000 jobs and 4 MiB of what they carry (IDs, payloads, names and
// metadata; a job larger than that goes in a call of its own), and a
// longer input is sent in several calls, one after the other. It returns
// one result per job, in the order of jobs: its ID, and nil or an error
// wrapping [ErrJobExists] for a duplicate ID. Jobs that run at once join the wait list in the order
// given; delayed ones due in the same millisecond run in that order too.
//
// Every job is checked first, as Enqueue checks it (payload size, options),
// and one invalid job fails the whole call before anything is stored: the
// error names the job's index and wraps what Enqueue would have returned
// (a [*PayloadTooLargeError], say), and the results are nil; so does a nil
// ctx. A batch that is empty (or nil) stores nothing, costs no round trip
// and returns empty results.
//
// When Redis fails (or ctx ends) during the call, EnqueueMany stops and
// returns that error together with the results: the jobs of the calls that
// succeeded carry their outcomes, the others the error. Those may or may
// not be stored, so give jobs IDs ([WithID]) to make a retry of the whole
// batch safe: the ones already stored then come back as [ErrJobExists].
func (q *Queue) EnqueueMany(ctx context.Context, jobs []EnqueueParams) ([]EnqueueResult, error) {
	if ctx == nil {
		return nil, fmt.Errorf("native: EnqueueMany on queue %q: ctx is nil, want a context.Context (context.Background() for none)", q.name)
	}
	prepared := make([]preparedJob, len(jobs))
	for i, jp := range jobs {
		j, err := q.prepare(jp.Payload, jp.Options)
		if err != nil {
			return nil, fmt.Errorf("native: EnqueueMany on queue %q: job %d of %d is invalid, nothing was enqueued: %w", q.name, i, len(jobs), err)
		}
		prepared[i] = j
	}
	results := make([]EnqueueResult, len(jobs))
	for i, j := range prepared {
		results[i].ID = j.id
	}
	if q.lay != nil {
		return results, q.enqueueManyShards(ctx, prepared, results)
	}
	return results, q.storeMany(ctx, prepared, nil, results)
}

// storeMany stores jobs in enqueue_many calls of at most manyChunk jobs
// and manyChunkBytes, one after the other, and sets the result of each:
// job i's is results[at[i]] (results[i] when at is nil). When a call
// fails it stops and returns the error, which the results of that call's
// jobs and of every later one carry.
func (q *Queue) storeMany(ctx context.Context, prepared []preparedJob, at []int, results []EnqueueResult) error {
	idx := func(i int) int {
		if at == nil {
			return i
		}
		return at[i]
	}
	for start := 0; start < len(prepared); {
		end, size := start, 0
		for end < len(prepared) && end-start < manyChunk && (end == start || size+prepared[end].size() <= manyChunkBytes) {
			size += prepared[end].size()
			end++
		}
		chunk := prepared[start:end]
		keys, args := q.manyCall(len(chunk))
		for i := range chunk {
			args = chunk[i].appendArgs(args)
		}
		codes, err := scriptEnqueueMany.Run(ctx, q.rdb, keys, args...).Int64Slice()
		if err == nil && len(codes) != len(chunk) {
			err = fmt.Errorf("native: enqueue_many returned %d codes for %d jobs, want one per job", len(codes), len(chunk))
		}
		if err != nil {
			err = fmt.Errorf("native: EnqueueMany on queue %q: jobs %d to %d of %d%s: %w", q.name, idx(start), idx(end-1), len(results), q.shardNote(), err)
			for i := start; i < len(prepared); i++ {
				results[idx(i)].Err = err
			}
			return err
		}
		for i, code := range codes {
			if code == 0 {
				results[idx(start+i)].Err = q.exists(chunk[i].id)
			}
		}
		start = end
	}
	return nil
}
