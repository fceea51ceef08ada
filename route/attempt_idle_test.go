package route_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
)

// TestIdleTimeoutFailsOverAStalledPlainBody: a plain answer whose body
// stops after its headers is ended by the backend's idle bound, which
// runs on the attempt's first-byte timer (attempt.armIdle), and the call
// fails over before any of it reached the client.
func TestIdleTimeoutFailsOverAStalledPlainBody(t *testing.T) {
	clk := fakeclock.New()
	stall := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, `{"id":"chatcmpl-1",`)
		w.(http.Flusher).Flush()
		// The idle bound runs while the gateway's read waits on us: move
		// the clock each time it is armed, until the read gives up.
		for clk.BlockUntilTimer(r.Context(), fastTimeout) == nil {
			clk.Advance(fastTimeout)
		}
	}
	e := newEnvClock(t, clk,
		memberSpec{name: "weu", priority: 1, script: []step{stall}, tune: func(b *route.Backend) { b.IdleTimeout = fastTimeout }},
		memberSpec{name: "sec", priority: 2, script: []step{answer("sec")}})
	r, _ := route.NewRequest(route.ChatCompletions, []byte(chatBody), nil)
	resp, rep, err := e.pool.Do(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "sec") {
		t.Fatalf("answer %s, want sec's", b)
	}
	if len(rep.Attempts) != 2 || rep.Attempts[0].Reason != route.ReasonTimeout {
		t.Fatalf("attempts %+v, want weu's timed out, then sec", rep.Attempts)
	}
}
