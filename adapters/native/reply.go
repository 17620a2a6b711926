package native

import (
	"fmt"
	"strconv"
)

// refusal turns an outcome script's reply res for job id into the error it
// means, if any: err as it is, ErrLeaseLost for a stale lease, ErrNotFound
// for an unknown job.
func (w *Worker) refusal(id string, res []any, err error) error {
	if err != nil {
		return err
	}
	switch parseInt(res[0]) {
	case -1:
		return fmt.Errorf("%w (queue %q, job %q)", ErrLeaseLost, w.q.name, id)
	case -2:
		return fmt.Errorf("%w (queue %q, job %q)", ErrNotFound, w.q.name, id)
	}
	return nil
}

// oneReply unwraps the reply of a complete or fail call that ended one
// job: the scripts answer with one reply per job.
func oneReply(res []any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	if len(res) != 1 {
		return nil, fmt.Errorf("native: outcome script returned %d replies for one job, want 1", len(res))
	}
	return jobReply(res[0])
}

// jobReply reads one job's reply out of a complete or fail call's replies.
func jobReply(v any) ([]any, error) {
	r, ok := v.([]any)
	if !ok || len(r) == 0 {
		return nil, fmt.Errorf("native: outcome script returned %v for a job, want {code, ...}", v)
	}
	return r, nil
}

// parseInt reads an integer from a script reply: an integer reply, or a
// number the script sent as a string (scores and times beyond 2^31); 0 for
// anything else.
func parseInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		if x == "" {
			return 0 // an unset field: no error to build and drop
		}
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// replyString reads a string from a script reply without fmt's reflection
// for the common case: Redis bulk strings arrive as Go strings.
func replyString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
