package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/route"
)

// Issue 25, section 5: conversations live on the backend that made them
// and belong to the key that made them. Their create names no model: a
// pinned route says where they are made when there is one; without one,
// the first pool the key may use that has OpenAI or Azure members with
// the Responses API, on the member its selection picks. Every later call
// goes to the backend the id names.

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

// convAnswer is a status, a body and the backend that answered.
type convAnswer struct {
	status  int
	body    string
	backend string
}

// convCall sends method path with key ("" for none), a JSON body and the
// header pairs in hdr.
func convCall(t *testing.T, e *providerEnv, method, path, key, body string, hdr ...string) convAnswer {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.url+path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return convAnswer{resp.StatusCode, string(b), resp.Header.Get(route.HeaderBackend)}
}

// want fails t unless a has status and its body holds every one of subs.
func (a convAnswer) want(t *testing.T, what string, status int, subs ...string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: %d %s, want %d", what, a.status, a.body, status)
	}
	for _, s := range subs {
		if !strings.Contains(a.body, s) {
			t.Fatalf("%s: %s, want %s in it", what, a.body, s)
		}
	}
}

// conversationID is the id of a created conversation, checked to name
// owner.
func conversationID(t *testing.T, a convAnswer, owner string) string {
	t.Helper()
	a.want(t, "create", http.StatusOK, `"object":"conversation"`)
	id := idOf(t, ownAnswer{a.status, a.body})
	if got, _, ok := route.UntagID(id); !ok || got != owner || a.backend != owner {
		t.Fatalf("conversation %q made on %q (tag names %q), want %s", id, a.backend, got, owner)
	}
	return id
}

// itemIDs are the ids of an item list's data.
func itemIDs(t *testing.T, a convAnswer) []string {
	t.Helper()
	var l struct {
		Object string
		Data   []struct{ ID string }
	}
	if err := json.Unmarshal([]byte(a.body), &l); err != nil || l.Object != "list" {
		t.Fatalf("not an item list: %d %s", a.status, a.body)
	}
	var ids []string
	for _, d := range l.Data {
		ids = append(ids, d.ID)
	}
	return ids
}

// TestConversationsWithoutAPinnedRoute: with no pinned route for them
// (the shipped defaults), conversations are made on chat-prod, the first
// pool with OpenAI or Azure members, on its first member; create, read,
// update, items (add, list, read, delete) and delete work through the
// gateway, under /v1/ and /openai/v1/, each on that member alone.
func TestConversationsWithoutAPinnedRoute(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai"}, nil, ownerExtra)
	before := calls(e)
	id := conversationID(t, convCall(t, e, "POST", "/v1/conversations", keyA,
		`{"metadata":{"topic":"a"},"items":[{"type":"message","role":"user","content":"hello"}]}`), "aoai-weu")
	base := "/v1/conversations/" + id
	convCall(t, e, "GET", base, keyA, "").want(t, "GET", http.StatusOK, `"id":"`+id+`"`, `"topic":"a"`)
	convCall(t, e, "GET", "/openai/v1/conversations/"+id, keyA, "").want(t, "GET under /openai/v1/", http.StatusOK, `"id":"`+id+`"`)
	convCall(t, e, "POST", base, keyA, `{"metadata":{"topic":"b"}}`).want(t, "update", http.StatusOK, `"topic":"b"`)

	first := itemIDs(t, convCall(t, e, "GET", base+"/items", keyA, ""))
	if len(first) != 1 {
		t.Fatalf("items after the create: %v, want the one it named", first)
	}
	added := convCall(t, e, "POST", base+"/items", keyA, `{"items":[{"type":"message","role":"assistant","content":"hi there"}]}`)
	added.want(t, "add items", http.StatusOK, `"output_text"`)
	second := itemIDs(t, added)
	if got := itemIDs(t, convCall(t, e, "GET", base+"/items?order=asc", keyA, "")); len(got) != 2 || got[0] != first[0] || got[1] != second[0] {
		t.Fatalf("items in order: %v, want %v then %v", got, first, second)
	}
	convCall(t, e, "GET", base+"/items/"+first[0], keyA, "").want(t, "GET item", http.StatusOK, `"text":"hello"`)
	convCall(t, e, "DELETE", base+"/items/"+first[0], keyA, "").want(t, "DELETE item", http.StatusOK, `"id":"`+id+`"`)
	if got := itemIDs(t, convCall(t, e, "GET", base+"/items", keyA, "")); len(got) != 1 || got[0] != second[0] {
		t.Fatalf("items after a delete: %v, want %v", got, second)
	}

	convCall(t, e, "DELETE", base, keyA, "").want(t, "DELETE", http.StatusOK, `"deleted":true`, `"id":"`+id+`"`)
	convCall(t, e, "GET", base, keyA, "").want(t, "GET after the delete", http.StatusNotFound)
	after := calls(e)
	if after["aoai-weu"]-before["aoai-weu"] != 12 || after["openai"] != before["openai"] {
		t.Errorf("calls: %v -> %v, want all 12 on aoai-weu", before, after)
	}
}

// TestAnotherKeyCannotReachAConversationWithoutAPinnedRoute: key B gets
// 404 (the body of an unknown id) for A's conversation on every call, as
// a Responses create's conversation too; without a key 401; none of
// these reach a backend.
func TestAnotherKeyCannotReachAConversationWithoutAPinnedRoute(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai"}, nil, ownerExtra)
	id := conversationID(t, convCall(t, e, "POST", "/v1/conversations", keyA, `{"items":[{"role":"user","content":"hello"}]}`), "aoai-weu")
	item := itemIDs(t, convCall(t, e, "GET", "/v1/conversations/"+id+"/items", keyA, ""))[0]
	fake := forge(id)
	before := calls(e)
	for _, c := range []struct{ method, sub, body string }{
		{"GET", "", ""},
		{"POST", "", `{"metadata":{"topic":"b"}}`},
		{"DELETE", "", ""},
		{"GET", "/items", ""},
		{"POST", "/items", `{"items":[{"role":"user","content":"mine now"}]}`},
		{"GET", "/items/" + item, ""},
		{"DELETE", "/items/" + item, ""},
	} {
		never := ownCall(t, e, c.method, "/v1/conversations/"+fake+c.sub, keyB, c.body)
		notFoundLike(t, c.method+" "+c.sub, ownCall(t, e, c.method, "/v1/conversations/"+id+c.sub, keyB, c.body), id, never, fake)
		if a := ownCall(t, e, c.method, "/v1/conversations/"+id+c.sub, "", c.body); a.status != http.StatusUnauthorized {
			t.Errorf("%s %s without a key: %d %s, want 401", c.method, c.sub, a.status, a.body)
		}
	}
	for _, ref := range []string{`"` + id + `"`, `{"id":"` + id + `"}`} {
		convCall(t, e, "POST", "/v1/responses", keyB, `{"model":"chat-prod","input":"hi","conversation":`+ref+`}`).
			want(t, "B's Responses create naming A's conversation", http.StatusNotFound)
	}
	if after := calls(e); after["aoai-weu"] != before["aoai-weu"] || after["openai"] != before["openai"] {
		t.Errorf("refused calls reached a backend: %v -> %v", before, after)
	}
	convCall(t, e, "GET", "/v1/conversations/"+id+"/items/"+item, keyA, "").want(t, "A's item afterwards", http.StatusOK, `"text":"hello"`)
}

// TestConversationCreateFailsOverAndStaysWithItsOwner: with chat-prod's
// first member in the sin bin, a create is made on the next (openai);
// once the first is back, calls on the conversation, and a Responses
// create naming it (either form), go to openai alone; with openai in the
// sin bin they get 503 owner_unavailable naming it, and reach no other
// backend.
func TestConversationCreateFailsOverAndStaysWithItsOwner(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai"}, nil, ownerExtra)
	if err := e.gw.ForceBreaker("aoai-weu", true, time.Hour); err != nil {
		t.Fatal(err)
	}
	before := calls(e)
	id := conversationID(t, convCall(t, e, "POST", "/v1/conversations", keyA, `{"metadata":{"topic":"a"}}`), "openai")
	if after := calls(e); after["aoai-weu"] != before["aoai-weu"] {
		t.Fatalf("the create reached the member in the sin bin: %v -> %v", before, after)
	}
	if err := e.gw.ForceBreaker("aoai-weu", false, 0); err != nil {
		t.Fatal(err)
	}

	before = calls(e)
	a := convCall(t, e, "GET", "/v1/conversations/"+id, keyA, "")
	a.want(t, "GET", http.StatusOK, `"topic":"a"`)
	for _, ref := range []string{`"` + id + `"`, `{"id":"` + id + `"}`} {
		r := convCall(t, e, "POST", "/v1/responses", keyA, `{"model":"chat-prod","input":"hi","conversation":`+ref+`}`)
		if r.want(t, "Responses create naming the conversation "+ref, http.StatusOK); r.backend != "openai" {
			t.Fatalf("Responses create naming the conversation served by %q, want openai", r.backend)
		}
	}
	if r := convCall(t, e, "POST", "/v1/responses", keyA, `{"model":"chat-prod","input":"hi"}`); r.backend != "aoai-weu" {
		t.Fatalf("a Responses create naming none served by %q, want chat-prod's first, aoai-weu", r.backend)
	}
	if after := calls(e); after["openai"]-before["openai"] != 3 || after["aoai-weu"]-before["aoai-weu"] != 1 {
		t.Fatalf("calls: %v -> %v, want 3 on openai, 1 on aoai-weu", before, after)
	}

	if err := e.gw.ForceBreaker("openai", true, time.Hour); err != nil {
		t.Fatal(err)
	}
	before = calls(e)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/conversations/" + id, ""},
		{"POST", "/v1/conversations/" + id + "/items", `{"items":[{"role":"user","content":"again"}]}`},
		{"POST", "/v1/responses", `{"model":"chat-prod","input":"hi","conversation":"` + id + `"}`},
	} {
		convCall(t, e, c.method, c.path, keyA, c.body).want(t, c.method+" "+c.path+" with the owner in the sin bin",
			http.StatusServiceUnavailable, "owner_unavailable", "openai")
	}
	if after := calls(e); after["aoai-weu"] != before["aoai-weu"] || after["openai"] != before["openai"] {
		t.Fatalf("calls with the owner in the sin bin: %v -> %v, want none", before, after)
	}
}

// TestConversationsGoToAPoolTheKeyMayUse: a key limited to pool cheap
// (aoai-weu alone) makes its conversations there; a key limited to a
// pool without OpenAI or Azure members (sonnet) gets 403 and reaches no
// backend.
func TestConversationsGoToAPoolTheKeyMayUse(t *testing.T) {
	e := startProviders(t, []string{"openai", "aoai-weu"}, nil, ownerExtra)
	if id := conversationID(t, convCall(t, e, "POST", "/v1/conversations", keyA, `{}`), "openai"); id == "" {
		t.Fatal("no id")
	}
	id := conversationID(t, convCall(t, e, "POST", "/v1/conversations", keyNarrow, `{}`), "aoai-weu")
	convCall(t, e, "GET", "/v1/conversations/"+id, keyNarrow, "").want(t, "the narrow key's GET", http.StatusOK)
	before := calls(e)
	convCall(t, e, "POST", "/v1/conversations", keySonnet, `{}`).want(t, "a key of no pool with conversations", http.StatusForbidden, "model_not_allowed")
	if after := calls(e); after["aoai-weu"] != before["aoai-weu"] || after["openai"] != before["openai"] {
		t.Fatalf("a refused create reached a backend: %v -> %v", before, after)
	}
}

// TestConversationsWithoutKeysRefuseAnotherOrigin: without keys, a
// browser on another site cannot make or read a conversation (403
// cross_origin_refused, as on every API route), while a call with no
// Origin can.
func TestConversationsWithoutKeysRefuseAnotherOrigin(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai"}, nil, "")
	before := calls(e)
	convCall(t, e, "POST", "/v1/conversations", "", `{}`, "Origin", "http://evil.example").
		want(t, "a create from another origin", http.StatusForbidden, "cross_origin_refused")
	if after := calls(e); after["aoai-weu"] != before["aoai-weu"] {
		t.Fatalf("a refused create reached a backend: %v -> %v", before, after)
	}
	id := conversationID(t, convCall(t, e, "POST", "/v1/conversations", "", `{}`), "aoai-weu")
	convCall(t, e, "GET", "/v1/conversations/"+id, "", "", "Origin", "http://evil.example").
		want(t, "a GET from another origin", http.StatusForbidden, "cross_origin_refused")
	convCall(t, e, "GET", "/v1/conversations/"+id, "", "").want(t, "a GET with no Origin", http.StatusOK)
}

// TestConversationsWithNoPoolToKeepThem: with no pool that has an OpenAI
// or Azure member with the Responses API, and no pinned route, a
// conversation call gets 404 saying what is missing.
func TestConversationsWithNoPoolToKeepThem(t *testing.T) {
	e := startProviders(t, []string{"claude"}, nil, "")
	convCall(t, e, "POST", "/v1/conversations", "", `{}`).want(t, "create", http.StatusNotFound, "pinned")
}

// TestUnknownPathsDoNotTakeConversations: unknown_paths forwarding every
// path to openai does not take conversations while a pool can keep them:
// they are made on chat-prod's first member, owner-routed, not forwarded
// unscoped.
func TestUnknownPathsDoNotTakeConversations(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai"}, nil, ownerExtra+"unknown_paths: {backend: openai, paths: [\"*\"]}\n")
	id := conversationID(t, convCall(t, e, "POST", "/v1/conversations", keyA, `{}`), "aoai-weu")
	convCall(t, e, "GET", "/v1/conversations/"+id, keyB, "").want(t, "another key's GET", http.StatusNotFound)
}
