package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStatsCountEveryOutcome(t *testing.T) {
	s := startSim(t, one(Azure, func(d *Deployment) {
		d.Key = "k"
		d.Quota = Quota{RPM: 18} // 3 per 10 s slice
	}))
	ep := s.Deployments()[0]
	key := map[string]string{"api-key": "k"}
	send := func(prompt string, hdr map[string]string) int {
		resp, _ := do(t, http.MethodPost, chatPath(ep), chatBodyFor(ep, prompt, 4), hdr)
		return resp.StatusCode
	}
	steps := []struct {
		prompt string
		hdr    map[string]string
		want   int
	}{
		{"hello", key, 200},                  // 2 + 4 tokens
		{"hello", nil, 401},                  // rejected, not charged
		{"trigger-content-filter", key, 400}, // 6 + 4 tokens, filtered
		{"hi", key, 200},                     // 1 + 4 tokens
		{"hi", key, 429},                     // refused, not charged
	}
	for i, st := range steps {
		if got := send(st.prompt, st.hdr); got != st.want {
			t.Fatalf("step %d: status %d, want %d", i, got, st.want)
		}
	}
	if err := s.SetFault("d1", Fault{Mode: FaultError500}); err != nil {
		t.Fatal(err)
	}
	send("hi", key)
	want := Stats{Region: "testregion", Calls: 6, Answered: 2, Refused: 1, Errors: 1, Filtered: 1, Rejected: 1, Tokens: 6 + 10 + 5, Fault: FaultError500}
	if got := s.Stats()["d1"]; got != want {
		t.Errorf("Stats() = %+v\nwant      %+v", got, want)
	}
	resp, b := do(t, http.MethodGet, s.ControlURL()+"/stats", "", nil)
	var byName map[string]Stats
	if err := json.Unmarshal(b, &byName); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET stats: %d %s", resp.StatusCode, b)
	}
	if byName["d1"] != want {
		t.Errorf("GET /_sim/stats d1 = %+v\nwant %+v", byName["d1"], want)
	}
	resp, b = do(t, http.MethodPost, s.ControlURL()+"/reset", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("reset: %d %s", resp.StatusCode, b)
	}
	if got := s.Stats()["d1"]; got.Calls != 0 || got.Answered != 0 || got.Tokens != 0 || got.Errors != 0 {
		t.Errorf("after reset: %+v", got)
	}
}

func TestClientGoingAwayIsAbandoned(t *testing.T) {
	s, err := Start(context.Background(), one(Azure, func(d *Deployment) { d.Latency = Latency{Median: time.Hour} }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ep := s.Deployments()[0]
	client := &http.Client{Timeout: 100 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	if _, err := client.Post(chatPath(ep), "application/json", strings.NewReader(chatBodyFor(ep, "hi", 3))); err == nil {
		t.Fatal("an hour-long answer arrived")
	}
	eventually(t, "the request to end", func() bool { return s.Stats()["d1"].InFlight == 0 })
	if st := s.Stats()["d1"]; st.Abandoned != 1 || st.Answered != 0 || st.Errors != 0 {
		t.Errorf("stats = %+v, want 1 abandoned", st)
	}
}
