package reboundotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/rebound-go/rebound/backoff"
	"github.com/rebound-go/rebound/breaker"
	"github.com/rebound-go/rebound/observe"
	reboundotel "github.com/rebound-go/rebound/otel"
)

// A run a breaker held back is a span of its own with outcome "deferred",
// its fire time and its dependency, status Unset: no failure, no delay
// recorded, no exhausted job; it counts in rebound.jobs.deferred by
// dependency. The breaker's changes are events on the span of the attempt
// that showed them, and the gauge follows the last state seen per
// dependency.
func TestBreakerDeferralsAndChanges(t *testing.T) {
	f := newFixture(t)
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	carrier := observe.MapCarrier{}
	a := observe.Attempt{System: "rebound", Queue: "emails", JobID: "job-b", Kind: "charge", Number: 2, MaxAttempts: 5, Carrier: carrier}

	// Attempt 2 fails and trips the breaker.
	ctx := f.obs.AttemptStarted(context.Background(), a)
	f.obs.BreakerChanged(ctx, observe.BreakerChange{System: "rebound", Dependency: "payments",
		From: breaker.Closed, To: breaker.Open, At: now, NextProbe: now.Add(30 * time.Second)})
	f.obs.AttemptEnded(ctx, a, observe.Result{Err: &errTimeout{host: "pay"},
		Decision: backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: time.Second}, FireAt: now.Add(time.Second)})

	// Its retry is deferred twice, then probes and closes the breaker.
	for i, until := range []time.Time{now.Add(30 * time.Second), now.Add(40 * time.Second)} {
		ctx = f.obs.AttemptStarted(context.Background(), a)
		f.obs.AttemptEnded(ctx, a, observe.Result{
			Err:      &observe.DeferredError{Dependency: "payments", Decision: breaker.DeferOpen, Until: until},
			Decision: backoff.Decision{Outcome: backoff.OutcomeRetry, Delay: until.Sub(now)},
			FireAt:   until.Add(time.Duration(i) * time.Second),
			Counting: observe.Deferred,
		})
	}
	ctx = f.obs.AttemptStarted(context.Background(), a)
	f.obs.BreakerChanged(ctx, observe.BreakerChange{System: "rebound", Dependency: "payments", From: breaker.Open, To: breaker.HalfOpen, At: now.Add(40 * time.Second)})
	f.obs.BreakerChanged(ctx, observe.BreakerChange{System: "rebound", Dependency: "payments", From: breaker.HalfOpen, To: breaker.Closed, At: now.Add(41 * time.Second)})
	f.obs.AttemptEnded(ctx, a, observe.Result{})
	// Another dependency is seen open by this process, made so elsewhere.
	f.obs.BreakerChanged(context.Background(), observe.BreakerChange{System: "rebound", Dependency: "ledger", From: breaker.Closed, To: breaker.Open, Learned: true})

	spans := f.spans.Ended()
	if len(spans) != 4 {
		t.Fatalf("got %d spans, want 4", len(spans))
	}
	ev := spans[0].Events()
	if len(ev) != 2 || ev[0].Name != reboundotel.BreakerEvent || ev[1].Name != "exception" {
		t.Fatalf("failed attempt's events %v, want the breaker event, then the exception", ev)
	}
	got := attrMap(ev[0].Attributes)
	if got["rebound.breaker.dependency"].AsString() != "payments" || got["rebound.breaker.from"].AsString() != "closed" ||
		got["rebound.breaker.to"].AsString() != "open" || got["rebound.breaker.learned"].AsBool() ||
		got["rebound.breaker.next_probe"].AsString() != "2026-01-02T15:04:35Z" || !ev[0].Time.Equal(now) {
		t.Errorf("trip event %v at %v, want payments closed -> open, next probe 15:04:35, at %v", ev[0].Attributes, ev[0].Time, now)
	}
	for i, s := range spans[1:3] {
		a := attrMap(s.Attributes())
		if a["rebound.retry.outcome"].AsString() != "deferred" || a["rebound.breaker.dependency"].AsString() != "payments" ||
			s.Status().Code != codes.Unset || len(s.Events()) != 0 {
			t.Errorf("deferred run %d: attributes %v, status %v, events %v; want outcome deferred, dependency payments, status Unset, no event",
				i+1, s.Attributes(), s.Status(), s.Events())
		}
		if _, ok := a["error.type"]; ok {
			t.Errorf("deferred run %d has error.type, want none", i+1)
		}
		if _, ok := a["rebound.retry.delay"]; ok {
			t.Errorf("deferred run %d has rebound.retry.delay, want only the fire time", i+1)
		}
		if want := []string{"2026-01-02T15:04:35Z", "2026-01-02T15:04:46Z"}[i]; a["rebound.retry.fire_time"].AsString() != want {
			t.Errorf("deferred run %d: fire time %q, want %q", i+1, a["rebound.retry.fire_time"].AsString(), want)
		}
		// Deferred runs keep the attempt number, and link to the run before.
		if len(s.Links()) != 1 || !sameSpan(s.Links()[0].SpanContext, spans[i].SpanContext()) {
			t.Errorf("deferred run %d: links %v, want one to the run before", i+1, s.Links())
		}
	}
	if ev := spans[3].Events(); len(ev) != 2 || attrMap(ev[1].Attributes)["rebound.breaker.to"].AsString() != "closed" {
		t.Errorf("probe's events %v, want open -> half-open, half-open -> closed", ev)
	}

	sm := f.metrics(t)
	assertAttempts(t, sm, map[string]int64{"retry": 1, "deferred": 2, "success": 1})
	h := findMetric(t, sm, "rebound.retry.delay").Data.(metricdata.Histogram[float64])
	if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 {
		t.Errorf("rebound.retry.delay %+v, want the one retry, not the deferrals", h.DataPoints)
	}
	d := findMetric(t, sm, reboundotel.DeferredMetric)
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name: reboundotel.DeferredMetric, Unit: "{run}",
		Description: "Runs a circuit breaker held back, without spending an attempt.",
		Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true, DataPoints: []metricdata.DataPoint[int64]{{
			Attributes: attribute.NewSet(attribute.String("messaging.system", "rebound"),
				attribute.String("messaging.destination.name", "emails"), attribute.String("rebound.breaker.dependency", "payments")),
			Value: 2,
		}}},
	}, d, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	g := findMetric(t, sm, reboundotel.BreakerStateMetric)
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name: reboundotel.BreakerStateMetric, Unit: "{state}",
		Description: "State of each dependency's circuit breaker as this process last saw it: 0 closed, 1 half-open, 2 open.",
		Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{
			{Attributes: attribute.NewSet(attribute.String("messaging.system", "rebound"), attribute.String("rebound.breaker.dependency", "payments")), Value: reboundotel.StateClosed},
			{Attributes: attribute.NewSet(attribute.String("messaging.system", "rebound"), attribute.String("rebound.breaker.dependency", "ledger")), Value: reboundotel.StateOpen},
		}},
	}, g, metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreValue(), metricdatatest.IgnoreExemplars())
	for _, p := range g.Data.(metricdata.Gauge[int64]).DataPoints {
		dep, _ := p.Attributes.Value("rebound.breaker.dependency")
		want := map[string]int64{"payments": reboundotel.StateClosed, "ledger": reboundotel.StateOpen}[dep.AsString()]
		if p.Value != want {
			t.Errorf("rebound.breaker.state{%s} = %d, want %d", dep.AsString(), p.Value, want)
		}
	}
}

// With tracing off (no SDK) a change still moves the gauge, and nothing
// panics for want of a span.
func TestBreakerChangeWithoutASpan(t *testing.T) {
	f := newFixture(t)
	f.obs.BreakerChanged(context.Background(), observe.BreakerChange{Dependency: "payments", From: breaker.Closed, To: breaker.HalfOpen})
	g := findMetric(t, f.metrics(t), reboundotel.BreakerStateMetric).Data.(metricdata.Gauge[int64])
	if len(g.DataPoints) != 1 || g.DataPoints[0].Value != reboundotel.StateHalfOpen {
		t.Errorf("rebound.breaker.state %+v, want one point at 1 (half-open)", g.DataPoints)
	}
}
