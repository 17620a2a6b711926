package reboundotel_test

import (
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// story is what one job's attempts must look like in the recorded spans,
// whatever adapter ran it.
type story struct {
	system, queue, jobID string
	maxAttempts          int
	outcomes             []string     // per run: success, retry, exhausted, permanent, snoozed, interrupted
	numbers              []int        // per run: its attempt number; nil means 1, 2, 3...
	producer             trace.SpanID // the producer span every attempt links to; zero if none
}

// number is the attempt number of the i-th run (0-based).
func (st story) number(i int) int {
	if st.numbers != nil {
		return st.numbers[i]
	}
	return i + 1
}

// jobSpans returns the attempt spans of jobID, in attempt order.
func jobSpans(rec *tracetest.SpanRecorder, jobID string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == "messaging.message.id" && kv.Value.AsString() == jobID {
				out = append(out, s)
			}
		}
	}
	// Attempts end in order, but sort by attempt number to be exact.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && attemptOf(out[j]) < attemptOf(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func attemptOf(s sdktrace.ReadOnlySpan) int64 {
	for _, kv := range s.Attributes() {
		if kv.Key == "rebound.job.attempt" {
			return kv.Value.AsInt64()
		}
	}
	return 0
}

// check asserts that spans tell the story: one CONSUMER span per attempt
// named "process <queue>", the messaging and rebound attributes, the status,
// and the links (each attempt to the one before, and to the producer).
func (st story) check(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	if len(spans) != len(st.outcomes) {
		t.Fatalf("job %s: %d attempt spans, want %d (%v)", st.jobID, len(spans), len(st.outcomes), st.outcomes)
	}
	for i, s := range spans {
		n := i + 1 // the run, counted from 1
		if s.Name() != "process "+st.queue || s.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("attempt %d: span %q kind %v, want %q CONSUMER", n, s.Name(), s.SpanKind(), "process "+st.queue)
		}
		a := attrMap(s.Attributes())
		want := map[attribute.Key]any{
			"messaging.system":           st.system,
			"messaging.operation.name":   "process",
			"messaging.operation.type":   "process",
			"messaging.destination.name": st.queue,
			"messaging.message.id":       st.jobID,
			"rebound.job.attempt":        int64(st.number(i)),
			"rebound.job.max_attempts":   int64(st.maxAttempts),
			"rebound.retry.outcome":      st.outcomes[i],
		}
		for k, v := range want {
			if got, ok := a[k]; !ok || got.AsInterface() != v {
				t.Errorf("attempt %d: %s = %v, want %v", n, k, got.AsInterface(), v)
			}
		}
		uncounted := st.outcomes[i] == "snoozed" || st.outcomes[i] == "interrupted"
		switch {
		case st.outcomes[i] == "success" || uncounted:
			// Neither a success nor a run that did not count is a failure.
			if s.Status().Code != codes.Unset {
				t.Errorf("attempt %d: status %v on %s, want Unset", n, s.Status().Code, st.outcomes[i])
			}
			if _, ok := a["error.type"]; ok {
				t.Errorf("attempt %d: error.type on %s", n, st.outcomes[i])
			}
		default:
			if s.Status().Code != codes.Error || a["error.type"].AsString() == "" {
				t.Errorf("attempt %d: status %v error.type %q, want Error and a type", n, s.Status().Code, a["error.type"].AsString())
			}
		}
		if st.outcomes[i] == "retry" || uncounted {
			d, ok := a["rebound.retry.delay"]
			if uncounted && ok {
				t.Errorf("attempt %d (%s) has rebound.retry.delay, want none: it is no retry", n, st.outcomes[i])
			} else if !uncounted && (!ok || d.AsFloat64() < 0) {
				t.Errorf("attempt %d: rebound.retry.delay %v, want a delay in seconds", n, d.AsInterface())
			}
			fire, err := time.Parse(time.RFC3339Nano, a["rebound.retry.fire_time"].AsString())
			if err != nil {
				t.Errorf("attempt %d: rebound.retry.fire_time %q: %v", n, a["rebound.retry.fire_time"].AsString(), err)
			} else if n < len(spans) && spans[i+1].StartTime().Before(fire) {
				t.Errorf("attempt %d started at %v, before the fire time %v its predecessor announced",
					n+1, spans[i+1].StartTime(), fire)
			}
		} else {
			for _, k := range []attribute.Key{"rebound.retry.delay", "rebound.retry.fire_time"} {
				if _, ok := a[k]; ok {
					t.Errorf("attempt %d (%s) has %s", n, st.outcomes[i], k)
				}
			}
		}
		// Links: the previous attempt first (if any), then the producer.
		var want2 []trace.SpanID
		if n > 1 {
			want2 = append(want2, spans[i-1].SpanContext().SpanID())
		}
		if st.producer.IsValid() {
			want2 = append(want2, st.producer)
		}
		var got2 []trace.SpanID
		for _, l := range s.Links() {
			got2 = append(got2, l.SpanContext.SpanID())
		}
		if len(got2) != len(want2) {
			t.Errorf("attempt %d: links %v, want %v", n, got2, want2)
			continue
		}
		for j := range got2 {
			if got2[j] != want2[j] {
				t.Errorf("attempt %d: link %d to %v, want %v", n, j, got2[j], want2[j])
			}
		}
		// The link to the run before names that run's attempt number.
		if n > 1 {
			if got := attrMap(s.Links()[0].Attributes)["rebound.job.attempt"].AsInt64(); got != int64(st.number(i-1)) {
				t.Errorf("attempt %d: link to the run before names attempt %d, want %d", n, got, st.number(i-1))
			}
		}
	}
}

// itoa is a short strconv.Itoa for job IDs.
func itoa(i int64) string { return strconv.FormatInt(i, 10) }
