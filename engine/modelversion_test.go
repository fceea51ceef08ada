package engine

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/sim"
)

// TestModelVersionRecordedFromPlainAndStreamedAnswers: the model version a
// backend answers with is recorded on the backend and exported, from a
// plain answer's body and from a stream's first event. (The warning when
// a pool's members answer with different versions is the gateway's:
// gateway.TestModelVersionMismatchWarned.)
func TestModelVersionRecordedFromPlainAndStreamedAnswers(t *testing.T) {
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Deployments: []sim.Deployment{
		{Name: "weu", Flavour: sim.Azure, Deployment: "chat", Model: "gpt-4o-2024-08-06"},
		{Name: "sec", Flavour: sim.Azure, Deployment: "chat", Model: "gpt-4o-2024-11-20"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	eps := s.Deployments()
	sv := serveConfig(t, fmt.Sprintf(`backends:
  - {name: weu, type: azure, url: %q}
  - {name: sec, type: azure, url: %q}
pools:
  - name: chat
    members: [{backend: weu, priority: 1}, {backend: sec, priority: 2}]
`, eps[0].URL, eps[1].URL), nil)
	sv.sim = s
	send := func(stream bool) {
		t.Helper()
		resp, err := testClient.Post(sv.url+"/v1/chat/completions", "application/json", strings.NewReader(
			`{"model":"chat","messages":[{"role":"user","content":"hi"}],"stream":`+fmt.Sprint(stream)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("stream=%t: %d", stream, resp.StatusCode)
		}
	}
	if got := sv.engine.Backends["weu"].Model(); got != "" {
		t.Fatalf("weu's version %q before any answer", got)
	}
	send(false)
	if got := sv.engine.Backends["weu"].Model(); got != "gpt-4o-2024-08-06" {
		t.Fatalf("weu's version %q after a plain answer", got)
	}
	sv.fault(t, "weu", string(sim.FaultDown))
	send(true) // streamed: the version is read from the first event
	if got := sv.engine.Backends["sec"].Model(); got != "gpt-4o-2024-11-20" {
		t.Fatalf("sec's version %q after a streamed answer", got)
	}
	for b, v := range map[string]string{"weu": "gpt-4o-2024-08-06", "sec": "gpt-4o-2024-11-20"} {
		if n := metric(t, sv.metrics, "switchover_backend_model_info", "backend", b, "model", v); n != 1 {
			t.Errorf("switchover_backend_model_info of %s %s = %v", b, v, n)
		}
	}
}
