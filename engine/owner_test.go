package engine

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/sim"
)

// ownerAnswer is one reply of the served engine: status, Retry-After, the
// error code and the response id.
type ownerAnswer struct {
	status     int
	retryAfter string
	code, id   string
}

// responses posts a Responses API call (following prev when set) to s
// and returns what it got.
func (s *served) responses(t *testing.T, prev string) ownerAnswer {
	t.Helper()
	body := `{"model":"chat-prod","input":"hi"`
	if prev != "" {
		body += `,"previous_response_id":"` + prev + `"`
	}
	resp, err := http.Post(s.url+"/v1/responses", "application/json", bytes.NewReader([]byte(body+"}")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v struct {
		ID    string `json:"id"`
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	json.Unmarshal(b, &v)
	return ownerAnswer{resp.StatusCode, resp.Header.Get("Retry-After"), v.Error.Code, v.ID}
}

// TestOwnerUnavailableFromConfigCarriesRetryAfter: issue 22's follow-ups
// on a stored response whose region went dark, with the shipped defaults
// and the gateway's recovery probe (every 5 s): the first is refused with
// 503 owner_unavailable once the region is found unresponsive, within
// 10 s, and every one carries a Retry-After of the probe's cadence, not
// the time left on a 60 s trip.
func TestOwnerUnavailableFromConfigCarriesRetryAfter(t *testing.T) {
	clk := fakeclock.New()
	s := serveWith(t, Deps{Clock: clk, Probed: true}, `backends:
  - {name: weu, type: azure, url: %q}
  - {name: sec, type: azure, url: %q}
pools:
  - name: chat-prod
    members: [{backend: weu, priority: 1}, {backend: sec, priority: 2}]
`, "weu", "sec")
	var first ownerAnswer
	for i := range 10 { // weu's history: it answers at once on the test's clock
		if first = s.responses(t, ""); first.status != 200 || first.id == "" {
			t.Fatalf("response %d: %+v", i, first)
		}
	}
	if owner, _, ok := route.UntagID(first.id); !ok || owner != "weu" {
		t.Fatalf("response id %q: owner %q", first.id, owner)
	}
	if err := s.sim.SetFault("weu", sim.Fault{Mode: "blackhole"}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	got := make(chan ownerAnswer, 1)
	go func() { got <- s.responses(t, first.id) }()
	// The follow-up waits on weu: 3 s (weu's slow threshold) and a 2 s
	// health check later, it is refused.
	for _, d := range []time.Duration{3 * time.Second, 2 * time.Second} {
		if err := clk.BlockUntilTimer(ctx, d); err != nil {
			t.Fatal(err)
		}
		clk.Advance(d)
	}
	for i := range 2 {
		var a ownerAnswer
		if i == 0 {
			a = <-got
		} else {
			a = s.responses(t, first.id) // at once: weu is benched
		}
		if a.status != http.StatusServiceUnavailable || a.code != "owner_unavailable" || a.retryAfter != "5" {
			t.Fatalf("follow-up %d: %+v, want 503 owner_unavailable with Retry-After 5", i, a)
		}
	}
}
