package reboundotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// config holds the providers an [Observer] is built from.
type config struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	propagators    propagation.TextMapPropagator
	producerParent bool
}

// newConfig applies opts over the defaults: the global tracer provider,
// meter provider and propagators, read when [New] is called.
func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	if c.meterProvider == nil {
		c.meterProvider = otel.GetMeterProvider()
	}
	if c.propagators == nil {
		c.propagators = otel.GetTextMapPropagator()
	}
	return c
}

// An Option configures an [Observer] or [Inject].
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithTracerProvider sets the tracer provider the attempt spans are created
// with. The default is the global provider ([otel.GetTracerProvider]); a nil
// provider keeps the default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.tracerProvider = tp })
}

// WithMeterProvider sets the meter provider the attempt metrics are recorded
// with. The default is the global provider ([otel.GetMeterProvider]); a nil
// provider keeps the default.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meterProvider = mp })
}

// WithPropagators sets the propagators that read the producer's context from
// a job's carrier (and that [Inject] writes it with). The default is the
// global propagator ([otel.GetTextMapPropagator]); a nil propagator keeps the
// default.
//
// The link from one attempt to the previous one does not depend on this
// setting: rebound always stores it in W3C Trace Context form under its own
// keys (see [CarrierKeyPrefix]).
func WithPropagators(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.propagators = p })
}

// WithProducerAsParent makes each attempt span a child of the producer's span
// (read from the job's carrier, see [Inject]) when the adapter's context
// carries no span of its own, instead of only linking to it. A job's whole
// retry story is then one trace: the producer, then every attempt, with the
// backoff delays visible as the gaps between them. The attempts still link to
// each other.
//
// The default keeps each attempt in a trace of its own, linked to the
// producer, as the OpenTelemetry messaging conventions recommend for work
// that may run hours after it was enqueued; with this option such a trace
// stays open as long as the job keeps retrying.
func WithProducerAsParent() Option {
	return optionFunc(func(c *config) { c.producerParent = true })
}
