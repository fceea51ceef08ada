package proxy

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// propagator carries W3C trace context (and baggage) in and out.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// traceRequest is the stage that starts the request's span, with Tracer
// set; its context goes upstream, and end ends it.
func traceRequest(x *exchange) error {
	if x.h.Tracer != nil {
		x.r, x.lg.span = x.h.startSpan(x.r)
	}
	return nil
}

// startSpan starts the request's span, under the caller's trace when its
// headers carry one, and puts the span's context in the request's headers
// so that upstream calls are its children.
func (h *Handler) startSpan(r *http.Request) (*http.Request, trace.Span) {
	ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := h.Tracer.Start(ctx, "switchover.request",
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("url.path", r.URL.Path),
		))
	propagator.Inject(ctx, propagation.HeaderCarrier(r.Header))
	return r.WithContext(ctx), span
}

func endSpan(l *logLine, backend string) {
	s := l.span
	s.SetAttributes(
		attribute.String("switchover.request_id", l.id),
		attribute.String("switchover.pool", l.pool),
		attribute.String("switchover.model", l.model),
		attribute.Bool("switchover.stream", l.stream),
		attribute.Int("http.response.status_code", l.status),
		attribute.String("switchover.backend", backend),
	)
	if l.report != nil {
		s.SetAttributes(
			attribute.Int("switchover.attempts", len(l.report.Attempts)),
			attribute.Bool("switchover.failover", l.report.Failover),
		)
	}
	if l.key != "" {
		s.SetAttributes(attribute.String("switchover.key", l.key))
		if l.who != nil && l.who.Team != "" {
			s.SetAttributes(attribute.String("switchover.team", l.who.Team))
		}
	}
	if l.refused != "" {
		s.SetAttributes(attribute.String("switchover.refused", l.refused))
	}
	if u := l.usage; u.Known {
		// OpenTelemetry's GenAI attribute names for the tokens.
		s.SetAttributes(
			attribute.Int64("gen_ai.usage.input_tokens", u.Prompt),
			attribute.Int64("gen_ai.usage.output_tokens", u.Completion),
		)
		if u.Model != "" {
			s.SetAttributes(attribute.String("gen_ai.response.model", u.Model))
		}
		if l.priced {
			s.SetAttributes(attribute.Float64("switchover.cost_usd", l.cost))
		}
	}
	if l.status >= 500 || (l.err != nil && !l.clientGone) {
		msg := ""
		if l.err != nil {
			msg = l.err.Error()
		}
		s.SetStatus(codes.Error, msg)
	}
	s.End()
}
