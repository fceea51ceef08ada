package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/route"
)

// Issue 25, section 5: conversations live on the backend that made them
// and belong to the key that made them. Their create names no model, so
// a pinned route says where they are made; every later call goes to the
// backend the id names.

// TestAnotherKeyCannotReachAConversation: a conversation key A made
// (pinned to openai, while chat-prod's first member is aoai-weu) is
// reached by A on GET, POST (metadata) and DELETE, on openai alone; key
// B gets 404 (the body of an unknown id) and reaches no backend, a call
// without a key 401.
func TestAnotherKeyCannotReachAConversation(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai"}, nil, ownerExtra+"  - {paths: [conversations], backend: openai}\n")
	id := idOf(t, ownCall(t, e, "POST", "/v1/conversations", keyA, `{"metadata":{"topic":"a"}}`))
	if owner, _, ok := route.UntagID(id); !ok || owner != "openai" {
		t.Fatalf("conversation id %q: owner %q %v, want openai", id, owner, ok)
	}
	fake := forge(id)
	before := calls(e)
	for _, c := range []struct{ method, body string }{
		{"GET", ""},
		{"POST", `{"metadata":{"topic":"b"}}`},
		{"DELETE", ""},
	} {
		never := ownCall(t, e, c.method, "/v1/conversations/"+fake, keyB, c.body)
		notFoundLike(t, c.method, ownCall(t, e, c.method, "/v1/conversations/"+id, keyB, c.body), id, never, fake)
		if a := ownCall(t, e, c.method, "/v1/conversations/"+id, "", c.body); a.status != http.StatusUnauthorized {
			t.Errorf("%s without a key: %d %s, want 401", c.method, a.status, a.body)
		}
	}
	if after := calls(e); after["aoai-weu"] != before["aoai-weu"] || after["openai"] != before["openai"] {
		t.Errorf("refused calls reached a backend: %v -> %v", before, after)
	}
	for _, c := range []struct{ method, body, want string }{
		{"GET", "", `"topic":"a"`},
		{"POST", `{"metadata":{"topic":"b"}}`, `"topic":"b"`},
		{"DELETE", "", `"deleted":true`},
	} {
		if a := ownCall(t, e, c.method, "/v1/conversations/"+id, keyA, c.body); a.status != http.StatusOK || idOf(t, a) != id || !strings.Contains(a.body, c.want) {
			t.Errorf("the owner's %s: %d %s", c.method, a.status, a.body)
		}
	}
	if after := calls(e); after["aoai-weu"] != before["aoai-weu"] || after["openai"] != before["openai"]+3 {
		t.Errorf("the owner's calls: %v -> %v, want 3 on openai", before, after)
	}
}
