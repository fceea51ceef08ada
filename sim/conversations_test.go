package sim

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestConversationsMadeReadUpdatedAndDeleted makes a conversation and
// reads, updates and deletes it, on openai's /v1/ and azure's
// api-version form; ObjectOwner names its deployment.
func TestConversationsMadeReadUpdatedAndDeleted(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, func(d *Deployment) { d.Key = "k" }))
			ep := s.Deployments()[0]
			resp, b := do(t, "POST", responsesURL(ep, "conversations"), `{"metadata":{"topic":"a"}}`, hdrFor(ep))
			var conv struct{ ID, Object string }
			if resp.StatusCode != 200 || json.Unmarshal(b, &conv) != nil || conv.Object != "conversation" || !strings.HasPrefix(conv.ID, "conv_") {
				t.Fatalf("create: %d %s", resp.StatusCode, b)
			}
			if owner, ok := s.ObjectOwner(conv.ID); !ok || owner != "d1" {
				t.Errorf("ObjectOwner(%s) = %q %v", conv.ID, owner, ok)
			}
			for _, c := range []struct{ method, body, want string }{
				{"GET", "", `"topic":"a"`},
				{"POST", `{"metadata":{"topic":"b"}}`, `"topic":"b"`},
				{"GET", "", `"topic":"b"`},
				{"DELETE", "", `"deleted":true`},
			} {
				resp, b := do(t, c.method, responsesURL(ep, "conversations/"+conv.ID), c.body, hdrFor(ep))
				if resp.StatusCode != 200 || !strings.Contains(string(b), c.want) {
					t.Fatalf("%s: %d %s", c.method, resp.StatusCode, b)
				}
			}
			if resp, b := do(t, "GET", responsesURL(ep, "conversations/"+conv.ID), "", hdrFor(ep)); resp.StatusCode != 404 {
				t.Errorf("GET after DELETE: %d %s", resp.StatusCode, b)
			}
		})
	}
}
