package native

import (
	"context"
	"os"
	"strings"
	"testing"
)

// The checker on hand-written histories: each breaks one invariant (or
// none), so a checker that stopped seeing one would fail here.
func TestHistoryChecker(t *testing.T) {
	// ev builds an event at instant seq (time and sequence alike).
	ev := func(seq int64, kind, actor, job string, n int, f ...func(*hEvent)) *hEvent {
		e := &hEvent{Seq: seq, At: seq, Kind: kind, Actor: actor, Job: job, Attempt: n}
		for _, g := range f {
			g(e)
		}
		return e
	}
	call := func(from, to int64, op, job string, f ...func(*hEvent)) *hEvent {
		e := ev(to, "call", "o", job, 0, f...)
		e.Op, e.StartAt, e.StartSeq, e.OK = op, from, from, true
		return e
	}
	was := func(s string) func(*hEvent) { return func(e *hEvent) { e.Was = s } }
	out := func(s string) func(*hEvent) { return func(e *hEvent) { e.Outcome = s } }
	ret := func(s string) func(*hEvent) { return func(e *hEvent) { e.Ret = s } }
	done := func(n int) StoredJob { return StoredJob{State: StateCompleted, Attempts: n} }
	failed := func(n int) StoredJob { return StoredJob{State: StateFailed, Attempts: n} }
	enq := call(1, 2, "enqueue", "a")
	unsent := call(1, 2, "enqueue", "a")
	unsent.OK, unsent.Err = false, context.DeadlineExceeded.Error()
	ran := []*hEvent{enq, ev(3, "obsstart", "w", "a", 1), ev(4, "start", "w", "a", 1), ev(5, "end", "w", "a", 1, ret("nil")), ev(6, "obsend", "w", "a", 1, out("success"))}
	cases := []struct {
		name string
		evs  []*hEvent
		jobs map[string]StoredJob
		fifo string
		want string // the invariant broken, "" for none
	}{
		{"clean", ran, map[string]StoredJob{"a": done(1)}, "", ""},
		{"unsent, not stored", []*hEvent{unsent}, map[string]StoredJob{}, "", ""},
		{"unsent but stored", []*hEvent{unsent}, map[string]StoredJob{"a": done(1)}, "", "unsent-not-stored"},
		{"unsent but ran", []*hEvent{unsent, ev(3, "start", "w", "a", 1), ev(4, "end", "w", "a", 1, ret("nil"))}, map[string]StoredJob{}, "", "unsent-not-stored"},
		{"lost", ran, map[string]StoredJob{}, "", "acked-ends-terminal"},
		{"deleted, not lost", append(ran, call(7, 8, "delete", "a")), map[string]StoredJob{}, "", ""},
		{"two states told", ran, map[string]StoredJob{"a": failed(1)}, "", "observer-stored"},
		{"above the cap", []*hEvent{enq, ev(3, "start", "w", "a", 4), ev(4, "end", "w", "a", 4, ret("err"))}, map[string]StoredJob{"a": failed(3)}, "", "attempts-cap"},
		{"start after cancel", []*hEvent{enq, call(3, 4, "cancel", "a", was("active")), ev(5, "start", "w", "a", 1), ev(6, "end", "w", "a", 1, ret("nil"))},
			map[string]StoredJob{"a": {State: StateFailed, Attempts: 1, Cancelled: true}}, "", "start-after-cancel"},
		{"start after cancel and retry", []*hEvent{enq, call(3, 4, "cancel", "a", was("waiting")), call(5, 6, "retry", "a"), ev(7, "start", "w", "a", 1), ev(8, "end", "w", "a", 1, ret("nil")), ev(9, "obsend", "w", "a", 1, out("success"))},
			map[string]StoredJob{"a": done(1)}, "", ""},
		{"success past the deadline", []*hEvent{enq, ev(3, "start", "w", "a", 1, func(e *hEvent) { e.Deadline = 5 }), ev(5, "end", "w", "a", 1, ret("nil")), ev(6, "obsend", "w", "a", 1, out("success"))},
			map[string]StoredJob{"a": done(1)}, "", "deadline-success"},
		{"give-up owed", []*hEvent{enq, ev(3, "start", "w", "a", 1), ev(4, "end", "w", "a", 1, ret("err")), ev(5, "crash", "w", "", 0)},
			map[string]StoredJob{"a": failed(1)}, "", "giveup-owed"},
		{"give-up told", []*hEvent{enq, ev(3, "start", "w", "a", 1), ev(4, "end", "w", "a", 1, ret("err")), ev(5, "obsend", "w", "a", 1, out("permanent")), ev(6, "giveup", "w", "a", 1, out("permanent"))},
			map[string]StoredJob{"a": failed(1)}, "", ""},
		{"overlap", []*hEvent{enq, ev(3, "start", "w", "a", 1), ev(4, "start", "v", "a", 2), ev(5, "end", "w", "a", 1, ret("nil")), ev(6, "end", "v", "a", 2, ret("nil"))},
			map[string]StoredJob{"a": done(2)}, "", "no-overlap"},
		{"overlap after a crash", []*hEvent{enq, ev(3, "start", "w", "a", 1), ev(4, "crash", "w", "", 0), ev(5, "start", "v", "a", 2), ev(6, "end", "v", "a", 2, ret("nil"))},
			map[string]StoredJob{"a": done(2)}, "", ""},
		{"overlap after its deadline", []*hEvent{enq, ev(3, "start", "w", "a", 1, func(e *hEvent) { e.Deadline = 4 }), ev(5, "start", "v", "a", 2), ev(6, "end", "w", "a", 1, ret("nil")), ev(7, "end", "v", "a", 2, ret("nil"))},
			map[string]StoredJob{"a": done(2)}, "", ""},
		{"overlap on resume", []*hEvent{enq, ev(3, "start", "v", "a", 2), ev(5, "stall", "w", "", 0, func(e *hEvent) { e.StartAt = 1 }), ev(6, "start", "w", "a", 1), ev(7, "end", "v", "a", 2, ret("nil")), ev(8, "end", "w", "a", 1, ret("nil"))},
			map[string]StoredJob{"a": done(2)}, "", "no-overlap-stale-start"},
		// (Its context's end recorded late, after the retry started.)
		{"overlap after a cancel that cancelled its context", []*hEvent{enq, ev(3, "start", "w", "a", 1), call(4, 6, "cancel", "a", was("active")),
			call(8, 9, "retry", "a"), ev(10, "start", "v", "a", 2), ev(11, "ctxdone", "w", "a", 1, func(e *hEvent) { e.Err = ErrCancelled.Error() }),
			ev(12, "end", "w", "a", 1, ret("err")), ev(13, "end", "v", "a", 2, ret("nil"))},
			map[string]StoredJob{"a": done(2)}, "", ""},
		{"overlap after a cancel, its context live", []*hEvent{enq, ev(3, "start", "w", "a", 1), call(4, 6, "cancel", "a", was("active")),
			call(8, 9, "retry", "a"), ev(10, "start", "v", "a", 2), ev(11, "end", "w", "a", 1, ret("err")), ev(12, "end", "v", "a", 2, ret("nil"))},
			map[string]StoredJob{"a": done(2)}, "", "no-overlap-cancel"},
		{"retried while Cancel waited", []*hEvent{enq, ev(3, "start", "w", "a", 1), call(5, 6, "retry", "a"),
			ev(7, "start", "v", "a", 2), call(4, 9, "cancel", "a", was("active")), ev(10, "end", "w", "a", 1, ret("err")), ev(11, "end", "v", "a", 2, ret("nil"))},
			map[string]StoredJob{"a": done(2)}, "", ""},
		// (FireMs 2: due from 1 ms on; the start at 4 ns is early, unless a
		// RunNow, even one that failed, started before it.)
		{"early", []*hEvent{call(1, 2, "enqueue", "a", func(e *hEvent) { e.FireMs = 2 }), ev(4, "start", "w", "a", 1), ev(5, "end", "w", "a", 1, ret("nil")), ev(6, "obsend", "w", "a", 1, out("success"))},
			map[string]StoredJob{"a": done(1)}, "", "not-early"},
		{"early after RunNow", []*hEvent{call(1, 2, "enqueue", "a", func(e *hEvent) { e.FireMs = 2 }), call(3, 3, "run_now", "a", func(e *hEvent) { e.OK, e.Err = false, "i/o timeout" }),
			ev(4, "start", "w", "a", 1), ev(5, "end", "w", "a", 1, ret("nil")), ev(6, "obsend", "w", "a", 1, out("success"))},
			map[string]StoredJob{"a": done(1)}, "", ""},
		{"due at once", []*hEvent{call(1, 2, "enqueue", "a", func(e *hEvent) { e.FireMs = 1 }), ev(4, "start", "w", "a", 1), ev(5, "end", "w", "a", 1, ret("nil")), ev(6, "obsend", "w", "a", 1, out("success"))},
			map[string]StoredJob{"a": done(1)}, "", ""},
		{"told twice", append(ran, ev(7, "obsend", "v", "a", 1, out("success"))), map[string]StoredJob{"a": done(1)}, "", "observer-once"},
		{"fifo inversion", []*hEvent{
			call(1, 2, "enqueue", "f1", func(e *hEvent) { e.FireMs = 100 }), call(3, 4, "enqueue", "f2", func(e *hEvent) { e.FireMs = 100 }),
			ev(5, "start", "fw", "f2", 1), ev(6, "end", "fw", "f2", 1, ret("nil")), ev(7, "start", "fw", "f1", 1), ev(8, "end", "fw", "f1", 1, ret("nil"))},
			map[string]StoredJob{"f1": done(1), "f2": done(1)}, "q", "fifo-same-ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := check(c.evs, hFinal{jobs: c.jobs, ruleMax: 3, fifoQueue: c.fifo})
			got := summarize(vs)
			if c.want == "" && len(vs) > 0 {
				t.Fatalf("violations %v, want none", vs)
			}
			if c.want != "" {
				if _, ok := got[c.want]; !ok {
					t.Fatalf("violations %v, want %s", vs, c.want)
				}
			}
			for inv := range got {
				found := false
				for _, i := range invariants {
					found = found || i.name == inv
				}
				if !found {
					t.Errorf("violation %q is not among the documented invariants", inv)
				}
			}
		})
	}
	// Every invariant is named in docs/native.md's table.
	doc, err := os.ReadFile("../../docs/native.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range invariants {
		if !strings.Contains(string(doc), "`"+i.name+"`") {
			t.Errorf("invariant %s (%s) is not in docs/native.md's History tests table", i.name, i.what)
		}
	}
}
