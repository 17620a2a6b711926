package reboundotel

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/rebound-go/rebound/backoff"
)

// CarrierKeyPrefix starts the carrier keys under which an attempt stores its
// span context for the next attempt to link to: "rebound-attempt-traceparent"
// and, when the span has a trace state, "rebound-attempt-tracestate" (W3C
// Trace Context values), plus "rebound-attempt-number", the attempt's
// number, which the link to it carries (a run that does not count, such as
// a snooze, is followed by one with the same number). They are distinct
// from the producer's "traceparent" so that both can travel with the job.
const CarrierKeyPrefix = "rebound-attempt-"

// attemptNumberKey is the carrier key of the stored attempt's number.
const attemptNumberKey = CarrierKeyPrefix + "number"

// attemptPropagator writes and reads the previous attempt's span context.
var attemptPropagator propagation.TraceContext

// prefixed is a carrier view whose keys all start with CarrierKeyPrefix.
type prefixed struct{ c propagation.TextMapCarrier }

func (p prefixed) Get(key string) string { return p.c.Get(prefixedKey(key)) }

func (p prefixed) Set(key, value string) { p.c.Set(prefixedKey(key), value) }

// prefixedKey is CarrierKeyPrefix+key, without building the string for the
// two keys W3C Trace Context uses.
func prefixedKey(key string) string {
	switch key {
	case "traceparent":
		return CarrierKeyPrefix + "traceparent"
	case "tracestate":
		return CarrierKeyPrefix + "tracestate"
	}
	return CarrierKeyPrefix + key
}

func (p prefixed) Keys() []string {
	var keys []string
	for _, k := range p.c.Keys() {
		if len(k) > len(CarrierKeyPrefix) && k[:len(CarrierKeyPrefix)] == CarrierKeyPrefix {
			keys = append(keys, k[len(CarrierKeyPrefix):])
		}
	}
	return keys
}

// Inject writes the span context (and baggage) of ctx into carrier with the
// propagators of opts (by default the global ones), so that every attempt of
// the job links to the producer's span. Call it when enqueueing, on the
// job's metadata: asynq task headers, River job metadata, the native job's
// metadata. observe.MapCarrier adapts a map[string]string; with asynq, build
// the task with the Retrier, which keeps the headers and adds its own:
//
//	headers := map[string]string{}
//	reboundotel.Inject(ctx, observe.MapCarrier(headers))
//	task := retry.NewTaskWithHeaders("email:send", payload, headers)
//
// River takes the map as the job's JSON metadata (InsertOpts.Metadata), the
// native queue with native.WithMetadata; docs/tracing.md shows all three.
//
// Only [WithPropagators] matters among opts. Inject writes nothing when ctx
// carries no span context or baggage.
func Inject(ctx context.Context, carrier propagation.TextMapCarrier, opts ...Option) {
	if carrier == nil {
		return
	}
	newConfig(opts).propagators.Inject(ctx, carrier)
}

// Inject is the package-level [Inject] with the observer's propagators.
func (o *Observer) Inject(ctx context.Context, carrier propagation.TextMapCarrier) {
	if carrier == nil {
		return
	}
	o.propagators.Inject(ctx, carrier)
}

var (
	backoffPkg  = reflect.TypeFor[backoff.RetryAfterError]().PkgPath()
	fmtWrapType = reflect.TypeOf(fmt.Errorf("%w", errors.New("")))
)

// errorType is the error.type attribute of err: the type of the error the
// handler returned, looking through rebound's own marks (Permanent,
// RetryAfter) and fmt.Errorf wrappers, which say nothing about the failure.
func errorType(err error) attribute.KeyValue {
	for {
		t := reflect.TypeOf(err)
		if t != fmtWrapType && (t.Kind() != reflect.Pointer || t.Elem().PkgPath() != backoffPkg) {
			break
		}
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		err = inner
	}
	return semconv.ErrorType(err)
}
