package gateway_test

import (
	"bytes"
	"encoding/base32"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/route"
)

// Issue 23, High 1 and Medium 6: stored objects belong to the key (or
// the sharing team) that made them, and an id's backend must be one of
// the route's. Every attack goes through the gateway's listener.

const (
	ownerSecret = "owner-test-secret-0123456789"
	keyA        = "a-key-0123456789abcdef0123456789abcdef"
	keyB        = "b-key-0123456789abcdef0123456789abcdef"
	keyNarrow   = "narrow-key-0123456789ab0123456789abcdef"
	keyRed1     = "red1-key-0123456789abcd0123456789abcdef"
	keyRed2     = "red2-key-0123456789abcd0123456789abcdef"
	keyBlue1    = "blue1-key-0123456789abc0123456789abcdef"
	keyBlue2    = "blue2-key-0123456789abc0123456789abcdef"
	keySonnet   = "sonnet-key-0123456789ab0123456789abcdef"
)

// ownerExtra adds to startProviders' YAML: a pool cheap on aoai-weu
// alone, keys (a key limited to cheap, teams red that shares its objects
// and blue that does not), the object secret, and files and batches
// pinned to aoai-weu.
const ownerExtra = `  - name: cheap
    members: [{backend: aoai-weu, model: gpt-4o-mini}]
  - name: sonnet
    members: [{backend: claude, model: claude-sonnet-4-5}]
keys:
  - {name: sonnet-only, key: ` + keySonnet + `, pools: [sonnet]}
  - {name: a, key: ` + keyA + `}
  - {name: b, key: ` + keyB + `}
  - {name: narrow, key: ` + keyNarrow + `, pools: [cheap], models: [cheap]}
  - {name: red1, key: ` + keyRed1 + `, team: red}
  - {name: red2, key: ` + keyRed2 + `, team: red}
  - {name: blue1, key: ` + keyBlue1 + `, team: blue}
  - {name: blue2, key: ` + keyBlue2 + `, team: blue}
teams:
  - {name: red, share_objects: true}
  - {name: blue}
object_ids: {secret: ` + ownerSecret + `}
pinned:
  - {paths: [files, batches], backend: aoai-weu}
  - {paths: [messages/batches], backend: claude}
`

func startOwners(t *testing.T) *providerEnv {
	t.Helper()
	return startProviders(t, []string{"aoai-weu", "openai"}, nil, ownerExtra)
}

// ownAnswer is a status and a body.
type ownAnswer struct {
	status int
	body   string
}

// ownCall sends method path with key ("" for none) and a JSON body.
func ownCall(t *testing.T, e *providerEnv, method, path, key, body string) ownAnswer {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, e.url+path, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return ownSend(t, req, key)
}

func ownSend(t *testing.T, req *http.Request, key string) ownAnswer {
	t.Helper()
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return ownAnswer{resp.StatusCode, string(b)}
}

// idOf is the "id" of a JSON ownAnswer.
func idOf(t *testing.T, a ownAnswer) string {
	t.Helper()
	var v struct{ ID string }
	if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &v) != nil || v.ID == "" {
		t.Fatalf("no id in %d %s", a.status, a.body)
	}
	return v.ID
}

// upload uploads content as a batch input file with key.
func upload(t *testing.T, e *providerEnv, key, content string) ownAnswer {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "input.jsonl")
	fw.Write([]byte(content))
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, e.url+"/v1/files", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return ownSend(t, req, key)
}

const ownerBatchInput = `{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}}
`

func batchBody(fileID string) string {
	return `{"input_file_id":"` + fileID + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`
}

// notFoundLike checks that a is the gateway's 404 for id, the same body,
// id aside, as for an id that never existed (no oracle).
func notFoundLike(t *testing.T, what string, a ownAnswer, id string, never ownAnswer, neverID string) {
	t.Helper()
	if a.status != http.StatusNotFound {
		t.Errorf("%s: %d %s, want 404", what, a.status, a.body)
		return
	}
	if strings.ReplaceAll(a.body, id, "ID") != strings.ReplaceAll(never.body, neverID, "ID") {
		t.Errorf("%s: the 404 differs from an unknown id's:\n%s\n%s", what, a.body, never.body)
	}
}

// forge is id with its MAC replaced: an id of the same form that no key
// was given.
func forge(id string) string {
	i := strings.Index(id, "s2")
	end := strings.IndexByte(id[i:], '0') + i + 1
	return id[:end] + strings.Repeat("a", 16) + id[end+16:]
}

// TestAnotherKeyCannotReadDeleteCancelOrContinueAStoredResponse: key B
// gets 404 (the body of an unknown id) for key A's response on GET,
// DELETE, cancel, input_items and as previous_response_id, and for A's
// conversation; without a key 401; A still reaches it afterwards.
func TestAnotherKeyCannotReadDeleteCancelOrContinueAStoredResponse(t *testing.T) {
	e := startOwners(t)
	id := idOf(t, ownCall(t, e, "POST", "/v1/responses", keyA, `{"model":"chat-prod","input":"hi"}`))
	fake := forge(id)
	never := ownCall(t, e, "GET", "/v1/responses/"+fake, keyB, "")
	notFoundLike(t, "GET", ownCall(t, e, "GET", "/v1/responses/"+id, keyB, ""), id, never, fake)
	notFoundLike(t, "DELETE", ownCall(t, e, "DELETE", "/v1/responses/"+id, keyB, ""), id, never, fake)
	notFoundLike(t, "cancel", ownCall(t, e, "POST", "/v1/responses/"+id+"/cancel", keyB, ""), id, never, fake)
	notFoundLike(t, "input_items", ownCall(t, e, "GET", "/v1/responses/"+id+"/input_items", keyB, ""), id, never, fake)
	follow := `{"model":"chat-prod","input":"more","previous_response_id":"%s"}`
	neverFollow := ownCall(t, e, "POST", "/v1/responses", keyB, strings.Replace(follow, "%s", fake, 1))
	notFoundLike(t, "previous_response_id", ownCall(t, e, "POST", "/v1/responses", keyB, strings.Replace(follow, "%s", id, 1)), id, neverFollow, fake)
	_, orig, _ := route.UntagID(id)
	if a := ownCall(t, e, "GET", "/v1/responses/"+orig, keyB, ""); a.status != http.StatusNotFound {
		t.Errorf("the provider's own id: %d %s", a.status, a.body)
	}
	if a := ownCall(t, e, "POST", "/v1/responses", keyB, strings.Replace(follow, "%s", orig, 1)); a.status != http.StatusNotFound {
		t.Errorf("the provider's own id as previous_response_id: %d %s", a.status, a.body)
	}
	// A conversation of A's: B's follow-up in it never reaches a backend.
	conv := (&route.Tagger{Signer: route.NewSigner([]byte(ownerSecret)), Tenant: "k:a"}).Tag("conv_0123", "aoai-weu")
	calls := e.sim.Stats()["aoai-weu"].Calls
	neverConv := ownCall(t, e, "POST", "/v1/responses", keyB, `{"model":"chat-prod","input":"x","conversation":"`+forge(conv)+`"}`)
	notFoundLike(t, "conversation", ownCall(t, e, "POST", "/v1/responses", keyB, `{"model":"chat-prod","input":"x","conversation":"`+conv+`"}`), conv, neverConv, forge(conv))
	if after := e.sim.Stats()["aoai-weu"].Calls; after != calls {
		t.Errorf("another key's conversation follow-up reached the backend")
	}
	if a := ownCall(t, e, "GET", "/v1/responses/"+id, "", ""); a.status != http.StatusUnauthorized {
		t.Errorf("without a key: %d", a.status)
	}
	if a := ownCall(t, e, "GET", "/v1/responses/"+id, keyA, ""); a.status != http.StatusOK {
		t.Errorf("the owner after the attempts: %d %s", a.status, a.body)
	}
	if a := ownCall(t, e, "POST", "/v1/responses", keyA, strings.Replace(follow, "%s", id, 1)); a.status != http.StatusOK {
		t.Errorf("the owner's follow-up: %d %s", a.status, a.body)
	}
}

// TestAnotherKeyCannotReadOrDeleteAFileOrBatch: key B gets 404 for key
// A's file (metadata, content, delete) and batch (get, cancel), and for
// a batch made from A's file; the provider's own ids get 404 too.
func TestAnotherKeyCannotReadOrDeleteAFileOrBatch(t *testing.T) {
	e := startOwners(t)
	file := idOf(t, upload(t, e, keyA, ownerBatchInput))
	batch := idOf(t, ownCall(t, e, "POST", "/v1/batches", keyA, batchBody(file)))
	_, rawFile, _ := route.UntagID(file)
	_, rawBatch, _ := route.UntagID(batch)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/files/" + file, ""},
		{"GET", "/v1/files/" + file + "/content", ""},
		{"DELETE", "/v1/files/" + file, ""},
		{"GET", "/v1/batches/" + batch, ""},
		{"POST", "/v1/batches/" + batch + "/cancel", ""},
		{"POST", "/v1/batches", batchBody(file)},
		{"GET", "/v1/files/" + rawFile, ""},
		{"GET", "/v1/batches/" + rawBatch, ""},
		{"POST", "/v1/batches", batchBody(rawFile)},
		{"GET", "/v1/files?after=" + rawFile, ""},
	} {
		if a := ownCall(t, e, c.method, c.path, keyB, c.body); a.status != http.StatusNotFound {
			t.Errorf("%s %s by another key: %d %s", c.method, c.path, a.status, a.body)
		}
	}
	if a := ownCall(t, e, "GET", "/v1/files/"+file, "", ""); a.status != http.StatusUnauthorized {
		t.Errorf("without a key: %d", a.status)
	}
	if a := ownCall(t, e, "GET", "/v1/files/"+file, keyA, ""); a.status != http.StatusOK {
		t.Errorf("the owner's file after the attempts: %d %s", a.status, a.body)
	}
	if a := ownCall(t, e, "GET", "/v1/batches/"+batch, keyA, ""); a.status != http.StatusOK || !strings.Contains(a.body, file) {
		t.Errorf("the owner's batch: %d %s", a.status, a.body)
	}
}

// listIDs lists path with key and returns the ids of its entries.
func listIDs(t *testing.T, e *providerEnv, path, key string) []string {
	t.Helper()
	a := ownCall(t, e, "GET", path, key, "")
	var l struct{ Data []struct{ ID string } }
	if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &l) != nil {
		t.Fatalf("GET %s: %d %s", path, a.status, a.body)
	}
	if strings.Contains(a.body, "switchover_owner") {
		t.Errorf("GET %s shows the owner mark: %s", path, a.body)
	}
	ids := []string{}
	for _, d := range l.Data {
		ids = append(ids, d.ID)
	}
	return ids
}

// TestListsDoNotShowAnotherKeysObjects: GET /v1/batches by each key shows
// its own batches and none of the other's (their metadata carries the
// owner's mark, which no answer shows); GET /v1/files, whose entries
// carry nothing of their owner, shows a key the files its owner index
// records as its own (see ownerlists_test.go); the provider's ids of
// another key's objects appear nowhere.
func TestListsDoNotShowAnotherKeysObjects(t *testing.T) {
	e := startOwners(t)
	fileA := idOf(t, upload(t, e, keyA, ownerBatchInput))
	fileB := idOf(t, upload(t, e, keyB, ownerBatchInput))
	a1 := idOf(t, ownCall(t, e, "POST", "/v1/batches", keyA, batchBody(fileA)))
	var bs []string
	for range 3 {
		bs = append(bs, idOf(t, ownCall(t, e, "POST", "/v1/batches", keyB, batchBody(fileB))))
	}
	a2 := idOf(t, ownCall(t, e, "POST", "/v1/batches", keyA, `{"input_file_id":"`+fileA+`","endpoint":"/v1/chat/completions","completion_window":"24h","metadata":{"note":"mine"}}`))
	if got := listIDs(t, e, "/v1/batches?limit=100", keyA); strings.Join(got, ",") != a2+","+a1 {
		t.Errorf("A's batches: %q, want %q", got, []string{a2, a1})
	}
	if got := listIDs(t, e, "/v1/batches?limit=100", keyB); strings.Join(got, ",") != bs[2]+","+bs[1]+","+bs[0] {
		t.Errorf("B's batches: %q, want %q", got, bs)
	}
	if got := ownCall(t, e, "GET", "/v1/batches/"+a2, keyA, ""); !strings.Contains(got.body, `"metadata":{"note":"mine"}`) {
		t.Errorf("A's batch: %s", got.body)
	}
	_, rawA1, _ := route.UntagID(a1)
	_, rawFile, _ := route.UntagID(fileA)
	for _, path := range []string{"/v1/files", "/v1/files?purpose=batch&limit=5", "/v1/batches"} {
		a := ownCall(t, e, "GET", path, keyB, "")
		if strings.Contains(a.body, rawA1) || strings.Contains(a.body, rawFile) {
			t.Errorf("GET %s names A's objects: %s", path, a.body)
		}
	}
	if got := listIDs(t, e, "/v1/files", keyA); strings.Join(got, ",") != fileA {
		t.Errorf("A's files, whose owner the gateway's index keeps: %q, want %q", got, fileA)
	}
	// A page of B's batches alone ends A's listing: no cursor to go on from.
	a := ownCall(t, e, "GET", "/v1/batches?limit=1&after="+a2, keyA, "")
	if !strings.Contains(a.body, `"data":[]`) || !strings.Contains(a.body, `"has_more":false`) {
		t.Errorf("a page of another key's batches: %s", a.body)
	}
}

// TestRestrictedKeyCannotBatchADisallowedModel: a key limited to pool
// cheap (gpt-4o-mini on aoai-weu) gets 403 model_not_allowed for a batch
// whose input file names gpt-4o, and makes one naming gpt-4o-mini.
func TestRestrictedKeyCannotBatchADisallowedModel(t *testing.T) {
	e := startOwners(t)
	file := idOf(t, upload(t, e, keyNarrow, ownerBatchInput))
	a := ownCall(t, e, "POST", "/v1/batches", keyNarrow, batchBody(file))
	if a.status != http.StatusForbidden || !strings.Contains(a.body, `"model_not_allowed"`) || !strings.Contains(a.body, "gpt-4o") {
		t.Fatalf("a batch of gpt-4o: %d %s", a.status, a.body)
	}
	mini := idOf(t, upload(t, e, keyNarrow, strings.ReplaceAll(ownerBatchInput, `"gpt-4o"`, `"gpt-4o-mini"`)))
	if a := ownCall(t, e, "POST", "/v1/batches", keyNarrow, batchBody(mini)); a.status != http.StatusOK {
		t.Fatalf("a batch of gpt-4o-mini: %d %s", a.status, a.body)
	}
	mixed := idOf(t, upload(t, e, keyNarrow, ownerBatchInput+strings.ReplaceAll(ownerBatchInput, `"gpt-4o"`, `"gpt-4o-mini"`)))
	if a := ownCall(t, e, "POST", "/v1/batches", keyNarrow, batchBody(mixed)); a.status != http.StatusForbidden {
		t.Fatalf("a batch of both: %d %s", a.status, a.body)
	}
}

// TestRestrictedKeyCannotMessageBatchADisallowedModel: a key limited to
// pool sonnet gets 403 model_not_allowed for an Anthropic message batch
// that names another model, and makes one of its own; a key limited to
// pool cheap (not on claude) may make none.
func TestRestrictedKeyCannotMessageBatchADisallowedModel(t *testing.T) {
	e := startOwners(t)
	batch := `{"requests":[{"custom_id":"a","params":{"model":"%s","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}}]}`
	post := func(key, model string) ownAnswer {
		req, _ := http.NewRequest(http.MethodPost, e.url+"/v1/messages/batches", strings.NewReader(strings.Replace(batch, "%s", model, 1)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		return ownSend(t, req, key)
	}
	if a := post(keySonnet, "claude-opus-4-1"); a.status != http.StatusForbidden || !strings.Contains(a.body, `"permission_error"`) || !strings.Contains(a.body, `may not use model \"claude-opus-4-1\"`) {
		t.Errorf("another model: %d %s", a.status, a.body)
	}
	if a := post(keySonnet, "claude-sonnet-4-5"); a.status != http.StatusOK {
		t.Errorf("its own model: %d %s", a.status, a.body)
	}
	if a := post(keyNarrow, "claude-sonnet-4-5"); a.status != http.StatusForbidden {
		t.Errorf("a key whose pools do not reach the pinned backend: %d %s", a.status, a.body)
	}
	if a := post(keyA, "claude-sonnet-4-5"); a.status != http.StatusOK {
		t.Errorf("a key without limits: %d %s", a.status, a.body)
	}
}

// TestCraftedOwnerTagNamingAnotherBackendIsRefused (Medium 6): an id
// correctly signed for the caller but naming a backend outside the
// route (files and batches are pinned to aoai-weu; a Responses call to
// chat-prod) gets 404, and that backend is never called.
func TestCraftedOwnerTagNamingAnotherBackendIsRefused(t *testing.T) {
	e := startOwners(t)
	a := &route.Tagger{Signer: route.NewSigner([]byte(ownerSecret)), Tenant: "k:a"}
	file := idOf(t, upload(t, e, keyA, ownerBatchInput))
	_, raw, _ := route.UntagID(file)
	elsewhere := a.Tag(raw, "openai")
	before := e.sim.Stats()["openai"].Calls
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/files/" + elsewhere, ""},
		{"POST", "/v1/batches", batchBody(elsewhere)},
		{"GET", "/v1/responses/" + a.Tag("resp_0123", "gemini"), ""},
		{"POST", "/v1/responses", `{"model":"chat-prod","input":"x","previous_response_id":"` + a.Tag("resp_0123", "claude") + `"}`},
	} {
		if got := ownCall(t, e, c.method, c.path, keyA, c.body); got.status != http.StatusNotFound {
			t.Errorf("%s %s: %d %s", c.method, c.path, got.status, got.body)
		}
	}
	if after := e.sim.Stats()["openai"].Calls; after != before {
		t.Errorf("the backend outside the pin got %d calls", after-before)
	}
	if got := ownCall(t, e, "POST", "/v1/batches", keyA, batchBody(elsewhere)); !strings.Contains(got.body, elsewhere) {
		t.Errorf("the 404 of an id in the body does not name it: %s", got.body)
	}
	if got := ownCall(t, e, "GET", "/v1/files/"+a.Tag(raw, "aoai-weu"), keyA, ""); got.status != http.StatusOK {
		t.Errorf("the same id signed for its own backend: %d %s", got.status, got.body)
	}
}

// TestForgedOrModifiedOwnerTagIsNotFound: the owner's own id with its
// MAC, backend or provider's part changed gets 404 for the owner too;
// and an id of the unsigned form made before ids were signed reaches no
// key.
func TestForgedOrModifiedOwnerTagIsNotFound(t *testing.T) {
	e := startOwners(t)
	file := idOf(t, upload(t, e, keyA, ownerBatchInput))
	_, raw, _ := route.UntagID(file)
	enc := base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
	weu, use := enc.EncodeToString([]byte("aoai-weu")), enc.EncodeToString([]byte("aoai-use"))
	if !strings.Contains(file, weu) {
		t.Fatalf("%q does not hold aoai-weu's name", file)
	}
	for name, id := range map[string]string{
		"mac":      forge(file),
		"backend":  strings.Replace(file, weu, use, 1),
		"provider": file[:len(file)-1] + "x",
		"unsigned": route.TagID(raw, "aoai-weu"),
	} {
		if a := ownCall(t, e, "GET", "/v1/files/"+id, keyA, ""); a.status != http.StatusNotFound {
			t.Errorf("%s changed (%s): %d %s", name, id, a.status, a.body)
		}
	}
}

// TestTeamSharesObjectsOnlyWhenOptedIn: in team red (share_objects) one
// key reaches another's file; in team blue (not shared) it does not; a
// key of no team reaches neither.
func TestTeamSharesObjectsOnlyWhenOptedIn(t *testing.T) {
	e := startOwners(t)
	red := idOf(t, upload(t, e, keyRed1, ownerBatchInput))
	blue := idOf(t, upload(t, e, keyBlue1, ownerBatchInput))
	for _, c := range []struct {
		key, id string
		want    int
	}{
		{keyRed2, red, http.StatusOK},
		{keyRed1, red, http.StatusOK},
		{keyBlue2, blue, http.StatusNotFound},
		{keyBlue1, blue, http.StatusOK},
		{keyB, red, http.StatusNotFound},
		{keyBlue1, red, http.StatusNotFound},
	} {
		if a := ownCall(t, e, "GET", "/v1/files/"+c.id, c.key, ""); a.status != c.want {
			t.Errorf("key %.6s… on %s: %d %s, want %d", c.key, c.id, a.status, a.body, c.want)
		}
	}
	if a := ownCall(t, e, "POST", "/v1/batches", keyRed2, batchBody(red)); a.status != http.StatusOK {
		t.Errorf("a team mate's batch of a shared file: %d %s", a.status, a.body)
	}
}

// TestNoKeyModeReachesStoredObjectsAsBefore: without keys every caller is
// one tenant: responses, files and batches are reached, lists show them,
// and ids of the unsigned form made before ids were signed still work;
// only an id naming a backend outside the route is refused.
func TestNoKeyModeReachesStoredObjectsAsBefore(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu", "openai"}, nil, "pinned:\n  - {paths: [files, batches], backend: aoai-weu}\n")
	resp := idOf(t, ownCall(t, e, "POST", "/v1/responses", "", `{"model":"chat-prod","input":"hi"}`))
	if a := ownCall(t, e, "GET", "/v1/responses/"+resp, "", ""); a.status != http.StatusOK {
		t.Errorf("GET response: %d %s", a.status, a.body)
	}
	file := idOf(t, upload(t, e, "", ownerBatchInput))
	if a := ownCall(t, e, "GET", "/v1/files", "", ""); a.status != http.StatusOK || !strings.Contains(a.body, file) {
		t.Errorf("list: %d %s", a.status, a.body)
	}
	_, raw, _ := route.UntagID(file)
	if a := ownCall(t, e, "POST", "/v1/batches", "", batchBody(route.TagID(raw, "aoai-weu"))); a.status != http.StatusOK {
		t.Errorf("a batch of an unsigned id: %d %s", a.status, a.body)
	}
	// Medium 6 holds without keys too: an id naming a backend outside the
	// pin is not sent there.
	before := e.sim.Stats()["openai"].Calls
	if a := ownCall(t, e, "POST", "/v1/batches", "", batchBody(route.TagID(raw, "openai"))); a.status != http.StatusNotFound {
		t.Errorf("a batch of an id naming another backend: %d %s", a.status, a.body)
	}
	if after := e.sim.Stats()["openai"].Calls; after != before {
		t.Errorf("the backend outside the pin got %d calls", after-before)
	}
}

// TestListCursorDoesNotUnfilterAList is a regression test: a list whose
// cursor (after=) was the caller's own id was taken for a call on that
// object, passed on unfiltered, and every other key's entries came back
// tagged as the caller's.
func TestListCursorDoesNotUnfilterAList(t *testing.T) {
	e := startOwners(t)
	fileA := idOf(t, upload(t, e, keyA, ownerBatchInput))
	fileB := idOf(t, upload(t, e, keyB, ownerBatchInput))
	fileA2 := idOf(t, upload(t, e, keyA, ownerBatchInput))
	_, rawB, _ := route.UntagID(fileB)
	for _, path := range []string{"/v1/files?after=" + fileA, "/v1/files?before=" + fileA, "/v1/batches?after=" + fileA} {
		a := ownCall(t, e, "GET", path, keyA, "")
		if a.status != http.StatusOK || strings.Contains(a.body, rawB) {
			t.Errorf("GET %s: %d %s", path, a.status, a.body)
		}
		// Only A's own files, which the owner index records, are listed.
		for _, id := range listIDs(t, e, path, keyA) {
			if id != fileA && id != fileA2 {
				t.Errorf("GET %s lists %s, not A's", path, id)
			}
		}
	}
}

// TestModelListShowsOnlyTheKeysOwnPools: GET /v1/models listed every pool
// to every key, so a key limited to cheap learnt the others' pools. It
// lists what the key may use; another pool's entry is 404 as if it did
// not exist; a key without limits sees them all; no key gets 401.
func TestModelListShowsOnlyTheKeysOwnPools(t *testing.T) {
	e := startOwners(t)
	ids := func(key string) []string {
		a := ownCall(t, e, "GET", "/v1/models", key, "")
		if a.status != 200 {
			t.Fatalf("list with %q: %d %s", key, a.status, a.body)
		}
		var v struct{ Data []struct{ ID string } }
		if err := json.Unmarshal([]byte(a.body), &v); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range v.Data {
			out = append(out, m.ID)
		}
		return out
	}
	if got := ids(keyNarrow); !slices.Equal(got, []string{"cheap"}) {
		t.Fatalf("the narrow key lists %v, want only cheap", got)
	}
	if got := ids(keyA); !slices.Contains(got, "chat-prod") || !slices.Contains(got, "cheap") {
		t.Fatalf("a key without limits lists %v, want every pool", got)
	}
	if a := ownCall(t, e, "GET", "/v1/models/chat-prod", keyNarrow, ""); a.status != 404 {
		t.Fatalf("another pool's entry for the narrow key: %d %s, want 404", a.status, a.body)
	}
	if a := ownCall(t, e, "GET", "/v1/models/cheap", keyNarrow, ""); a.status != 200 {
		t.Fatalf("its own pool's entry: %d %s", a.status, a.body)
	}
	if a := ownCall(t, e, "GET", "/v1/models", "", ""); a.status != 401 {
		t.Fatalf("no key: %d, want 401", a.status)
	}
}
