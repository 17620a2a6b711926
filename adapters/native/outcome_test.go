package native

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/reboundtest"
)

// textBomb is an error whose Error method panics.
type textBomb struct{}

func (textBomb) Error() string { panic("no text for you") }

// typedNil is an error type whose nil pointer a handler may return by
// mistake (var e *typedNil; return e): a non-nil error holding nil.
type typedNil struct{ msg string }

func (e *typedNil) Error() string { return e.msg }

// An error whose Error method panics, a typed-nil error and a 1MB message
// each fail one attempt like any error: the worker lives and the stored
// message is readable, cut to MaxErrorBytes.
func TestHostileHandlerErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "hostileerr")
		rec := &reboundtest.Recorder{}
		huge := strings.Repeat("é", 1<<19) // 1MB of two-byte runes
		startWorker(t, q, fixedRule(t, time.Millisecond, 1), func(ctx context.Context, j *Job) error {
			switch j.ID {
			case "panics":
				return textBomb{}
			case "typed-nil":
				var e *typedNil
				return e
			case "huge":
				return errors.New(huge)
			}
			return errors.New("plain \xff bytes")
		}, WithObserver(rec))
		for _, c := range []struct{ id, want string }{
			{"panics", "native.textBomb (its Error method panicked: no text for you)"},
			{"typed-nil", "(*native.typedNil)(nil)"},
			{"huge", ""},
			{"plain", "plain \uFFFD bytes"},
		} {
			if _, err := q.Enqueue(ctx, nil, WithID(c.id)); err != nil {
				t.Fatal(err)
			}
			info := waitState(t, q, c.id, StateFailed, 5*time.Second)
			if info.Attempts != 1 {
				t.Errorf("job %s took %d attempts, want 1", c.id, info.Attempts)
			}
			if !utf8.ValidString(info.LastError) || len(info.LastError) > MaxErrorBytes {
				t.Errorf("job %s: stored error of %d bytes (valid UTF-8: %v), want at most %d of valid UTF-8",
					c.id, len(info.LastError), utf8.ValidString(info.LastError), MaxErrorBytes)
			}
			if c.want != "" && info.LastError != c.want {
				t.Errorf("job %s: stored error %q, want %q", c.id, info.LastError, c.want)
			}
			if c.id == "huge" && (!strings.HasPrefix(info.LastError, "éé") || !strings.HasSuffix(info.LastError, "bytes truncated]")) {
				t.Errorf("job huge: stored error %q...%q, want the message's start and a truncation note", info.LastError[:10], info.LastError[len(info.LastError)-30:])
			}
			evs := waitEnded(t, rec, c.id, 1)
			if r := evs[0].Result; r.Err == nil || r.Decision.Outcome != backoff.OutcomeExhausted {
				t.Errorf("job %s: observer told %+v, want a failed, exhausted attempt", c.id, r)
			}
		}
	})
}

func TestUnknownJob(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "unknown")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3))
		if _, err := q.Job(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Job(unknown) = %v, want ErrNotFound", err)
		}
		if c := (tc{t}).code(w.complete(ctx, "nope", "1", "")); c != -2 {
			t.Errorf("complete(unknown) = %d, want -2 (unknown job)", c)
		}
		if c := (tc{t}).code(w.fail(ctx, "nope", "1", backoff.Decision{Outcome: backoff.OutcomeRetry}, 3, "x", "", false)); c != -2 {
			t.Errorf("fail(unknown) = %d, want -2 (unknown job)", c)
		}
		_, err := w.finish("nope", nil, func(ctx context.Context) ([]any, error) { return w.complete(ctx, "nope", "1", "") })
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("finish(unknown) = %v, want ErrNotFound", err)
		}
		if n, err := q.Counts(ctx); err != nil || n != (Counts{}) {
			t.Errorf("counts after calls on an unknown job = %+v, %v; want all zero", n, err)
		}
	})
}

func TestDoubleCompletion(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "double")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3))
		id, err := q.Enqueue(ctx, []byte("p"))
		if err != nil {
			t.Fatal(err)
		}
		j, tok := reserveOne(t, w)
		if j.ID != id || j.Attempt != 1 || string(j.Payload) != "p" {
			t.Fatalf("reserved %+v, want job %s attempt 1 payload p", j, id)
		}
		if c := (tc{t}).code(w.complete(ctx, id, tok, "")); c != 1 {
			t.Fatalf("first complete = %d, want 1", c)
		}
		// The same call again (a retry whose first reply was lost) is told
		// it was applied and changes nothing.
		if c := (tc{t}).code(w.complete(ctx, id, tok, "")); c != 0 {
			t.Errorf("second complete with the same token = %d, want 0 (already applied)", c)
		}
		if c := (tc{t}).code(w.fail(ctx, id, tok, backoff.Decision{Outcome: backoff.OutcomeRetry}, 3, "late", "", false)); c != 0 {
			t.Errorf("fail after complete with the same token = %d, want 0", c)
		}
		if c := (tc{t}).code(w.complete(ctx, id, "999999", "")); c != -1 {
			t.Errorf("complete with a foreign token = %d, want -1 (stale)", c)
		}
		info, err := q.Job(ctx, id)
		if err != nil || info.State != StateCompleted || info.Attempts != 1 || info.LastError != "" {
			t.Errorf("after double completion: %+v, %v; want completed after 1 attempt, no error", info, err)
		}
		if n, _ := q.Counts(ctx); n != (Counts{Completed: 1}) {
			t.Errorf("counts %+v, want one completed job", n)
		}
	})
}

// An outcome batch sends every complete in one call: each job is checked
// and stored as if alone, and a script error on one job (an unreadable
// record) is that job's alone.
func TestCompleteBatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "batch")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3))
		for range 5 {
			if _, err := q.Enqueue(ctx, []byte("p")); err != nil {
				t.Fatal(err)
			}
		}
		jobs, tokens, _, err := w.reserve(5)
		if err != nil || len(jobs) != 5 {
			t.Fatalf("reserve(5) = %d jobs, %v; want 5", len(jobs), err)
		}
		// Job 2's record becomes unreadable to the scripts.
		if err := rdb.HSet(ctx, q.keys.jobs, jobs[2].ID, "garbage").Err(); err != nil {
			t.Fatal(err)
		}
		req := func(s *redis.Script, keys []string, args []any) *finishReq {
			return &finishReq{script: s, keys: keys, args: args, done: make(chan finishRes, 1)}
		}
		batch := []*finishReq{
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[0].ID, tokens[0], "")),
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[0].ID, tokens[0], "")), // the same call twice
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[1].ID, "999999", "")),  // a foreign token
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[2].ID, tokens[2], "")),
			req(scriptFail, w.failKeys(), w.failArgs(jobs[3].ID, tokens[3], backoff.Decision{Outcome: backoff.OutcomeRetry}, 3, "x", "", false)),
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[4].ID, tokens[4], "")),
		}
		w.sendBatch(batch)
		// 99: an error. Job 0 may answer 0 to its first call too: the
		// script error sends each job again alone, and job 0 was already
		// stored by the batch (retried calls are safe by their token).
		want := []int64{1, 0, -1, 99, 1, 1}
		for i, r := range batch {
			out := <-r.done
			switch {
			case i == 0 && out.err == nil && parseInt(out.res[0]) == 0:
			case want[i] == 99:
				if out.err == nil {
					t.Errorf("request %d on an unreadable record = %v, want an error", i, out.res)
				}
			case out.err != nil:
				t.Errorf("request %d: %v, want code %d", i, out.err, want[i])
			case parseInt(out.res[0]) != want[i]:
				t.Errorf("request %d = %v, want code %d", i, out.res, want[i])
			}
		}
		for _, c := range []struct {
			i     int
			state State
		}{{0, StateCompleted}, {1, StateActive}, {3, StateDelayed}, {4, StateCompleted}} {
			info, err := q.Job(ctx, jobs[c.i].ID)
			if err != nil || info.State != c.state {
				t.Errorf("job %d after the batch: %+v, %v; want state %v", c.i, info, err, c.state)
			}
		}
		// A clean batch: one call ends both jobs, and the repeat of a
		// call in the same batch is told it was applied.
		for range 2 {
			if _, err := q.Enqueue(ctx, []byte("p")); err != nil {
				t.Fatal(err)
			}
		}
		jobs, tokens, _, err = w.reserve(2)
		if err != nil || len(jobs) != 2 {
			t.Fatalf("reserve(2) = %d jobs, %v; want 2", len(jobs), err)
		}
		batch = []*finishReq{
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[0].ID, tokens[0], "")),
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[1].ID, tokens[1], "")),
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[1].ID, tokens[1], "")),
		}
		w.sendBatch(batch)
		for i, want := range []int64{1, 1, 0} {
			out := <-batch[i].done
			if out.err != nil || parseInt(out.res[0]) != want {
				t.Errorf("clean batch request %d = %v, %v; want code %d", i, out.res, out.err, want)
			}
		}
		if n, err := q.Counts(ctx); err != nil || n.Completed != 4 {
			t.Errorf("counts %+v, %v; want 4 completed", n, err)
		}
	})
}

// An outcome batch sends every fail in one call: each job is checked and
// stored as if alone (a repeat, a foreign token, an unknown job, a retry,
// an exhausted job, a permanent error), and a complete that keeps the stored
// metadata keeps it.
func TestFailBatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "failbatch")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3))
		for i := range 5 {
			opts := []EnqueueOption{WithMetadata(map[string]string{"k": "v"})}
			if i == 2 {
				opts = append(opts, WithMaxAttempts(1))
			}
			if _, err := q.Enqueue(ctx, []byte("p"), opts...); err != nil {
				t.Fatal(err)
			}
		}
		jobs, tokens, _, err := w.reserve(5)
		if err != nil || len(jobs) != 5 {
			t.Fatalf("reserve(5) = %d jobs, %v; want 5", len(jobs), err)
		}
		req := func(s *redis.Script, keys []string, args []any) *finishReq {
			return &finishReq{script: s, keys: keys, args: args, done: make(chan finishRes, 1)}
		}
		retry := backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: time.Hour}
		batch := []*finishReq{
			req(scriptFail, w.failKeys(), w.failArgs(jobs[0].ID, tokens[0], retry, 3, "first", keepMeta, false)),
			req(scriptFail, w.failKeys(), w.failArgs(jobs[0].ID, tokens[0], retry, 3, "first", keepMeta, false)), // the same call twice
			req(scriptFail, w.failKeys(), w.failArgs(jobs[1].ID, "999999", retry, 3, "x", keepMeta, false)),      // a foreign token
			req(scriptFail, w.failKeys(), w.failArgs("nope", "1", retry, 3, "x", keepMeta, false)),               // an unknown job
			req(scriptFail, w.failKeys(), w.failArgs(jobs[2].ID, tokens[2], retry, 1, "last", keepMeta, false)),
			req(scriptFail, w.failKeys(), w.failArgs(jobs[3].ID, tokens[3], backoff.Decision{Outcome: backoff.OutcomePermanent}, 3, "perm", keepMeta, false)),
			req(scriptComplete, w.completeKeys(), w.completeArgs(jobs[4].ID, tokens[4], keepMeta)),
		}
		w.sendBatch(batch)
		for i, want := range []int64{1, 0, -1, -2, 2, 2, 1} {
			out := <-batch[i].done
			if out.err != nil || parseInt(out.res[0]) != want {
				t.Errorf("request %d = %v, %v; want code %d", i, out.res, out.err, want)
			}
		}
		for _, c := range []struct {
			i       int
			state   State
			lastErr string
		}{{0, StateDelayed, "first"}, {1, StateActive, ""}, {2, StateFailed, "last"}, {3, StateFailed, "perm"}, {4, StateCompleted, ""}} {
			info, err := q.Job(ctx, jobs[c.i].ID)
			switch {
			case err != nil:
				t.Errorf("job %d after the batch: %v", c.i, err)
			case info.State != c.state || info.LastError != c.lastErr || info.Metadata["k"] != "v":
				t.Errorf("job %d after the batch: %+v; want state %v, last error %q, metadata kept", c.i, info, c.state, c.lastErr)
			}
		}
		if info, err := q.Job(ctx, jobs[0].ID); err == nil && info.NextFireAt.Before(time.Now().Add(59*time.Minute)) {
			t.Errorf("job 0 due at %v, want about an hour from now", info.NextFireAt)
		}
	})
}

// An attempt's end rewrites only what leads the record: the error (fail),
// the metadata (when the handler changed it) and the fixed fields. The
// name and payload, and whatever the call does not change, come through
// byte for byte, also when they hold the record's own separators.
func TestOutcomesKeepTheRestOfTheRecord(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "splice")
		w := idle(t, q, fixedRule(t, time.Millisecond, 5))
		payload := []byte("p|1:x,2:yy\x00\n")
		if _, err := q.Enqueue(ctx, payload, WithID("j"), WithName("n|a:m,e"), WithMetadata(map[string]string{"k": "v0"})); err != nil {
			t.Fatal(err)
		}
		check := func(step, lastErr string, meta map[string]string) {
			t.Helper()
			info, err := q.Job(ctx, "j")
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			if info.Name != "n|a:m,e" || string(info.Payload) != string(payload) || info.LastError != lastErr || fmt.Sprint(info.Metadata) != fmt.Sprint(meta) {
				t.Fatalf("%s: name %q payload %q error %q metadata %v; want %q %q %q %v",
					step, info.Name, info.Payload, info.LastError, info.Metadata, "n|a:m,e", payload, lastErr, meta)
			}
		}
		retry := backoff.Decision{Outcome: backoff.OutcomeRetry}
		steps := []struct {
			name, errText, meta string
			wantErr             string
			wantMeta            map[string]string
		}{
			{"fail keeping metadata", "boom: a|b", keepMeta, "boom: a|b", map[string]string{"k": "v0"}},
			{"fail with new metadata", "", `{"k":"v1"}`, "", map[string]string{"k": "v1"}},
			{"fail again", "third", keepMeta, "third", map[string]string{"k": "v1"}},
			{"complete with new metadata", "-", `{"k":"v2","z":"|:,"}`, "third", map[string]string{"k": "v2", "z": "|:,"}},
		}
		for _, s := range steps {
			jobs, tokens, _, err := w.reserve(1)
			if err != nil || len(jobs) != 1 {
				t.Fatalf("%s: reserve = %d jobs, %v", s.name, len(jobs), err)
			}
			var res []any
			if s.errText == "-" {
				res, err = w.complete(ctx, "j", tokens[0], s.meta)
			} else {
				res, err = w.fail(ctx, "j", tokens[0], retry, 5, s.errText, s.meta, false)
			}
			if err != nil || parseInt(res[0]) != 1 {
				t.Fatalf("%s: %v, %v", s.name, res, err)
			}
			check(s.name, s.wantErr, s.wantMeta)
			if s.errText != "-" {
				if _, err := q.Promote(ctx); err != nil {
					t.Fatal(err)
				}
				time.Sleep(2 * time.Millisecond)
				_, _ = q.Promote(ctx)
			}
		}
	})
}

// Completed and failed jobs are kept within their retention: past the
// count limit or the age limit the oldest go, record and all, trimmed by
// a later completion or failure.
func TestRetention(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  func(time.Duration, int) QueueOption
		end  func(t *testing.T, w *Worker, id, token string)
	}{
		{"completed", WithCompletedRetention, func(t *testing.T, w *Worker, id, token string) {
			if res, err := w.complete(context.Background(), id, token, keepMeta); err != nil || parseInt(res[0]) != 1 {
				t.Fatalf("complete %s: %v, %v", id, res, err)
			}
		}},
		{"failed", WithFailedRetention, func(t *testing.T, w *Worker, id, token string) {
			d := backoff.Decision{Outcome: backoff.OutcomePermanent}
			if res, err := w.fail(context.Background(), id, token, d, 3, "no", keepMeta, false); err != nil || parseInt(res[0]) != 2 {
				t.Fatalf("fail %s: %v, %v", id, res, err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := miniredis.RunT(t)
			start := time.UnixMilli(1_800_000_000_000)
			m.SetTime(start)
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			ctx := context.Background()
			run := func(q *Queue, ids ...string) {
				t.Helper()
				w := idle(t, q, fixedRule(t, time.Millisecond, 3))
				for _, id := range ids {
					if _, err := q.Enqueue(ctx, nil, WithID(id)); err != nil {
						t.Fatal(err)
					}
					jobs, tokens, _, err := w.reserve(1)
					if err != nil || len(jobs) != 1 {
						t.Fatalf("reserve %s: %d jobs, %v", id, len(jobs), err)
					}
					c.end(t, w, id, tokens[0])
				}
			}
			kept := func(q *Queue, want ...string) {
				t.Helper()
				set := q.keys.completed
				if c.name == "failed" {
					set = q.keys.failed
				}
				got, err := rdb.ZRange(ctx, set, 0, -1).Result()
				if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("%s set holds %v (%v), want %v", c.name, got, err, want)
				}
				for _, id := range []string{"a", "b", "c", "d", "e"} {
					_, err := q.Job(ctx, id)
					if slices.Contains(want, id) != (err == nil) {
						t.Fatalf("job %s: inspector says %v, kept %v", id, err, want)
					}
				}
			}

			// Count: at most 3 kept, the oldest dropped first.
			byCount := newQueue(t, rdb, "rbt", "count", c.opt(time.Hour, 3))
			for i, id := range []string{"a", "b", "c", "d", "e"} {
				m.SetTime(start.Add(time.Duration(i) * time.Millisecond))
				run(byCount, id)
			}
			kept(byCount, "c", "d", "e")

			// Age: older than 10ms goes at the next end on the queue.
			byAge := newQueue(t, rdb, "rbt", "age", c.opt(10*time.Millisecond, -1))
			m.SetTime(start)
			run(byAge, "a", "b")
			m.SetTime(start.Add(20 * time.Millisecond))
			kept(byAge, "a", "b") // nothing ended since: both stay
			run(byAge, "c")
			kept(byAge, "c")
		})
	}
}

// release puts a job back uncounted at the front of the due list, only for
// the lease's holder, and a repeat of the call changes nothing.
func TestRelease(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		ctx := context.Background()
		q := newQueue(t, rdb, prefix, "release")
		w := idle(t, q, fixedRule(t, time.Millisecond, 3))
		for _, id := range []string{"a", "b", "c"} {
			if _, err := q.Enqueue(ctx, nil, WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		jobs, tokens, _, err := w.reserve(2)
		if err != nil || len(jobs) != 2 {
			t.Fatalf("reserve(2) = %d jobs, %v", len(jobs), err)
		}
		release := func(id, token string) int64 {
			t.Helper()
			res, err := scriptRelease.Run(ctx, rdb, q.keys.releaseKeys, id, token, encodeMeta(map[string]string{"m": id})).Slice()
			if err != nil || len(res) != 1 {
				t.Fatalf("release %s: %v, %v", id, res, err)
			}
			return parseInt(res[0].([]any)[0])
		}
		for _, c := range []struct {
			id, token string
			want      int64
		}{{"b", tokens[1], 1}, {"a", tokens[0], 1}, {"a", tokens[0], 0}, {"b", "999999", -1}, {"nope", "1", -2}} {
			if got := release(c.id, c.token); got != c.want {
				t.Errorf("release(%s, %s) = %d, want %d", c.id, c.token, got, c.want)
			}
		}
		for _, id := range []string{"a", "b"} {
			info, err := q.Job(ctx, id)
			if err != nil || info.State != StateWaiting || info.Attempts != 0 || info.Metadata["m"] != id {
				t.Errorf("released job %s: %+v (%v); want waiting, 0 attempts, its metadata stored", id, info, err)
			}
		}
		// Each put back in front: a (released last), b, then c.
		jobs, _, _, err = w.reserve(3)
		if err != nil || len(jobs) != 3 || jobs[0].ID != "a" || jobs[1].ID != "b" || jobs[2].ID != "c" || jobs[0].Attempt != 1 {
			var got []string
			for _, j := range jobs {
				got = append(got, fmt.Sprintf("%s#%d", j.ID, j.Attempt))
			}
			t.Errorf("after release, reserved %v (%v); want a#1, b#1 (each released to the front), then c#1", got, err)
		}
	})
}
