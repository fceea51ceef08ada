package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestTeamsBody(t *testing.T) {
	rcv := newReceiver(t, http.StatusAccepted) // Workflows answer 202
	s := &Teams{URL: rcv.URL + "/workflows/abc?sig=x"}
	if err := s.Send(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	body, _, _ := rcv.request(0)
	var m struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string  `json:"contentType"`
			ContentURL  *string `json:"contentUrl"`
			Content     struct {
				Schema  string           `json:"$schema"`
				Type    string           `json:"type"`
				Version string           `json:"version"`
				Body    []map[string]any `json:"body"`
			} `json:"content"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "message" || len(m.Attachments) != 1 {
		t.Fatalf("message %s", body)
	}
	a := m.Attachments[0]
	if a.ContentType != "application/vnd.microsoft.card.adaptive" || a.ContentURL != nil ||
		a.Content.Type != "AdaptiveCard" || a.Content.Version != "1.4" || a.Content.Schema == "" {
		t.Fatalf("attachment %s", body)
	}
	if !strings.Contains(string(body), `"contentUrl":null`) {
		t.Errorf("contentUrl not null: %s", body)
	}
	b := a.Content.Body
	if len(b) < 2 || b[0]["type"] != "TextBlock" || b[0]["text"] != "Failover on pool chat-prod" || b[0]["weight"] != "Bolder" ||
		b[1]["type"] != "TextBlock" || !strings.Contains(b[1]["text"].(string), "Check the quota and the model version of westeurope") ||
		b[1]["wrap"] != true {
		t.Errorf("card body %v", b)
	}
	if !strings.Contains(string(body), `{"title":"To","value":"westeurope"}`) {
		t.Errorf("facts missing: %s", body)
	}
}
