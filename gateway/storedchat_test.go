package gateway_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/route"
)

// Issue 25, section 5: chat completions made with "store": true live on
// the backend that answered them and belong to the key that made them,
// as Responses do. Every call goes through the gateway's listener to the
// simulator.

// storedChatExtra is ownerExtra with a pool oa-first whose first member
// is openai (chat-prod's is aoai-weu): chats on the two pools are stored
// on different backends.
const storedChatExtra = `  - name: oa-first
    members:
      - {backend: openai, priority: 1, model: gpt-4o-2024-08-06}
      - {backend: aoai-weu, priority: 2, model: gpt-4o}
` + ownerExtra

func startStoredChats(t *testing.T) *providerEnv {
	t.Helper()
	return startProviders(t, []string{"aoai-weu", "openai"}, nil, storedChatExtra)
}

// storeChat makes a chat on model with "store": true as key and returns
// its id as the gateway gave it.
func storeChat(t *testing.T, e *providerEnv, key, model string) string {
	t.Helper()
	return idOf(t, ownCall(t, e, "POST", "/v1/chat/completions", key,
		`{"model":"`+model+`","store":true,"metadata":{"topic":"a"},"messages":[{"role":"user","content":"hi"}]}`))
}

// calls is the calls each backend of the simulator got so far.
func calls(e *providerEnv) map[string]int64 {
	out := map[string]int64{}
	for name, s := range e.sim.Stats() {
		out[name] = s.Calls
	}
	return out
}

// TestAnotherKeyCannotReachAStoredChatCompletion: key B gets 404 (the
// body of an unknown id) for key A's stored chat on GET, POST (update),
// DELETE and messages, and for the provider's own id; none of these reach
// a backend. Without a key 401. A still reaches it afterwards, and the
// update and delete take effect.
func TestAnotherKeyCannotReachAStoredChatCompletion(t *testing.T) {
	e := startStoredChats(t)
	id := storeChat(t, e, keyA, "chat-prod")
	if owner, _, ok := route.UntagID(id); !ok || owner != "aoai-weu" {
		t.Fatalf("stored chat id %q: owner %q %v, want aoai-weu", id, owner, ok)
	}
	fake := forge(id)
	before := calls(e)
	for _, c := range []struct{ method, sub, body string }{
		{"GET", "", ""},
		{"POST", "", `{"metadata":{"topic":"b"}}`},
		{"DELETE", "", ""},
		{"GET", "/messages", ""},
	} {
		never := ownCall(t, e, c.method, "/v1/chat/completions/"+fake+c.sub, keyB, c.body)
		notFoundLike(t, c.method+" "+c.sub, ownCall(t, e, c.method, "/v1/chat/completions/"+id+c.sub, keyB, c.body), id, never, fake)
		if a := ownCall(t, e, c.method, "/v1/chat/completions/"+id+c.sub, "", c.body); a.status != http.StatusUnauthorized {
			t.Errorf("%s %s without a key: %d %s, want 401", c.method, c.sub, a.status, a.body)
		}
	}
	_, orig, _ := route.UntagID(id)
	if a := ownCall(t, e, "GET", "/v1/chat/completions/"+orig, keyB, ""); a.status != http.StatusNotFound {
		t.Errorf("the provider's own id: %d %s", a.status, a.body)
	}
	if after := calls(e); after["aoai-weu"] != before["aoai-weu"] || after["openai"] != before["openai"] {
		t.Errorf("refused calls reached a backend: %v -> %v", before, after)
	}
	if a := ownCall(t, e, "GET", "/v1/chat/completions/"+id, keyA, ""); a.status != http.StatusOK || idOf(t, a) != id || !strings.Contains(a.body, `"topic":"a"`) {
		t.Errorf("the owner's GET: %d %s", a.status, a.body)
	}
	if a := ownCall(t, e, "GET", "/v1/chat/completions/"+id+"/messages", keyA, ""); a.status != http.StatusOK || !strings.Contains(a.body, `"content":"hi"`) {
		t.Errorf("the owner's messages: %d %s", a.status, a.body)
	}
	if a := ownCall(t, e, "POST", "/v1/chat/completions/"+id, keyA, `{"metadata":{"topic":"b"}}`); a.status != http.StatusOK || idOf(t, a) != id || !strings.Contains(a.body, `"topic":"b"`) {
		t.Errorf("the owner's update: %d %s", a.status, a.body)
	}
	if a := ownCall(t, e, "DELETE", "/v1/chat/completions/"+id, keyA, ""); a.status != http.StatusOK || idOf(t, a) != id || !strings.Contains(a.body, `"deleted":true`) {
		t.Errorf("the owner's delete: %d %s", a.status, a.body)
	}
	if a := ownCall(t, e, "GET", "/v1/chat/completions/"+id, keyA, ""); a.status != http.StatusNotFound {
		t.Errorf("GET after the delete: %d %s", a.status, a.body)
	}
}

// TestStoredChatCallsGoToTheBackendThatMadeIt: chats stored on aoai-weu
// and on openai, of the same pool's members, are each read from the
// backend that made them, whichever pool's order would put first.
func TestStoredChatCallsGoToTheBackendThatMadeIt(t *testing.T) {
	e := startStoredChats(t)
	for _, c := range []struct{ model, owner, other string }{
		{"chat-prod", "aoai-weu", "openai"},
		{"oa-first", "openai", "aoai-weu"},
	} {
		id := storeChat(t, e, keyA, c.model)
		if owner, _, _ := route.UntagID(id); owner != c.owner {
			t.Fatalf("a chat on %s was stored on %q, want %s", c.model, owner, c.owner)
		}
		before := calls(e)
		for _, path := range []string{"/v1/chat/completions/" + id, "/v1/chat/completions/" + id + "/messages"} {
			if a := ownCall(t, e, "GET", path, keyA, ""); a.status != http.StatusOK {
				t.Errorf("GET %s: %d %s", path, a.status, a.body)
			}
		}
		after := calls(e)
		if after[c.owner]-before[c.owner] != 2 || after[c.other] != before[c.other] {
			t.Errorf("calls on a chat stored on %s: %v -> %v, want both on %s", c.owner, before, after, c.owner)
		}
	}
}

// TestStoredChatAzurePathsReachTheOwner: Azure's shapes of the calls,
// /openai/v1/chat/completions/{id} and
// /openai/chat/completions/{id}?api-version=..., are owner-routed too.
func TestStoredChatAzurePathsReachTheOwner(t *testing.T) {
	e := startStoredChats(t)
	id := storeChat(t, e, keyA, "chat-prod")
	for _, path := range []string{
		"/openai/v1/chat/completions/" + id,
		"/openai/chat/completions/" + id + "?api-version=2025-03-01-preview",
		"/openai/v1/chat/completions/" + id + "/messages",
	} {
		if a := ownCall(t, e, "GET", path, keyA, ""); a.status != http.StatusOK {
			t.Errorf("owner GET %s: %d %s", path, a.status, a.body)
		}
		if a := ownCall(t, e, "GET", path, keyB, ""); a.status != http.StatusNotFound {
			t.Errorf("another key's GET %s: %d %s", path, a.status, a.body)
		}
	}
}

// TestStreamedStoredChatIsTaggedAndReached: every chunk of a streamed
// chat with "store": true carries the tagged id (but Azure's first, of
// prompt filter results, whose id is empty), which reaches the stored
// chat.
func TestStreamedStoredChatIsTaggedAndReached(t *testing.T) {
	e := startStoredChats(t)
	req, _ := http.NewRequest("POST", e.url+"/v1/chat/completions",
		strings.NewReader(`{"model":"chat-prod","store":true,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+keyA)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var id string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		i := strings.Index(line, `"id":"`)
		if i < 0 {
			t.Fatalf("a chunk without an id: %s", line)
		}
		got := line[i+6:]
		got = got[:strings.IndexByte(got, '"')]
		if got == "" {
			continue // Azure's chunk of prompt filter results
		}
		if id == "" {
			id = got
		}
		if _, _, ok := route.UntagID(got); !ok || got != id {
			t.Fatalf("chunk id %q, want the tagged %q: %s", got, id, line)
		}
	}
	if id == "" {
		t.Fatal("no chunks")
	}
	if a := ownCall(t, e, "GET", "/v1/chat/completions/"+id, keyA, ""); a.status != http.StatusOK {
		t.Errorf("GET of the streamed chat: %d %s", a.status, a.body)
	}
}

// TestUnstoredChatIDIsNotTagged: a chat without "store": true answers
// the provider's id as it is, which calls on stored chats do not take.
func TestUnstoredChatIDIsNotTagged(t *testing.T) {
	e := startStoredChats(t)
	id := idOf(t, ownCall(t, e, "POST", "/v1/chat/completions", keyA, `{"model":"chat-prod","messages":[{"role":"user","content":"hi"}]}`))
	if _, _, ok := route.UntagID(id); ok {
		t.Fatalf("an unstored chat's id was tagged: %s", id)
	}
	if a := ownCall(t, e, "GET", "/v1/chat/completions/"+id, keyA, ""); a.status != http.StatusNotFound {
		t.Errorf("GET of an unstored chat: %d %s", a.status, a.body)
	}
}

// TestListOfStoredChatsIsRefused: GET /v1/chat/completions would list
// every key's stored chats: it gets 404 list_not_supported and reaches
// no backend.
func TestListOfStoredChatsIsRefused(t *testing.T) {
	e := startStoredChats(t)
	storeChat(t, e, keyA, "chat-prod")
	before := calls(e)
	for _, path := range []string{"/v1/chat/completions", "/v1/chat/completions?metadata[topic]=a", "/openai/v1/chat/completions"} {
		a := ownCall(t, e, "GET", path, keyA, "")
		if a.status != http.StatusNotFound || !strings.Contains(a.body, `"code":"list_not_supported"`) {
			t.Errorf("GET %s: %d %s", path, a.status, a.body)
		}
	}
	if after := calls(e); after["aoai-weu"] != before["aoai-weu"] || after["openai"] != before["openai"] {
		t.Errorf("the list reached a backend: %v -> %v", before, after)
	}
}

// TestStoredChatWithoutKeysAndCrossSite: without keys every caller
// reaches a stored chat, but a cross-site browser request to it gets the
// refusal every API route gives.
func TestStoredChatWithoutKeysAndCrossSite(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai"}, nil, "")
	id := storeChat(t, e, "", "chat-prod")
	if a := ownCall(t, e, "GET", "/v1/chat/completions/"+id, "", ""); a.status != http.StatusOK {
		t.Errorf("GET without keys: %d %s", a.status, a.body)
	}
	code, _, body := call(t, e.url, "GET", "/v1/chat/completions/"+id, "", "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site")
	if code != http.StatusForbidden || !strings.Contains(body, `"code":"cross_origin_refused"`) {
		t.Errorf("a cross-site GET: %d %s", code, body)
	}
}

// TestStoredChatOnATranslatingBackendIsNotTagged: a chat with "store":
// true answered by an Anthropic backend (translated) is stored nowhere:
// its id is not tagged, and a call on it gets 404 without reaching a
// backend.
func TestStoredChatOnATranslatingBackendIsNotTagged(t *testing.T) {
	e := startStoredChats(t)
	a := ownCall(t, e, "POST", "/v1/chat/completions", keySonnet,
		`{"model":"sonnet","store":true,"messages":[{"role":"user","content":"hi"}]}`)
	id := idOf(t, a)
	if _, _, ok := route.UntagID(id); ok {
		t.Fatalf("a translated chat's id was tagged: %s", id)
	}
	before := calls(e)
	if a := ownCall(t, e, "GET", "/v1/chat/completions/"+id, keySonnet, ""); a.status != http.StatusNotFound {
		t.Errorf("GET of a translated chat: %d %s", a.status, a.body)
	}
	if after := calls(e); after["claude"] != before["claude"] {
		t.Errorf("the call reached the backend: %v -> %v", before, after)
	}
}

// TestStoredChatMessagesPageWithTheGivenCursor is a regression test: the
// messages' ids come back tagged, and a page's after= naming one went
// upstream as it was, which the backend does not know; it is untagged,
// and api-version (Azure's form) is not sent to the v1 API.
func TestStoredChatMessagesPageWithTheGivenCursor(t *testing.T) {
	e := startStoredChats(t)
	id := idOf(t, ownCall(t, e, "POST", "/v1/chat/completions", keyA,
		`{"model":"chat-prod","store":true,"messages":[{"role":"system","content":"one"},{"role":"user","content":"two"}]}`))
	first := ownCall(t, e, "GET", "/openai/chat/completions/"+id+"/messages?limit=1&api-version=2025-03-01-preview", keyA, "")
	var page struct {
		LastID  string `json:"last_id"`
		HasMore bool   `json:"has_more"`
	}
	if first.status != http.StatusOK || json.Unmarshal([]byte(first.body), &page) != nil || !page.HasMore || !strings.Contains(first.body, `"content":"one"`) {
		t.Fatalf("first page: %d %s", first.status, first.body)
	}
	if _, _, ok := route.UntagID(page.LastID); !ok {
		t.Fatalf("a message id not tagged: %s", page.LastID)
	}
	second := ownCall(t, e, "GET", "/v1/chat/completions/"+id+"/messages?limit=1&after="+page.LastID, keyA, "")
	if second.status != http.StatusOK || !strings.Contains(second.body, `"content":"two"`) {
		t.Errorf("second page: %d %s", second.status, second.body)
	}
	if a := ownCall(t, e, "GET", "/v1/chat/completions/"+id+"/messages?after="+forge(page.LastID), keyA, ""); a.status != http.StatusNotFound {
		t.Errorf("a forged cursor: %d %s", a.status, a.body)
	}
}
