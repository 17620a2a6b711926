package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// exported is the part of a stdouttrace span the test reads.
type exported struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	SpanKind    int
	Attributes  []struct {
		Key   string
		Value struct{ Value any }
	}
	Links []struct {
		SpanContext struct{ TraceID, SpanID string }
	}
	Status struct{ Code string }
}

func (s exported) attr(key string) any {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.Value
		}
	}
	return nil
}

// TestExample runs the example with the stdout exporter and checks the
// spans it printed: the producer and three attempts in the producer's trace,
// each the producer's child and linked to the attempt before, with their
// outcomes.
func TestExample(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var spans, log bytes.Buffer
	if err := run(ctx, &spans, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, &log)
	}
	t.Log("\n" + log.String())
	if !strings.Contains(log.String(), "spans exported to stdout") {
		t.Errorf("log does not say where spans went:\n%s", &log)
	}

	var producer exported
	var attempts []exported
	dec := json.NewDecoder(&spans)
	for {
		var s exported
		if err := dec.Decode(&s); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode exported span: %v", err)
		}
		switch s.Name {
		case "send emails":
			producer = s
		case "process emails":
			attempts = append(attempts, s)
		}
	}
	if producer.SpanContext.SpanID == "" {
		t.Fatal("no producer span exported")
	}
	if len(attempts) != 3 {
		t.Fatalf("exported %d attempt spans, want 3", len(attempts))
	}
	for i, want := range []string{"retry", "retry", "success"} {
		s := attempts[i]
		if got := s.attr("rebound.job.attempt"); got != float64(i+1) {
			t.Errorf("span %d: attempt %v, want %d (spans out of order?)", i, got, i+1)
		}
		if got := s.attr("rebound.retry.outcome"); got != want {
			t.Errorf("attempt %d: outcome %v, want %s", i+1, got, want)
		}
		if got := s.attr("messaging.system"); got != "rebound" {
			t.Errorf("attempt %d: messaging.system %v, want rebound", i+1, got)
		}
		var links []string
		for _, l := range s.Links {
			links = append(links, l.SpanContext.SpanID)
		}
		if s.SpanContext.TraceID != producer.SpanContext.TraceID || s.Parent.SpanID != producer.SpanContext.SpanID {
			t.Errorf("attempt %d: trace %s parent %s, want the producer's trace %s and span %s",
				i+1, s.SpanContext.TraceID, s.Parent.SpanID, producer.SpanContext.TraceID, producer.SpanContext.SpanID)
		}
		var wantLinks []string
		if i > 0 {
			wantLinks = []string{attempts[i-1].SpanContext.SpanID}
		}
		if strings.Join(links, ",") != strings.Join(wantLinks, ",") {
			t.Errorf("attempt %d links %v, want %v", i+1, links, wantLinks)
		}
	}
}
