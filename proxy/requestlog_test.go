package proxy

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/route"
)

// TestRequestLogMatchesSlog checks that RequestLog writes, byte for byte,
// the line slog's own handlers write for the same request, in both
// formats, for the fields every request has and those only some have,
// with values that need quoting or escaping.
func TestRequestLogMatchesSlog(t *testing.T) {
	m := &route.Member{Backend: &route.Backend{Name: "aoai-weu"}}
	served := &route.Report{Pool: "chat", Served: m, Failover: true, Attempts: []route.Attempt{
		{Backend: "aoai-sec", Status: 429, Reason: route.ReasonRateLimited, Duration: 605 * time.Millisecond},
		{Backend: "aoai-weu", Status: 200, Reason: route.ReasonOK, Duration: 1218 * time.Millisecond},
	}}
	tests := []struct {
		name string
		l    logLine
	}{
		{"served", logLine{id: "0123abcd", key: "app", method: "POST", path: "/v1/chat/completions", model: "chat", pool: "chat", stream: true, status: 200, firstByte: 812 * time.Millisecond, bytes: 5120, report: served}},
		{"unknown route", logLine{id: "x1", method: "GET", path: "/v1/nope", status: 404}},
		{"client went away", logLine{id: "x2", method: "POST", path: "/v1/chat/completions", model: "chat", pool: "chat", err: errors.New("context canceled"), clientGone: true, status: 200}},
		{"failed with quotes and newlines", logLine{id: "x3", method: "POST", path: "/v1/chat/completions", status: 502, err: errors.New("backend said \"no\"\nand\tthen = \\ left"), report: &route.Report{}}},
		{"unicode, controls and invalid UTF-8", logLine{id: "x4", method: "POST", path: "/v1/caf\u00e9/\u2028/\x01/\xff/\u00a0/<&>/\x7f", model: "m\u00fcdel", status: 400}},
		{"empty model in a pool", logLine{id: "", method: "POST", path: "/", pool: "p", status: 503}},
	}
	at := time.Date(2026, 12, 1, 11, 48, 52, 123456789, time.UTC)
	for _, format := range []string{"text", "json"} {
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				var fast, want bytes.Buffer
				rl := NewRequestLog(&fast, format, nil)
				var sh slog.Handler = slog.NewTextHandler(&want, nil)
				if format == "json" {
					sh = slog.NewJSONHandler(&want, nil)
				}
				h := &Handler{RequestLog: rl, Logger: slog.New(sh)}
				l := tt.l
				writeLine(h, &l, at)
				h.RequestLog = nil
				l = tt.l
				writeLine(h, &l, at)
				if fast.String() != want.String() {
					t.Fatalf("RequestLog wrote\n%s\nslog wrote\n%s", fast.String(), want.String())
				}
			})
		}
	}
}

// writeLine logs l as finish does, stamped at.
func writeLine(h *Handler, l *logLine, at time.Time) {
	backend := ""
	if l.report != nil && l.report.Served != nil {
		backend = l.report.Served.Backend.Name
	}
	h.writeLine(l, at, backend, 1500*time.Millisecond)
}

// TestRequestLogLevel checks that finish leaves out lines below the
// RequestLog's level and writes warnings at warn.
func TestRequestLogLevel(t *testing.T) {
	var buf bytes.Buffer
	h := &Handler{RequestLog: NewRequestLog(&buf, "text", slog.LevelWarn)}
	h.finish(&logLine{id: "ok", method: "GET", path: "/v1/models", status: 200}, time.Now())
	if buf.Len() != 0 {
		t.Fatalf("info line written at warn: %q", buf.String())
	}
	h.finish(&logLine{id: "bad", method: "POST", path: "/v1/chat/completions", status: 502, err: errors.New("boom")}, time.Now())
	if got := buf.String(); !strings.Contains(got, "level=WARN msg=request request_id=bad") || !strings.Contains(got, "error=boom") {
		t.Fatalf("warn line = %q", got)
	}
}

// FuzzRequestLogMatchesSlog checks the escaping against slog's on any
// string.
func FuzzRequestLogMatchesSlog(f *testing.F) {
	for _, s := range []string{"", "plain", "a b", "a=b", "\"q\"", "\\", "\n\r\t", "\x00\x1f\x7f", "\xff\xfe", "caf\u00e9", "\u2028\u2029", "\u00a0", "<&>", "\U0001F600"} {
		f.Add(s)
	}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		for _, format := range []string{"text", "json"} {
			var fast, want bytes.Buffer
			var sh slog.Handler = slog.NewTextHandler(&want, nil)
			if format == "json" {
				sh = slog.NewJSONHandler(&want, nil)
			}
			h := &Handler{RequestLog: NewRequestLog(&fast, format, nil), Logger: slog.New(sh)}
			l := logLine{id: s, method: s, path: s, model: s, status: 200}
			writeLine(h, &l, at)
			h.RequestLog = nil
			l = logLine{id: s, method: s, path: s, model: s, status: 200}
			writeLine(h, &l, at)
			if fast.String() != want.String() {
				t.Fatalf("%s: RequestLog wrote %q, slog wrote %q", format, fast.String(), want.String())
			}
		}
	})
}
