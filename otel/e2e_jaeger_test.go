package reboundotel_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/rebound-go/rebound/observe"
	reboundotel "github.com/rebound-go/rebound/otel"
)

// Environment of the end-to-end test; .ci/jaeger.sh start prints both.
const (
	jaegerQueryEnv = "REBOUND_JAEGER_QUERY" // e.g. http://127.0.0.1:16686
	jaegerOTLPEnv  = "REBOUND_JAEGER_OTLP"  // e.g. http://127.0.0.1:4318 (the default)
	// jaegerRequireEnv set to 1 makes a missing Jaeger a failure, not a skip
	// (CI sets it once it has started Jaeger).
	jaegerRequireEnv = "REBOUND_REQUIRE_JAEGER"
)

// jaegerTraces is the part of the query API's answer the test reads.
type jaegerTraces struct {
	Data []struct {
		TraceID string `json:"traceID"`
		Spans   []struct {
			TraceID       string `json:"traceID"`
			SpanID        string `json:"spanID"`
			OperationName string `json:"operationName"`
			References    []struct {
				RefType string `json:"refType"`
				TraceID string `json:"traceID"`
				SpanID  string `json:"spanID"`
			} `json:"references"`
			Tags []struct {
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"tags"`
		} `json:"spans"`
	} `json:"data"`
}

// TestJaegerEndToEnd sends a job's retry story (a producer span and three
// attempts: two failures, then a success) to a real Jaeger over OTLP/HTTP,
// reads it back from Jaeger's query API and checks the attempts' attributes
// and their FOLLOWS_FROM links. It runs only when REBOUND_JAEGER_QUERY is
// set: start Jaeger with `eval "$(bash .ci/jaeger.sh start)"`.
func TestJaegerEndToEnd(t *testing.T) {
	query := os.Getenv(jaegerQueryEnv)
	if query == "" {
		if os.Getenv(jaegerRequireEnv) == "1" {
			t.Fatalf("%s=1 but %s is not set; start Jaeger with: eval \"$(bash .ci/jaeger.sh start)\"", jaegerRequireEnv, jaegerQueryEnv)
		}
		t.Skipf("%s is not set; start Jaeger with: eval \"$(bash .ci/jaeger.sh start)\"", jaegerQueryEnv)
	}
	otlp := os.Getenv(jaegerOTLPEnv)
	if otlp == "" {
		otlp = "http://127.0.0.1:4318"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	service := "rebound-e2e-" + hex.EncodeToString(suffix[:])

	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(otlp, "/")+"/v1/traces"))
	if err != nil {
		t.Fatalf("OTLP exporter: %v", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(service))),
	)
	obs := reboundotel.New(reboundotel.WithTracerProvider(tp), reboundotel.WithPropagators(propagation.TraceContext{}))

	pctx, producer := tp.Tracer("e2e").Start(ctx, "send emails", trace.WithSpanKind(trace.SpanKindProducer))
	carrier := observe.MapCarrier{}
	obs.Inject(pctx, carrier)
	producer.End()
	fail := errors.New("smtp timeout")
	results := simJob(ctx, obs, mustRule(t, 5), "job-e2e", carrier, fail, fail)
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("flush spans to Jaeger at %s: %v", otlp, err)
	}

	// Jaeger stores spans asynchronously: poll until all four are there.
	var got jaegerTraces
	u := strings.TrimSuffix(query, "/") + "/api/traces?service=" + url.QueryEscape(service) + "&limit=20"
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = jaegerTraces{}
		if err := getJSON(ctx, u, &got); err != nil {
			t.Fatalf("query Jaeger: %v", err)
		}
		n := 0
		for _, tr := range got.Data {
			n += len(tr.Spans)
		}
		if n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger returned %d spans for %s after 30 s, want 4", n, service)
		}
		time.Sleep(200 * time.Millisecond)
	}

	type span struct {
		id, traceID string
		tags        map[string]string
		follows     []string // span IDs this span FOLLOWS_FROM
	}
	attempts := map[string]span{} // by rebound.job.attempt
	var producerID string
	for _, tr := range got.Data {
		for _, s := range tr.Spans {
			sp := span{id: s.SpanID, traceID: s.TraceID, tags: map[string]string{}}
			for _, tag := range s.Tags {
				sp.tags[tag.Key] = fmt.Sprint(tag.Value)
			}
			for _, r := range s.References {
				if r.RefType == "FOLLOWS_FROM" {
					sp.follows = append(sp.follows, r.SpanID)
				}
			}
			switch s.OperationName {
			case "send emails":
				producerID = s.SpanID
			case "process emails":
				attempts[sp.tags["rebound.job.attempt"]] = sp
			default:
				t.Errorf("unexpected span %q", s.OperationName)
			}
		}
	}
	if producerID != producer.SpanContext().SpanID().String() {
		t.Errorf("producer span %q in Jaeger, want %s", producerID, producer.SpanContext().SpanID())
	}
	if len(attempts) != 3 {
		t.Fatalf("Jaeger has attempts %v, want 1, 2 and 3", keys(attempts))
	}
	for n, want := range []string{"retry", "retry", "success"} {
		a := attempts[fmt.Sprint(n+1)]
		checks := map[string]string{
			"span.kind":                  "consumer",
			"messaging.system":           "rebound",
			"messaging.operation.name":   "process",
			"messaging.operation.type":   "process",
			"messaging.destination.name": "emails",
			"messaging.message.id":       "job-e2e",
			"rebound.job.max_attempts":   "5",
			"rebound.retry.outcome":      want,
		}
		if want == "retry" {
			checks["rebound.retry.delay"] = fmt.Sprint(results[n].Decision.Delay.Seconds())
			checks["rebound.retry.fire_time"] = results[n].FireAt.UTC().Format(time.RFC3339Nano)
			checks["error"] = "true"
			checks["error.type"] = "*errors.errorString"
		}
		for k, v := range checks {
			if a.tags[k] != v {
				t.Errorf("attempt %d tag %s = %q, want %q", n+1, k, a.tags[k], v)
			}
		}
		if want == "success" {
			if _, ok := a.tags["error"]; ok {
				t.Errorf("successful attempt is marked error in Jaeger: %v", a.tags)
			}
		}
		wantFollows := []string{producerID}
		if n > 0 {
			wantFollows = append([]string{attempts[fmt.Sprint(n)].id}, producerID)
		}
		if fmt.Sprint(a.follows) != fmt.Sprint(wantFollows) {
			t.Errorf("attempt %d FOLLOWS_FROM %v, want %v (previous attempt, then producer)", n+1, a.follows, wantFollows)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
