package route

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/switchover-gw/switchover/translate"
)

func TestTagIDRoundTrip(t *testing.T) {
	tests := []struct{ id, backend string }{
		{"resp_68a1f0c2b1c88190a7e2", "aoai-weu"},
		{"file-AbC123xyz", "aoai-sec"},
		{"batch_abc", "openai.us_east-1"},
		{"noprefixid", "b"},
		{"msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d", "anthropic-main"},
		{"resp_", "x"},
	}
	for _, tt := range tests {
		tagged := TagID(tt.id, tt.backend)
		if tagged == tt.id {
			t.Fatalf("TagID(%q) did not change it", tt.id)
		}
		if p, _ := splitID(tt.id); !strings.HasPrefix(tagged, p) {
			t.Errorf("TagID(%q) = %q lost the prefix %q", tt.id, tagged, p)
		}
		for _, c := range tagged {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				t.Errorf("TagID(%q) = %q has %q, not an id character", tt.id, tagged, c)
			}
		}
		b, orig, ok := UntagID(tagged)
		if !ok || b != tt.backend || orig != tt.id {
			t.Errorf("UntagID(%q) = %q, %q, %v; want %q, %q", tagged, b, orig, ok, tt.backend, tt.id)
		}
		if again := TagID(tagged, "other"); again != tagged {
			t.Errorf("TagID of a tagged id changed it: %q", again)
		}
	}
}

func TestUntagIDLeavesProviderIDs(t *testing.T) {
	for _, id := range []string{"resp_68a1f0c2b1c88190", "file-abc", "chatcmpl-123", "", "so", "resp_so", "resp_so0abc", "resp_soZZ0x", "call_soabc"} {
		if b, orig, ok := UntagID(id); ok || orig != id {
			t.Errorf("UntagID(%q) = %q, %q, %v; want it untouched", id, b, orig, ok)
		}
	}
}

func TestTagIDsInBodies(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"response", `{"id":"resp_1","object":"response","output":[{"id":"msg_1","type":"message"}]}`,
			`{"id":"` + TagID("resp_1", "weu") + `","object":"response","output":[{"id":"msg_1","type":"message"}]}`},
		{"file list", `{"object":"list","data":[{"id":"file-a"},{"id": "file-b"}],"first_id":"file-a","last_id":"file-b"}`,
			`{"object":"list","data":[{"id":"` + TagID("file-a", "weu") + `"},{"id": "` + TagID("file-b", "weu") + `"}],"first_id":"` + TagID("file-a", "weu") + `","last_id":"` + TagID("file-b", "weu") + `"}`},
		{"batch references", `{"id":"batch_1","input_file_id":"file-in","output_file_id":null,"metadata":{"note":"file-x"}}`,
			`{"id":"` + TagID("batch_1", "weu") + `","input_file_id":"` + TagID("file-in", "weu") + `","output_file_id":null,"metadata":{"note":"file-x"}}`},
		{"sse event", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_9\"}}\n\n",
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"" + TagID("resp_9", "weu") + "\"}}\n\n"},
		{"call ids stay", `{"type":"function_call","id":"fc_1","call_id":"call_1"}`, `{"type":"function_call","id":"fc_1","call_id":"call_1"}`},
		{"text that looks like an id", `{"text":"resp_1 \"id\":\"resp_2\""}`, `{"text":"resp_1 \"id\":\"resp_2\""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(TagIDs([]byte(tt.in), "weu")); got != tt.want {
				t.Fatalf("TagIDs =\n%s\nwant\n%s", got, tt.want)
			}
			back, owner, err := UntagIDs(TagIDs([]byte(tt.in), "weu"))
			if err != nil || string(back) != tt.in {
				t.Fatalf("UntagIDs(TagIDs) = %s, %v; want %s", back, err, tt.in)
			}
			if tt.in != tt.want && owner != "weu" {
				t.Fatalf("owner = %q, want weu", owner)
			}
		})
	}
}

func TestUntagIDsConflictingOwners(t *testing.T) {
	body := `{"previous_response_id":"` + TagID("resp_1", "weu") + `","input":[{"type":"input_file","file_id":"` + TagID("file-1", "sec") + `"}]}`
	_, _, err := UntagIDs([]byte(body))
	var oc *OwnerConflictError
	if !errors.As(err, &oc) || oc.First != "weu" || oc.Second != "sec" {
		t.Fatalf("err = %v, want an OwnerConflictError naming weu and sec", err)
	}
}

// TestTaggingReaderAcrossReads tags ids in a stream however its bytes are
// split across reads.
func TestTaggingReaderAcrossReads(t *testing.T) {
	stream := "event: response.created\ndata: {\"response\":{\"id\":\"resp_77\",\"object\":\"response\"}}\n\n" +
		"event: response.output_text.delta\ndata: {\"delta\":\"hi\"}\n\n" +
		"event: response.completed\ndata: {\"response\":{\"id\":\"resp_77\"}}\n\n"
	want := strings.ReplaceAll(stream, "resp_77", TagID("resp_77", "weu"))
	for _, r := range []io.Reader{strings.NewReader(stream), iotest.OneByteReader(strings.NewReader(stream)), iotest.HalfReader(strings.NewReader(stream))} {
		got, err := io.ReadAll(taggingReader(r, "weu"))
		if err != nil || string(got) != want {
			t.Fatalf("got %q, %v\nwant %q", got, err, want)
		}
	}
	// A stream cut mid-line keeps its bytes and its error.
	cut := io.MultiReader(strings.NewReader("data: {\"id\":\"resp_1"), iotest.ErrReader(io.ErrUnexpectedEOF))
	got, err := io.ReadAll(taggingReader(cut, "weu"))
	if err != io.ErrUnexpectedEOF || string(got) != "data: {\"id\":\"resp_1" {
		t.Fatalf("cut stream: %q, %v", got, err)
	}
}

// TestUntagIDsOnlyAtIDMembers is the regression test for a caller's text
// that looks like a tagged id: it is neither rewritten nor taken as an
// owner; ids in arrays of id members are, also pretty-printed.
func TestUntagIDsOnlyAtIDMembers(t *testing.T) {
	tagged := TagID("resp_1", "weu")
	text := `{"input":[{"role":"user","content":"` + tagged + `"}],"metadata":{"note":"` + tagged + `"}}`
	out, owner, err := UntagIDs([]byte(text))
	if err != nil || owner != "" || string(out) != text {
		t.Fatalf("text rewritten: %s, owner %q, %v", out, owner, err)
	}
	f1, f2 := TagID("file-1", "sec"), TagID("file-2", "sec")
	pretty := "{\n  \"vector_store_ids\": [\n    \"" + TagID("vs_1", "sec") + "\"\n  ],\n  \"file_ids\": [\n    \"" + f1 + "\",\n    \"" + f2 + "\"\n  ],\n  \"name\": \"" + f1 + "\"\n}"
	out, owner, err = UntagIDs([]byte(pretty))
	want := "{\n  \"vector_store_ids\": [\n    \"vs_1\"\n  ],\n  \"file_ids\": [\n    \"file-1\",\n    \"file-2\"\n  ],\n  \"name\": \"" + f1 + "\"\n}"
	if err != nil || owner != "sec" || string(out) != want {
		t.Fatalf("got %s (owner %q, %v)\nwant %s", out, owner, err, want)
	}
	// Tagging finds the ids of a pretty-printed list too.
	list := "{\n  \"object\": \"list\",\n  \"data\": [\n    {\n      \"id\": \"file-a\",\n      \"object\": \"file\"\n    }\n  ]\n}"
	if got := string(TagIDs([]byte(list), "weu")); !strings.Contains(got, TagID("file-a", "weu")) {
		t.Fatalf("pretty list not tagged: %s", got)
	}
}

// TestStoredChatRequests: a chat's answer is tagged only when its body
// says "store": true at the top level; a chat body naming an untagged
// chat completion id is not refused for a keyed caller (chat ids are
// tagged in answers, not checked in requests).
func TestStoredChatRequests(t *testing.T) {
	keyed := &Tagger{Tenant: "k:a"}
	for _, tc := range []struct {
		name string
		op   Operation
		body string
		want bool
	}{
		{"store true", ChatCompletions, `{"model":"m","store":true,"messages":[]}`, true},
		{"store true spaced", ChatCompletions, `{"model":"m", "store" : true ,"messages":[]}`, true},
		{"store false", ChatCompletions, `{"model":"m","store":false,"messages":[]}`, false},
		{"no store", ChatCompletions, `{"model":"m","messages":[]}`, false},
		{"store nested", ChatCompletions, `{"model":"m","metadata":{"store":true},"messages":[]}`, false},
		{"store as text", ChatCompletions, `{"model":"m","store":"true","messages":[]}`, false},
		{"not a chat", Completions, `{"model":"m","store":true,"prompt":"x"}`, false},
		{"names a chat id", ChatCompletions, `{"model":"m","store":true,"messages":[{"role":"user","content":"x","id":"chatcmpl-1"}]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewTaggedRequest(tc.op, []byte(tc.body), nil, keyed)
			if err != nil {
				t.Fatalf("NewTaggedRequest: %v", err)
			}
			if r.storedChat != tc.want || r.tagsIDs() != tc.want {
				t.Errorf("storedChat %v, tagsIDs %v, want %v", r.storedChat, r.tagsIDs(), tc.want)
			}
			if tc.want && r.tagsAnswer(translate.Anthropic, translate.OpenAI) {
				t.Error("a translated stored chat is tagged")
			}
		})
	}
	tagged := keyed.TagIDs([]byte(`{"id":"chatcmpl-abc","object":"chat.completion","choices":[{"message":{"tool_calls":[{"id":"call_1"}]}}]}`), "weu")
	if b, orig, ok := UntagID(jsonID(t, tagged)); !ok || b != "weu" || orig != "chatcmpl-abc" || !bytes.Contains(tagged, []byte(`"id":"call_1"`)) {
		t.Errorf("tagged answer: %s", tagged)
	}
}

func jsonID(t *testing.T, b []byte) string {
	t.Helper()
	var v struct{ ID string }
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v.ID
}

// TestLineReaderChainIsTwoReadersInOne checks that a chained line reader
// gives what two line readers, one reading the other, give: each line
// through the first function, then each line of that through the second,
// whatever the reads' sizes.
func TestLineReaderChainIsTwoReadersInOne(t *testing.T) {
	upper := func(line []byte) []byte { return bytes.ToUpper(line) }
	split := func(line []byte) []byte { // one line in, two out
		if bytes.HasPrefix(line, []byte("two:")) {
			return []byte("a\nb" + string(line[len("two:"):]))
		}
		return line
	}
	mark := func(line []byte) []byte { return append([]byte(">"), line...) }
	in := "one\ntwo:x\n\nthree\nunfinished"
	tests := []struct {
		name        string
		first, then func([]byte) []byte
	}{
		{"changed", upper, mark},
		{"split", split, mark},
		{"unchanged", func(l []byte) []byte { return l }, func(l []byte) []byte { return l }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, size := range []int{1, 3, 64} {
				two := &lineReader{r: &lineReader{r: iotest.OneByteReader(strings.NewReader(in)), fn: tt.first}, fn: tt.then}
				want, _ := io.ReadAll(two)
				one := &lineReader{r: &chunked{s: in, n: size}, fn: tt.first}
				one.chain(&lineReader{fn: tt.then})
				got, err := io.ReadAll(one)
				if err != nil || string(got) != string(want) {
					t.Errorf("reads of %d: got %q, %v; want %q", size, got, err, want)
				}
			}
		})
	}
}

// chunked reads s n bytes at a time.
type chunked struct {
	s string
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[k:]
	return k, nil
}
