package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestSlackBody(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	s := &Slack{URL: rcv.URL + "/services/T/B/X"}
	n := sample()
	n.Reason = "5xx <script> & more"
	n.Text = composeText(n)
	if err := s.Send(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	body, h, _ := rcv.request(0)
	if h.Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type %q", h.Get("Content-Type"))
	}
	var m map[string]string
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 {
		t.Fatalf("body %s", body)
	}
	text := m["text"]
	if !strings.HasPrefix(text, "Failover on pool *chat-prod*\n") ||
		!strings.Contains(text, "eastus → westeurope") ||
		!strings.Contains(text, "5xx &lt;script&gt; &amp; more") {
		t.Errorf("text %q", text)
	}
}
