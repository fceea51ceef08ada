package gateway

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/route"
)

// tracing holds the tracer of request and attempt spans. It is also an
// engine observer: each attempt becomes a child span of its request's.
type tracing struct {
	tracer   trace.Tracer
	provider *sdktrace.TracerProvider // ours to shut down; nil otherwise
	enabled  bool
}

// newTracing sets tracing up: tp when given (tests), an OTLP/HTTP exporter
// when the configuration names an endpoint, or no spans at all.
func newTracing(c config.Tracing, tp trace.TracerProvider) (*tracing, error) {
	const name = "github.com/switchover-gw/switchover"
	if tp != nil {
		return &tracing{tracer: tp.Tracer(name), enabled: true}, nil
	}
	if c.Endpoint == "" {
		return &tracing{tracer: noop.NewTracerProvider().Tracer(name)}, nil
	}
	headers := map[string]string{}
	for k, v := range c.Headers {
		headers[k] = v.Value()
	}
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(strings.TrimSuffix(c.Endpoint, "/")+"/v1/traces"),
		otlptracehttp.WithHeaders(headers))
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(semconv.ServiceName(c.ServiceName))
	p := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*c.SampleRatio))),
	)
	return &tracing{tracer: p.Tracer(name), provider: p, enabled: true}, nil
}

// Observe implements route.Observer: an attempt span, with the attempt's
// own start and duration, under the request's span.
func (t *tracing) Observe(e route.Event) {
	if !t.enabled || e.Kind != route.EventAttempt || e.Ctx == nil {
		return
	}
	a := e.Attempt
	end := time.Now()
	start := end.Add(-a.Duration)
	_, span := t.tracer.Start(e.Ctx, "switchover.attempt",
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(start),
		trace.WithAttributes(
			attribute.String("switchover.pool", e.Pool),
			attribute.String("switchover.backend", a.Backend),
			attribute.String("switchover.region", a.Region),
			attribute.Int("switchover.priority", a.Priority),
			attribute.Int("http.response.status_code", a.Status),
			attribute.String("switchover.reason", string(a.Reason)),
			attribute.Bool("switchover.retryable", a.Retryable),
		))
	if a.Retryable {
		span.SetStatus(codes.Error, a.Message)
	}
	span.End(trace.WithTimestamp(end))
}

func (t *tracing) shutdown(ctx context.Context) error {
	if t.provider == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
