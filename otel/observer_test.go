package reboundotel_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/observe"
	reboundotel "github.com/rebound-go/rebound/otel"
)

// fixture is an Observer wired to an in-memory span recorder and a manual
// metric reader.
type fixture struct {
	obs    *reboundotel.Observer
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
}

func newFixture(t *testing.T, opts ...reboundotel.Option) *fixture {
	t.Helper()
	f := &fixture{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	f.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader))
	t.Cleanup(func() {
		_ = f.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	opts = append([]reboundotel.Option{
		reboundotel.WithTracerProvider(f.tp),
		reboundotel.WithMeterProvider(mp),
		reboundotel.WithPropagators(propagation.TraceContext{}),
	}, opts...)
	f.obs = reboundotel.New(opts...)
	return f
}

func (f *fixture) metrics(t *testing.T) metricdata.ScopeMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("collect metrics: %v", err)
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name == reboundotel.ScopeName {
			return sm
		}
	}
	return metricdata.ScopeMetrics{}
}

// simJob plays an engine: it runs a job under rule until it succeeds or
// gives up, reporting each attempt to obs and keeping the carrier between
// attempts the way an adapter persists the job's metadata. results[i] is
// the error of attempt i+1 (nil = success; past the end = success).
func simJob(ctx context.Context, obs observe.Observer, rule backoff.Rule, id string, carrier observe.MapCarrier, results ...error) []observe.Result {
	var out []observe.Result
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	for n := 1; ; n++ {
		a := observe.Attempt{
			System: "rebound", Queue: "emails", JobID: id, Kind: "email.send",
			Number: n, MaxAttempts: rule.MaxAttempts(), Carrier: carrier,
		}
		actx := obs.AttemptStarted(ctx, a)
		var err error
		if n <= len(results) {
			err = results[n-1]
		}
		_ = actx // the handler would run with actx
		r := observe.Result{Err: err}
		if err != nil {
			r.Decision = rule.Decide(n, err, backoff.Key(id))
			if r.Decision.Retry() {
				now = now.Add(r.Decision.Delay)
				r.FireAt = now
			}
		}
		obs.AttemptEnded(actx, a, r)
		out = append(out, r)
		if err == nil || !r.Decision.Retry() {
			return out
		}
	}
}

func mustRule(t *testing.T, maxAttempts int) backoff.Rule {
	t.Helper()
	p, err := backoff.Exponential(100*time.Millisecond, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r, err := backoff.NewRule(p, maxAttempts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func attrMap(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// errTimeout is a handler failure with a type of its own, for error.type.
type errTimeout struct{ host string }

func (e *errTimeout) Error() string { return "timeout talking to " + e.host }

func TestRetriedJobTellsItsStory(t *testing.T) {
	f := newFixture(t)
	rule := mustRule(t, 5)
	fail := &errTimeout{host: "smtp"}
	results := simJob(context.Background(), f.obs, rule, "job-42", observe.MapCarrier{},
		fmt.Errorf("send: %w", fail), fail)

	spans := f.spans.Ended()
	if len(spans) != 3 {
		t.Fatalf("got %d spans, want 3 (two failures and a success)", len(spans))
	}
	wantOutcome := []string{"retry", "retry", "success"}
	for i, s := range spans {
		n := i + 1
		if s.Name() != "process emails" {
			t.Errorf("span %d name %q, want %q", n, s.Name(), "process emails")
		}
		if s.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("span %d kind %v, want CONSUMER", n, s.SpanKind())
		}
		if s.InstrumentationScope().Name != reboundotel.ScopeName || s.InstrumentationScope().Version != reboundotel.Version {
			t.Errorf("span %d scope %+v, want %s %s", n, s.InstrumentationScope(), reboundotel.ScopeName, reboundotel.Version)
		}
		a := attrMap(s.Attributes())
		want := map[attribute.Key]any{
			"messaging.system":           "rebound",
			"messaging.operation.name":   "process",
			"messaging.operation.type":   "process",
			"messaging.destination.name": "emails",
			"messaging.message.id":       "job-42",
			"rebound.job.kind":           "email.send",
			"rebound.job.attempt":        int64(n),
			"rebound.job.max_attempts":   int64(5),
			"rebound.retry.outcome":      wantOutcome[i],
		}
		for k, v := range want {
			if got, ok := a[k]; !ok || got.AsInterface() != v {
				t.Errorf("span %d %s = %v, want %v", n, k, got.AsInterface(), v)
			}
		}
		if wantOutcome[i] == "retry" {
			d := results[i].Decision.Delay
			if d <= 0 {
				t.Fatalf("attempt %d: decision %+v, want a retry with a delay", n, results[i].Decision)
			}
			if got := a["rebound.retry.delay"].AsFloat64(); got != d.Seconds() {
				t.Errorf("span %d rebound.retry.delay = %v, want %v", n, got, d.Seconds())
			}
			wantFire := results[i].FireAt.UTC().Format(time.RFC3339Nano)
			if got := a["rebound.retry.fire_time"].AsString(); got != wantFire {
				t.Errorf("span %d rebound.retry.fire_time = %q, want %q", n, got, wantFire)
			}
			if _, err := time.Parse(time.RFC3339Nano, a["rebound.retry.fire_time"].AsString()); err != nil {
				t.Errorf("span %d fire_time is not RFC 3339: %v", n, err)
			}
			if s.Status().Code != codes.Error || s.Status().Description == "" {
				t.Errorf("span %d status %+v, want Error with a description", n, s.Status())
			}
			if got := a["error.type"].AsString(); got != "github.com/rebound-go/rebound/otel_test.errTimeout" && got != "*reboundotel_test.errTimeout" {
				t.Errorf("span %d error.type = %q, want the handler's error type", n, got)
			}
			if len(s.Events()) != 1 || s.Events()[0].Name != "exception" {
				t.Errorf("span %d events %v, want one exception event", n, s.Events())
			}
		} else {
			if s.Status().Code != codes.Unset {
				t.Errorf("successful span status %v, want Unset", s.Status().Code)
			}
			for _, k := range []attribute.Key{"rebound.retry.delay", "rebound.retry.fire_time", "error.type"} {
				if _, ok := a[k]; ok {
					t.Errorf("successful span has %s", k)
				}
			}
		}
		// Each attempt is a root span of its own, linked to the one before.
		if s.Parent().IsValid() {
			t.Errorf("span %d has parent %v, want none (attempts link, not nest)", n, s.Parent())
		}
		if n == 1 {
			if len(s.Links()) != 0 {
				t.Errorf("first attempt has links %v, want none (no producer context)", s.Links())
			}
			continue
		}
		prev := spans[i-1].SpanContext()
		if len(s.Links()) != 1 || !sameSpan(s.Links()[0].SpanContext, prev) {
			t.Errorf("span %d links %+v, want exactly one to attempt %d (%v)", n, s.Links(), n-1, prev)
		} else if got := attrMap(s.Links()[0].Attributes)["rebound.job.attempt"].AsInt64(); got != int64(n-1) {
			t.Errorf("span %d link attempt attribute %d, want %d", n, got, n-1)
		}
	}

	// Metrics: three attempts (two retries, one success), two delays, nothing exhausted.
	sm := f.metrics(t)
	sys := attribute.String("messaging.system", "rebound")
	dst := attribute.String("messaging.destination.name", "emails")
	assertAttempts(t, sm, map[string]int64{"retry": 2, "success": 1})

	h := findMetric(t, sm, "rebound.retry.delay")
	if h.Unit != "s" {
		t.Errorf("rebound.retry.delay unit %q, want s", h.Unit)
	}
	hist, ok := h.Data.(metricdata.Histogram[float64])
	if !ok || len(hist.DataPoints) != 1 {
		t.Fatalf("rebound.retry.delay data %#v, want one float64 histogram point", h.Data)
	}
	dp := hist.DataPoints[0]
	wantSum := results[0].Decision.Delay.Seconds() + results[1].Decision.Delay.Seconds()
	if dp.Count != 2 || dp.Sum != wantSum {
		t.Errorf("rebound.retry.delay count %d sum %v, want 2 and %v", dp.Count, dp.Sum, wantSum)
	}
	if !dp.Attributes.Equals(ptr(attribute.NewSet(sys, dst))) {
		t.Errorf("rebound.retry.delay attributes %v, want only system and destination", dp.Attributes.ToSlice())
	}
	if m, ok := lookupMetric(sm, "rebound.jobs.exhausted"); ok {
		if pts := m.Data.(metricdata.Sum[int64]).DataPoints; len(pts) != 0 {
			t.Errorf("rebound.jobs.exhausted has points %v, want none", pts)
		}
	}
}

// assertAttempts checks rebound.attempts on the "rebound" system and
// "emails" queue.
func assertAttempts(t *testing.T, sm metricdata.ScopeMetrics, want map[string]int64) {
	t.Helper()
	assertAttemptsOn(t, sm, "rebound", "emails", want)
}

// assertAttemptsOn checks rebound.attempts: one monotonic cumulative point
// per outcome, with exactly the system, queue and outcome attributes, and
// the given counts.
func assertAttemptsOn(t *testing.T, sm metricdata.ScopeMetrics, system, queue string, want map[string]int64) {
	t.Helper()
	m := findMetric(t, sm, "rebound.attempts")
	if m.Unit != "{attempt}" {
		t.Errorf("rebound.attempts unit %q, want {attempt}", m.Unit)
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok || !sum.IsMonotonic || sum.Temporality != metricdata.CumulativeTemporality {
		t.Fatalf("rebound.attempts data %#v, want a monotonic cumulative int64 sum", m.Data)
	}
	got := map[string]int64{}
	for _, p := range sum.DataPoints {
		o, _ := p.Attributes.Value("rebound.retry.outcome")
		want := attribute.NewSet(
			attribute.String("messaging.system", system),
			attribute.String("messaging.destination.name", queue),
			attribute.String("rebound.retry.outcome", o.AsString()))
		if !p.Attributes.Equals(&want) {
			t.Errorf("rebound.attempts point attributes %v, want %v", p.Attributes.ToSlice(), want.ToSlice())
		}
		got[o.AsString()] = p.Value
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rebound.attempts by outcome %v, want %v", got, want)
	}
}

// checkJobMetrics checks all three instruments after an adapter run:
// attempts by outcome, the number of delays recorded, the jobs exhausted.
func checkJobMetrics(t *testing.T, f *fixture, system, queue string, attempts map[string]int64, delays uint64, exhausted int64) {
	t.Helper()
	sm := f.metrics(t)
	assertAttemptsOn(t, sm, system, queue, attempts)
	base := attribute.NewSet(
		attribute.String("messaging.system", system),
		attribute.String("messaging.destination.name", queue))
	h, ok := findMetric(t, sm, "rebound.retry.delay").Data.(metricdata.Histogram[float64])
	if !ok || len(h.DataPoints) != 1 || h.DataPoints[0].Count != delays || !h.DataPoints[0].Attributes.Equals(&base) {
		t.Errorf("rebound.retry.delay %+v, want one point of %d delays on %v", h, delays, base.ToSlice())
	}
	e, ok := findMetric(t, sm, "rebound.jobs.exhausted").Data.(metricdata.Sum[int64])
	if !ok || len(e.DataPoints) != 1 || e.DataPoints[0].Value != exhausted || !e.DataPoints[0].Attributes.Equals(&base) {
		t.Errorf("rebound.jobs.exhausted %+v, want %d on %v", e, exhausted, base.ToSlice())
	}
}

// sameSpan reports whether a and b name the same span (a link's context is
// remote, the recorded span's is not).
func sameSpan(a, b trace.SpanContext) bool {
	return a.TraceID() == b.TraceID() && a.SpanID() == b.SpanID()
}

func ptr[T any](v T) *T { return &v }

func lookupMetric(sm metricdata.ScopeMetrics, name string) (metricdata.Metrics, bool) {
	for _, m := range sm.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return metricdata.Metrics{}, false
}

func findMetric(t *testing.T, sm metricdata.ScopeMetrics, name string) metricdata.Metrics {
	t.Helper()
	m, ok := lookupMetric(sm, name)
	if !ok {
		t.Fatalf("metric %s not recorded; have %d metrics", name, len(sm.Metrics))
	}
	return m
}

func TestExhaustedJobIsLabelledSo(t *testing.T) {
	f := newFixture(t)
	boom := errors.New("boom")
	simJob(context.Background(), f.obs, mustRule(t, 3), "job-x", observe.MapCarrier{}, boom, boom, boom)

	spans := f.spans.Ended()
	if len(spans) != 3 {
		t.Fatalf("got %d spans, want 3", len(spans))
	}
	for i, want := range []string{"retry", "retry", "exhausted"} {
		a := attrMap(spans[i].Attributes())
		if got := a["rebound.retry.outcome"].AsString(); got != want {
			t.Errorf("attempt %d outcome %q, want %q", i+1, got, want)
		}
		if spans[i].Status().Code != codes.Error {
			t.Errorf("attempt %d status %v, want Error", i+1, spans[i].Status().Code)
		}
		if got := a["error.type"].AsString(); got != "*errors.errorString" {
			t.Errorf("attempt %d error.type %q, want *errors.errorString", i+1, got)
		}
	}
	last := attrMap(spans[2].Attributes())
	if _, ok := last["rebound.retry.delay"]; ok {
		t.Error("exhausted attempt carries rebound.retry.delay")
	}
	if _, ok := last["rebound.retry.fire_time"]; ok {
		t.Error("exhausted attempt carries rebound.retry.fire_time")
	}

	sm := f.metrics(t)
	sys := attribute.String("messaging.system", "rebound")
	dst := attribute.String("messaging.destination.name", "emails")
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name: "rebound.jobs.exhausted", Description: "Jobs that failed on their last allowed attempt.", Unit: "{job}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[int64]{{Attributes: attribute.NewSet(sys, dst), Value: 1}},
		},
	}, findMetric(t, sm, "rebound.jobs.exhausted"), metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	assertAttempts(t, sm, map[string]int64{"retry": 2, "exhausted": 1})
}

func TestPermanentJobIsLabelledSo(t *testing.T) {
	f := newFixture(t)
	var opErr net.OpError // a real type from another package, to check error.type
	perm := backoff.Permanent(fmt.Errorf("bad address: %w", &opErr))
	simJob(context.Background(), f.obs, mustRule(t, 5), "job-p", observe.MapCarrier{}, perm)

	spans := f.spans.Ended()
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1 (a permanent error is not retried)", len(spans))
	}
	a := attrMap(spans[0].Attributes())
	if got := a["rebound.retry.outcome"].AsString(); got != "permanent" {
		t.Errorf("outcome %q, want permanent", got)
	}
	if got := a["error.type"].AsString(); got != "net.OpError" && got != "*net.OpError" {
		t.Errorf("error.type %q, want the wrapped *net.OpError, not rebound's permanent mark", got)
	}
	if spans[0].Status().Code != codes.Error {
		t.Errorf("status %v, want Error", spans[0].Status().Code)
	}

	sm := f.metrics(t)
	pts := findMetric(t, sm, "rebound.attempts").Data.(metricdata.Sum[int64]).DataPoints
	if len(pts) != 1 || pts[0].Value != 1 {
		t.Fatalf("rebound.attempts points %v, want one", pts)
	}
	if v, _ := pts[0].Attributes.Value("rebound.retry.outcome"); v.AsString() != "permanent" {
		t.Errorf("rebound.attempts outcome %q, want permanent", v.AsString())
	}
	if m, ok := lookupMetric(sm, "rebound.jobs.exhausted"); ok && len(m.Data.(metricdata.Sum[int64]).DataPoints) != 0 {
		t.Error("a permanent failure counted as exhausted")
	}
}

// A failure whose follow-up the engine decided without rebound is labelled
// "engine" on the span and the metrics: a failure, but neither a retry
// rebound scheduled nor a job given up.
func TestEngineDecidedIsLabelledSo(t *testing.T) {
	f := newFixture(t)
	a := observe.Attempt{System: "river", Queue: "q", JobID: "job-e", Number: 1, MaxAttempts: 5}
	f.obs.AttemptEnded(f.obs.AttemptStarted(context.Background(), a), a, observe.Result{Err: errors.New("boom")})
	spans := f.spans.Ended()
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	attrs := attrMap(spans[0].Attributes())
	if got := attrs["rebound.retry.outcome"].AsString(); got != "engine" {
		t.Errorf("outcome %q, want engine", got)
	}
	if _, ok := attrs["rebound.retry.fire_time"]; ok {
		t.Error("an engine-decided attempt has a fire time; rebound knows none")
	}
	if spans[0].Status().Code != codes.Error {
		t.Errorf("status %v, want Error", spans[0].Status().Code)
	}
	sm := f.metrics(t)
	assertAttemptsOn(t, sm, "river", "q", map[string]int64{"engine": 1})
	if m, ok := lookupMetric(sm, "rebound.jobs.exhausted"); ok && len(m.Data.(metricdata.Sum[int64]).DataPoints) != 0 {
		t.Error("an engine-decided failure counted as exhausted")
	}
}

// The engine's cancel reads the same on every engine: error.type names
// *observe.CancelledError and the status the text the engine stored.
func TestCancelledErrorType(t *testing.T) {
	f := newFixture(t)
	a := observe.Attempt{System: "rebound", Queue: "q", JobID: "job-c", Number: 1, MaxAttempts: 5}
	res := observe.Result{Err: &observe.CancelledError{Engine: "native: cancelled by an operator"}, Decision: backoff.Decision{Outcome: backoff.OutcomePermanent}}
	f.obs.AttemptEnded(f.obs.AttemptStarted(context.Background(), a), a, res)
	spans := f.spans.Ended()
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	attrs := attrMap(spans[0].Attributes())
	if got := attrs["error.type"].AsString(); got != "*observe.CancelledError" && got != "github.com/rebound-go/rebound/observe.CancelledError" && got != "*github.com/rebound-go/rebound/observe.CancelledError" {
		t.Errorf("error.type %q, want the *observe.CancelledError", got)
	}
	if got := spans[0].Status().Description; got != "native: cancelled by an operator" {
		t.Errorf("status %q, want the text the engine stored", got)
	}
	if got := attrs["rebound.retry.outcome"].AsString(); got != "permanent" {
		t.Errorf("outcome %q, want permanent", got)
	}
}

func TestAttemptsLinkToProducer(t *testing.T) {
	f := newFixture(t)
	producerCtx, producer := f.tp.Tracer("producer").Start(context.Background(), "send emails",
		trace.WithSpanKind(trace.SpanKindProducer))
	carrier := observe.MapCarrier{}
	reboundotel.Inject(producerCtx, carrier, reboundotel.WithPropagators(propagation.TraceContext{}))
	producer.End()
	if carrier.Get("traceparent") == "" {
		t.Fatalf("Inject wrote no traceparent: %v", carrier)
	}

	simJob(context.Background(), f.obs, mustRule(t, 5), "job-7", carrier, errors.New("flaky"))

	var attempts []sdktrace.ReadOnlySpan
	for _, s := range f.spans.Ended() {
		if s.Name() == "process emails" {
			attempts = append(attempts, s)
		}
	}
	if len(attempts) != 2 {
		t.Fatalf("got %d attempt spans, want 2", len(attempts))
	}
	psc := producer.SpanContext()
	has := func(s sdktrace.ReadOnlySpan, sc trace.SpanContext) bool {
		for _, l := range s.Links() {
			if sameSpan(l.SpanContext, sc) {
				return true
			}
		}
		return false
	}
	for i, s := range attempts {
		if !has(s, psc) {
			t.Errorf("attempt %d does not link to the producer %v: %+v", i+1, psc, s.Links())
		}
	}
	if !has(attempts[1], attempts[0].SpanContext()) {
		t.Errorf("attempt 2 does not link to attempt 1")
	}
	if len(attempts[0].Links()) != 1 || len(attempts[1].Links()) != 2 {
		t.Errorf("links per attempt %d and %d, want 1 and 2", len(attempts[0].Links()), len(attempts[1].Links()))
	}
	// The producer's traceparent is left as it was; the attempt's context
	// lives under rebound's own key.
	if got := carrier.Get("traceparent"); got != fmt.Sprintf("00-%s-%s-01", psc.TraceID(), psc.SpanID()) {
		t.Errorf("carrier traceparent changed to %q", got)
	}
	last := attempts[1].SpanContext()
	if got := carrier.Get(reboundotel.CarrierKeyPrefix + "traceparent"); got != fmt.Sprintf("00-%s-%s-01", last.TraceID(), last.SpanID()) {
		t.Errorf("carrier %straceparent = %q, want the last attempt's context", reboundotel.CarrierKeyPrefix, got)
	}
}

func TestAttemptIsChildOfAdapterSpan(t *testing.T) {
	f := newFixture(t)
	ctx, outer := f.tp.Tracer("engine").Start(context.Background(), "river.work")
	defer outer.End()
	a := observe.Attempt{System: "river", Queue: "default", JobID: "1", Number: 1, MaxAttempts: 3}
	actx := f.obs.AttemptStarted(ctx, a)
	inner := trace.SpanFromContext(actx)
	if inner.SpanContext().Equal(outer.SpanContext()) {
		t.Fatal("AttemptStarted returned the adapter's span, want a new one")
	}
	f.obs.AttemptEnded(actx, a, observe.Result{})
	spans := f.spans.Ended()
	if len(spans) != 1 || spans[0].Parent().SpanID() != outer.SpanContext().SpanID() {
		t.Fatalf("attempt span parent %v, want the adapter's span %v", spans[0].Parent(), outer.SpanContext())
	}
	if len(spans[0].Links()) != 0 {
		t.Errorf("attempt without a carrier has links %v", spans[0].Links())
	}
}

func TestNilCarrierAndBadCarrierValues(t *testing.T) {
	f := newFixture(t)
	carrier := observe.MapCarrier{
		"traceparent": "not a traceparent",
		reboundotel.CarrierKeyPrefix + "traceparent": "00-zzzz-bad-01",
	}
	simJob(context.Background(), f.obs, mustRule(t, 2), "j", carrier, errors.New("x"))
	simJob(context.Background(), f.obs, mustRule(t, 2), "k", nil, errors.New("x"))
	spans := f.spans.Ended()
	if len(spans) != 4 {
		t.Fatalf("got %d spans, want 4", len(spans))
	}
	if len(spans[0].Links()) != 0 {
		t.Errorf("garbage carrier values produced links %v", spans[0].Links())
	}
	if len(spans[1].Links()) != 1 || !sameSpan(spans[1].Links()[0].SpanContext, spans[0].SpanContext()) {
		t.Errorf("second attempt links %v, want the first attempt (garbage replaced)", spans[1].Links())
	}
	for _, s := range spans[2:] {
		if len(s.Links()) != 0 {
			t.Errorf("job without carrier has links %v", s.Links())
		}
	}
}

func TestUnsampledAttemptsWriteNothing(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	obs := reboundotel.New(reboundotel.WithTracerProvider(tp))
	carrier := observe.MapCarrier{}
	simJob(context.Background(), obs, mustRule(t, 3), "j", carrier, errors.New("x"))
	if len(spans.Ended()) != 0 {
		t.Errorf("recorded %d spans with NeverSample", len(spans.Ended()))
	}
	if len(carrier) != 0 {
		t.Errorf("unsampled attempts wrote %v into the carrier", carrier)
	}
}

func TestMetricAttributesHaveBoundedCardinality(t *testing.T) {
	f := newFixture(t)
	for i := range 20 {
		simJob(context.Background(), f.obs, mustRule(t, 2), fmt.Sprint("job-", i), observe.MapCarrier{}, errors.New("x"))
	}
	sm := f.metrics(t)
	for _, m := range sm.Metrics {
		var sets []attribute.Set
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				sets = append(sets, p.Attributes)
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				sets = append(sets, p.Attributes)
			}
		}
		for _, s := range sets {
			for _, kv := range s.ToSlice() {
				switch kv.Key {
				case "messaging.system", "messaging.destination.name", "rebound.retry.outcome":
				default:
					t.Errorf("metric %s has attribute %s; only system, destination and outcome are allowed", m.Name, kv.Key)
				}
			}
		}
		if len(sets) > 2 {
			t.Errorf("metric %s has %d series for 20 jobs on one queue, want at most 2", m.Name, len(sets))
		}
	}
}

func TestProducerAsParentMakesOneTrace(t *testing.T) {
	f := newFixture(t, reboundotel.WithProducerAsParent())
	pctx, producer := f.tp.Tracer("producer").Start(context.Background(), "send emails")
	carrier := observe.MapCarrier{}
	f.obs.Inject(pctx, carrier)
	producer.End()
	simJob(context.Background(), f.obs, mustRule(t, 5), "job-1", carrier, errors.New("a"), errors.New("b"))

	attempts := jobSpansOf(f.spans.Ended(), "job-1")
	if len(attempts) != 3 {
		t.Fatalf("got %d attempt spans, want 3", len(attempts))
	}
	for i, s := range attempts {
		if s.SpanContext().TraceID() != producer.SpanContext().TraceID() || s.Parent().SpanID() != producer.SpanContext().SpanID() {
			t.Errorf("attempt %d: trace %v parent %v, want the producer's trace and the producer as parent", i+1, s.SpanContext().TraceID(), s.Parent().SpanID())
		}
		wantLinks := 0
		if i > 0 {
			wantLinks = 1
		}
		if len(s.Links()) != wantLinks || (i > 0 && !sameSpan(s.Links()[0].SpanContext, attempts[i-1].SpanContext())) {
			t.Errorf("attempt %d links %+v, want only the previous attempt", i+1, s.Links())
		}
	}

	// An adapter span in the context wins: the attempt stays its child.
	ctx, outer := f.tp.Tracer("engine").Start(context.Background(), "engine.work")
	a := observe.Attempt{System: "rebound", Queue: "emails", JobID: "job-2", Number: 1, MaxAttempts: 5, Carrier: observe.MapCarrier{"traceparent": carrier.Get("traceparent")}}
	f.obs.AttemptEnded(f.obs.AttemptStarted(ctx, a), a, observe.Result{})
	outer.End()
	s := jobSpansOf(f.spans.Ended(), "job-2")
	if len(s) != 1 || s[0].Parent().SpanID() != outer.SpanContext().SpanID() || len(s[0].Links()) != 1 {
		t.Errorf("attempt under an adapter span: parent %v links %d, want the adapter span and a producer link", s[0].Parent().SpanID(), len(s[0].Links()))
	}
}

func jobSpansOf(spans []sdktrace.ReadOnlySpan, id string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if attrMap(s.Attributes())["messaging.message.id"].AsString() == id {
			out = append(out, s)
		}
	}
	return out
}

// TestMetricsWithoutTracing: a no-op tracer does not turn the metrics off.
func TestMetricsWithoutTracing(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	f := &fixture{reader: reader, obs: reboundotel.New(
		reboundotel.WithTracerProvider(tracenoop.NewTracerProvider()),
		reboundotel.WithMeterProvider(mp))}
	boom := errors.New("boom")
	simJob(context.Background(), f.obs, mustRule(t, 2), "j", observe.MapCarrier{}, boom, boom)
	checkJobMetrics(t, f, "rebound", "emails", map[string]int64{"retry": 1, "exhausted": 1}, 1, 1)
}

// errSnooze stands in for an engine's snooze error (River's
// *rivertype.JobSnoozeError).
type errSnooze struct{}

func (errSnooze) Error() string { return "snoozed for 1m0s" }

// TestCountingRunsAreNotFailures: a snoozed run and one cut short by a
// stopping worker are not failed attempts. Their spans carry the outcome and
// the fire time but no error, they count under their own outcomes, the
// retry-delay histogram does not see them, and the runs after them link to
// them under the right attempt number.
func TestCountingRunsAreNotFailures(t *testing.T) {
	f := newFixture(t)
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	retry := func(d time.Duration) backoff.Decision {
		return backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: d}
	}
	runs := []struct {
		number int
		result observe.Result
	}{
		{1, observe.Result{Err: errSnooze{}, Decision: retry(time.Minute), FireAt: now.Add(time.Minute), Counting: observe.Snoozed}},
		{1, observe.Result{Err: &errTimeout{host: "smtp"}, Decision: retry(2 * time.Second), FireAt: now.Add(time.Minute + 2*time.Second)}},
		{2, observe.Result{Err: context.Canceled, Decision: retry(0), FireAt: now.Add(2 * time.Minute), Counting: observe.Interrupted}},
		{2, observe.Result{}},
	}
	carrier := observe.MapCarrier{}
	for _, r := range runs {
		a := observe.Attempt{System: "river", Queue: "emails", JobID: "job-s", Number: r.number, MaxAttempts: 3, Carrier: carrier}
		f.obs.AttemptEnded(f.obs.AttemptStarted(context.Background(), a), a, r.result)
	}

	spans := f.spans.Ended()
	if len(spans) != len(runs) {
		t.Fatalf("got %d spans, want %d", len(spans), len(runs))
	}
	for i, want := range []string{"snoozed", "retry", "interrupted", "success"} {
		s, r := spans[i], runs[i].result
		a := attrMap(s.Attributes())
		if got := a["rebound.retry.outcome"].AsString(); got != want {
			t.Errorf("run %d: outcome %q, want %q", i+1, got, want)
		}
		if got := a["rebound.job.attempt"].AsInt64(); got != int64(runs[i].number) {
			t.Errorf("run %d: rebound.job.attempt %d, want %d", i+1, got, runs[i].number)
		}
		_, hasDelay := a["rebound.retry.delay"]
		fire, hasFire := a["rebound.retry.fire_time"]
		switch want {
		case "snoozed", "interrupted":
			if s.Status().Code != codes.Unset {
				t.Errorf("run %d (%s): status %+v, want Unset", i+1, want, s.Status())
			}
			if _, ok := a["error.type"]; ok {
				t.Errorf("run %d (%s): error.type %q, want none", i+1, want, a["error.type"].AsString())
			}
			if len(s.Events()) != 0 {
				t.Errorf("run %d (%s): events %v, want no exception", i+1, want, s.Events())
			}
			if hasDelay {
				t.Errorf("run %d (%s): has rebound.retry.delay, want only the fire time", i+1, want)
			}
			if !hasFire || fire.AsString() != r.FireAt.UTC().Format(time.RFC3339Nano) {
				t.Errorf("run %d (%s): fire_time %q, want %q", i+1, want, fire.AsString(), r.FireAt.UTC().Format(time.RFC3339Nano))
			}
		case "retry":
			if s.Status().Code != codes.Error || a["error.type"].AsString() == "" || !hasDelay || !hasFire {
				t.Errorf("run %d (retry): status %v, error.type %q, delay %v, fire time %v; want a failure with both",
					i+1, s.Status().Code, a["error.type"].AsString(), hasDelay, hasFire)
			}
		}
		if i == 0 {
			continue
		}
		// Each run links to the one before, naming its attempt number: the
		// snoozed attempt 1 is followed by attempt 1 again.
		if len(s.Links()) != 1 || !sameSpan(s.Links()[0].SpanContext, spans[i-1].SpanContext()) {
			t.Errorf("run %d: links %+v, want one to run %d", i+1, s.Links(), i)
			continue
		}
		if got := attrMap(s.Links()[0].Attributes)["rebound.job.attempt"].AsInt64(); got != int64(runs[i-1].number) {
			t.Errorf("run %d: link names attempt %d, want %d", i+1, got, runs[i-1].number)
		}
	}

	sm := f.metrics(t)
	assertAttemptsOn(t, sm, "river", "emails", map[string]int64{"snoozed": 1, "retry": 1, "interrupted": 1, "success": 1})
	h := findMetric(t, sm, "rebound.retry.delay").Data.(metricdata.Histogram[float64])
	if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 || h.DataPoints[0].Sum != 2 {
		t.Errorf("rebound.retry.delay %+v, want the one 2s retry, not the snooze or the interruption", h.DataPoints)
	}
	if m, ok := lookupMetric(sm, "rebound.jobs.exhausted"); ok && len(m.Data.(metricdata.Sum[int64]).DataPoints) != 0 {
		t.Error("an uncounted run counted as exhausted")
	}
}

// A carrier written without the attempt number (by an older version) still
// links, naming the attempt before.
func TestLinkWithoutStoredNumber(t *testing.T) {
	f := newFixture(t)
	carrier := observe.MapCarrier{}
	a := observe.Attempt{System: "rebound", Queue: "emails", JobID: "j", Number: 2, MaxAttempts: 5, Carrier: carrier}
	f.obs.AttemptEnded(f.obs.AttemptStarted(context.Background(), a), a, observe.Result{Err: errors.New("x"), Decision: backoff.Decision{Outcome: backoff.OutcomeRetry}})
	if carrier.Get(reboundotel.CarrierKeyPrefix+"number") != "2" {
		t.Fatalf("carrier %v, want the attempt number stored", carrier)
	}
	delete(carrier, reboundotel.CarrierKeyPrefix+"number")
	a.Number = 3
	f.obs.AttemptEnded(f.obs.AttemptStarted(context.Background(), a), a, observe.Result{})
	spans := f.spans.Ended()
	if len(spans) != 2 || len(spans[1].Links()) != 1 {
		t.Fatalf("got %d spans, want 2 with a link on the second", len(spans))
	}
	if got := attrMap(spans[1].Links()[0].Attributes)["rebound.job.attempt"].AsInt64(); got != 2 {
		t.Errorf("link names attempt %d, want 2", got)
	}
}
