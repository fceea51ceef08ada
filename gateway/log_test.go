package gateway_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/syncbuf"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// stuckOutput is a log output that blocks every write until released, as
// a stderr nobody reads does.
type stuckOutput struct {
	release chan struct{}
	once    sync.Once
	buf     syncbuf.Buffer
}

func (s *stuckOutput) Write(p []byte) (int, error) {
	<-s.release
	return s.buf.Write(p)
}

func (s *stuckOutput) unblock() { s.once.Do(func() { close(s.release) }) }

// The gateway's own logger is buffered: a request's line reaches the
// output by Serve's return (Close) at the latest, lines are never lost on
// shutdown, and a caller never waits for a slow output.
func TestRequestLogBufferedAndWrittenOutAtShutdown(t *testing.T) {
	var out syncbuf.Buffer
	h := startWith(t, gateway.Options{LogOutput: &out}, []upstreamtest.Step{answer("weu")}, nil, "",
		func(y string) string { return strings.Replace(y, "level: debug", "level: info", 1) })
	if resp, body := h.post("/v1/chat/completions", chat); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	h.stop()
	if err := <-h.done; err != nil {
		t.Fatal(err)
	}
	h.done <- nil // for the cleanup
	logs := out.String()
	for _, want := range []string{`"msg":"request"`, `"status":200`, `"msg":"shutting down: no new connections`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log written out at shutdown has no %s:\n%s", want, logs)
		}
	}
}

// Lines past the buffer while the output is stuck are dropped, counted in
// switchover_log_lines_dropped_total, and the caller does not wait.
func TestLogLinesDroppedWhenOutputStuck(t *testing.T) {
	out := &stuckOutput{release: make(chan struct{})}
	h := startWith(t, gateway.Options{LogOutput: out}, []upstreamtest.Step{answer("weu")}, nil, "")
	t.Cleanup(out.unblock) // before the harness's cleanup, which shuts down
	big := strings.Repeat("x", 1<<20)
	// At most 4 MiB waits besides the write that is stuck (which holds
	// at most as much): of ten lines of over 1 MiB some are dropped.
	for range 10 {
		h.gw.Logger.Info("big", "payload", big)
	}
	if got := metric(t, h.gw, "switchover_log_lines_dropped_total"); got < 1 {
		t.Fatalf("switchover_log_lines_dropped_total = %v, want some", got)
	}
	out.unblock()
	if err := h.gw.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
