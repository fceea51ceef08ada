package proxy

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/route"
)

// BenchmarkRequestLogLine is the cost of one request's log line at the
// default level, written by RequestLog (as the gateway does) and by slog's
// handlers, in text and JSON, against the level that writes none. Compare
// the ns/op with BenchmarkGatewayChat's: nothing is asserted.
func BenchmarkRequestLogLine(b *testing.B) {
	m := &route.Member{Backend: &route.Backend{Name: "aoai-weu"}}
	rep := &route.Report{Pool: "chat", Served: m, Attempts: []route.Attempt{{Backend: "aoai-weu", Status: 200, Reason: route.ReasonOK, Duration: 812 * time.Millisecond}}}
	for _, tt := range []struct {
		name string
		h    slog.Handler
		rl   *RequestLog
	}{
		{"requestlog-text", nil, NewRequestLog(io.Discard, "text", nil)},
		{"requestlog-json", nil, NewRequestLog(io.Discard, "json", nil)},
		{"slog-text", slog.NewTextHandler(io.Discard, nil), nil},
		{"slog-json", slog.NewJSONHandler(io.Discard, nil), nil},
		{"warn", nil, NewRequestLog(io.Discard, "text", slog.LevelWarn)},
	} {
		b.Run(tt.name, func(b *testing.B) {
			h := &Handler{RequestLog: tt.rl}
			if tt.h != nil {
				h.Logger = slog.New(tt.h)
			}
			start := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				l := logLine{id: "0123456789abcdef0123456789abcdef", key: "app", method: "POST", path: "/v1/chat/completions",
					model: "chat", pool: "chat", status: 200, firstByte: 800 * time.Millisecond, bytes: 512, report: rep}
				h.finish(&l, start)
			}
		})
	}
}
