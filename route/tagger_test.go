package route

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestSignedTagRoundTrip(t *testing.T) {
	a := &Tagger{Signer: NewSigner([]byte("secret-one-0123456789")), Tenant: "k:app"}
	for _, id := range []string{"resp_68a1f0c2b1c88190a7e2", "file-AbC123xyz", "batch_abc", "noprefixid", "resp_so0abc", "file-s2abc"} {
		tagged := a.Tag(id, "aoai-weu")
		for _, c := range tagged {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				t.Errorf("Tag(%q) = %q has %q, not an id character", id, tagged, c)
			}
		}
		if len(tagged) > len(id)+40 {
			t.Errorf("Tag(%q) = %q: %d characters longer", id, tagged, len(tagged)-len(id))
		}
		b, orig, ok, err := a.Untag(tagged)
		if !ok || err != nil || b != "aoai-weu" || orig != id {
			t.Errorf("Untag(%q) = %q, %q, %v, %v; want aoai-weu, %q", tagged, b, orig, ok, err, id)
		}
		if again := a.Tag(tagged, "aoai-weu"); again != tagged {
			t.Errorf("Tag of its own tag changed it: %q", again)
		}
	}
}

// TestAnotherTenantsTagIsUnknown: a tag signed for one key is refused for
// another, for a team it does not share with, and under another secret;
// a team's tag is reached by its members while it shares; an unsigned
// tag only by an Open tagger.
func TestAnotherTenantsTagIsUnknown(t *testing.T) {
	s := NewSigner([]byte("secret-one-0123456789"))
	a := &Tagger{Signer: s, Tenant: "k:a"}
	id := a.Tag("file-abc", "weu")
	refused := map[string]*Tagger{
		"another key":    {Signer: s, Tenant: "k:b"},
		"another secret": {Signer: NewSigner([]byte("secret-two-0123456789")), Tenant: "k:a"},
		"a team":         {Signer: s, Tenant: "t:team", Readers: []string{"k:c"}},
	}
	for name, tg := range refused {
		var u *UnknownIDError
		if _, _, _, err := tg.Untag(id); !errors.As(err, &u) || u.ID != id {
			t.Errorf("%s: %v, want an UnknownIDError", name, err)
		}
	}
	// Rotation: the old secret still checks.
	if _, _, _, err := (&Tagger{Signer: NewSigner([]byte("secret-two-0123456789"), []byte("secret-one-0123456789")), Tenant: "k:a"}).Untag(id); err != nil {
		t.Errorf("previous secret: %v", err)
	}
	team := &Tagger{Signer: s, Tenant: "t:team", Readers: []string{"k:a"}}
	shared := team.Tag("file-x", "weu")
	if _, _, _, err := (&Tagger{Signer: s, Tenant: "t:team", Readers: []string{"k:b"}}).Untag(shared); err != nil {
		t.Errorf("a team member: %v", err)
	}
	if _, _, _, err := team.Untag(id); err != nil {
		t.Errorf("a key's own object, its team sharing: %v", err)
	}
	unsigned := TagID("file-abc", "weu")
	if _, _, _, err := a.Untag(unsigned); err == nil {
		t.Errorf("an unsigned tag was reached with a key")
	}
	if b, _, _, err := (&Tagger{Open: true}).Untag(unsigned); err != nil || b != "weu" {
		t.Errorf("an unsigned tag without keys: %q %v", b, err)
	}
}

// TestForgedTagIsUnknown: a tag whose backend, MAC or provider's id was
// changed is refused.
func TestForgedTagIsUnknown(t *testing.T) {
	a := &Tagger{Signer: NewSigner([]byte("secret-one-0123456789")), Tenant: "k:a"}
	id := a.Tag("batch_abc", "weu")
	other := strings.Replace(id, ownerEncoding.EncodeToString([]byte("weu")), ownerEncoding.EncodeToString([]byte("use")), 1)
	mac := id[strings.Index(id, "0")+1:][:macChars]
	flipped := strings.Replace(id, mac, strings.Repeat("a", macChars), 1)
	for name, forged := range map[string]string{"backend": other, "mac": flipped, "provider id": id + "x"} {
		if forged == id {
			t.Fatalf("%s: not changed", name)
		}
		if _, _, _, err := a.Untag(forged); err == nil {
			t.Errorf("%s changed: %q reached", name, forged)
		}
	}
}

// TestRawStoredIDsInRequestsAreUnknownWithKeys: a provider's id of a
// stored object in a body or a path is refused with a key (the gateway
// never gives one out), passed on without.
func TestRawStoredIDsInRequestsAreUnknownWithKeys(t *testing.T) {
	a := &Tagger{Tenant: "k:a"}
	body := []byte(`{"model":"m","previous_response_id":"resp_raw"}`)
	if _, _, err := a.UntagIDs(body); err == nil {
		t.Errorf("a raw previous_response_id was passed with a key")
	}
	if _, _, _, err := a.UntagRef("file-raw"); err == nil {
		t.Errorf("a raw file id was passed with a key")
	}
	if out, _, err := (&Tagger{Open: true}).UntagIDs(body); err != nil || string(out) != string(body) {
		t.Errorf("without keys: %s %v", out, err)
	}
	if _, _, _, err := a.UntagRef("chatcmpl-1"); err != nil {
		t.Errorf("an id of no stored object: %v", err)
	}
}

func TestListAnswersKeepNoEntryWithAKey(t *testing.T) {
	list := `{"object":"list","data":[{"id":"file-a","object":"file"}],"first_id":"file-a","last_id":"file-a","has_more":true}`
	got := string((&Tagger{Tenant: "k:a", List: true}).answer(context.Background(), []byte(list), "weu", 200))
	if got != `{"data":[],"first_id":null,"has_more":false,"last_id":null,"object":"list"}` {
		t.Errorf("filtered list: %s", got)
	}
	anthropic := `{"data":[{"id":"msgbatch_1"}],"has_more":false,"first_id":"msgbatch_1","last_id":"msgbatch_1"}`
	if got := string((&Tagger{Tenant: "k:a", List: true}).answer(context.Background(), []byte(anthropic), "c", 200)); strings.Contains(got, "msgbatch") {
		t.Errorf("Anthropic list: %s", got)
	}
	open := string((&Tagger{Open: true, List: true}).answer(context.Background(), []byte(list), "weu", 200))
	if !strings.Contains(open, `"id":"file-s2`) {
		t.Errorf("without keys the list is kept and tagged: %s", open)
	}
	one := `{"id":"file-a","object":"file"}`
	if got := string((&Tagger{Tenant: "k:a", List: true}).answer(context.Background(), []byte(one), "weu", 200)); !strings.Contains(got, "file-s2") {
		t.Errorf("an object that is not a list: %s", got)
	}
}

// TestListsKeepTheCallersMarkedEntries: an object made with a key's mark
// in its metadata is kept in that key's lists (and its team's readers'),
// without the mark; another key's, and entries with no mark, are not;
// a single object's answer loses its mark.
func TestListsKeepTheCallersMarkedEntries(t *testing.T) {
	s := NewSigner([]byte("secret-one-0123456789"))
	a := &Tagger{Signer: s, Tenant: "k:a"}
	b := &Tagger{Signer: s, Tenant: "k:b"}
	made := a.Mark([]byte(`{"input_file_id":"file-1","metadata":{"note":"x"}}`))
	var v struct{ Metadata map[string]string }
	if err := json.Unmarshal(made, &v); err != nil || v.Metadata["note"] != "x" || v.Metadata[markKey] == "" {
		t.Fatalf("marked body: %s", made)
	}
	if got := string(b.Mark([]byte(`{"metadata":{"switchover_owner":"forged"}}`))); strings.Contains(got, "forged") {
		t.Errorf("a caller's own mark was kept: %s", got)
	}
	entryA := `{"id":"batch_a","metadata":{"note":"x","switchover_owner":"` + v.Metadata[markKey] + `"}}`
	list := `{"object":"list","data":[` + entryA + `,{"id":"batch_n","metadata":null},{"id":"batch_b","metadata":{"switchover_owner":"zzzzzzzzzzzzzzzz"}}],"first_id":"batch_a","last_id":"batch_b","has_more":true}`
	a.List = true
	got := string(a.answer(context.Background(), []byte(list), "weu", 200))
	if strings.Contains(got, markKey) || strings.Contains(got, "batch_n") || strings.Contains(got, "batch_b") || !strings.Contains(got, `"has_more":true`) || !strings.Contains(got, `"note":"x"`) {
		t.Errorf("A's list: %s", got)
	}
	if n := strings.Count(got, a.Tag("batch_a", "weu")); n != 3 { // the entry, first_id, last_id
		t.Errorf("A's entry and cursors: %d in %s", n, got)
	}
	b.List = true
	if got := string(b.answer(context.Background(), []byte(list), "weu", 200)); strings.Contains(got, "batch_") || !strings.Contains(got, `"has_more":false`) {
		t.Errorf("B's list: %s", got)
	}
	team := &Tagger{Signer: s, Tenant: "t:red", Readers: []string{"k:a"}, List: true}
	if got := string(team.answer(context.Background(), []byte(list), "weu", 200)); !strings.Contains(got, "batch_") {
		t.Errorf("a key's own entry once its team shares: %s", got)
	}
	if got := string((&Tagger{Signer: s, Tenant: "k:a"}).answer(context.Background(), []byte(entryA), "weu", 200)); strings.Contains(got, markKey) {
		t.Errorf("an object's answer shows the mark: %s", got)
	}
}

// TestKeyedRequestWithoutIDsAllocatesNothingToUntag guards the cost of
// checking every request body for ids while keys are required: a body
// that names no object costs no allocation (a string per member took
// four a chat request), and a tagged id in an array is still found.
func TestKeyedRequestWithoutIDsAllocatesNothingToUntag(t *testing.T) {
	tg := &Tagger{Signer: NewSigner([]byte("secret-one-0123456789")), Tenant: "k:app"}
	chat := []byte(`{"model":"chat-prod","messages":[{"role":"user","content":"hello"},{"role":"assistant","content":["hi"]}],"stream":false}`)
	calls := []byte(`{"model":"chat-prod","messages":[{"role":"assistant","content":"hi","tool_calls":[{"id":"call_1","type":"function"}]}]}`)
	for _, body := range [][]byte{chat, calls} {
		out, owner, _, err := tg.UntagBody(body)
		if err != nil || owner != "" || string(out) != string(body) {
			t.Fatalf("UntagBody = %s, %q, %v; want the body as it is", out, owner, err)
		}
	}
	tagged := tg.Tag("file-abc", "weu")
	ids := []byte(`{"model":"m","input":[{"x":1}],"file_ids":["` + tagged + `"]}`)
	if out, owner, _, err := tg.UntagBody(ids); err != nil || owner != "weu" || string(out) != `{"model":"m","input":[{"x":1}],"file_ids":["file-abc"]}` {
		t.Fatalf("UntagBody = %s, %q, %v; want file-abc of weu", out, owner, err)
	}
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	if n := testing.AllocsPerRun(100, func() { tg.UntagBody(chat) }); n != 0 {
		t.Fatalf("UntagBody of a body without ids made %v allocations, want 0", n)
	}
}
