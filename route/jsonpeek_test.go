package route

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestPeek(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		model  string
		stream bool
		err    bool
	}{
		{"plain", `{"model":"gpt-4o","messages":[]}`, "gpt-4o", false, false},
		{"stream true", `{"messages":[{"content":"{\"model\":\"x\"}"}],"stream":true,"model":"m"}`, "m", true, false},
		{"stream false", `{"model":"m","stream":false}`, "m", false, false},
		{"stream null", `{"model":"m","stream":null}`, "m", false, false},
		{"nested model ignored", `{"tools":[{"model":"inner"}],"model":"outer"}`, "outer", false, false},
		{"whitespace", " \n{ \"model\" : \"a b\" ,\n \"stream\" : true } ", "a b", true, false},
		{"escaped model", `{"model":"gpt\u002d4o"}`, "gpt-4o", false, false},
		{"escaped quotes in strings", `{"x":"a\\\"b\\","model":"m"}`, "m", false, false},
		{"no model", `{"input":"hi"}`, "", false, false},
		{"empty object", `{}`, "", false, false},
		{"numbers and literals", `{"t":0.5,"n":-1e3,"b":false,"z":null,"model":"m"}`, "m", false, false},
		{"not an object", `["model"]`, "", false, true},
		{"empty", ``, "", false, true},
		{"truncated", `{"model":"m","messages":[`, "", false, true},
		{"unterminated string", `{"model":"m`, "", false, true},
		{"model not a string", `{"model":5}`, "", false, true},
		{"stream not a bool", `{"stream":"yes"}`, "", false, true},
		{"missing colon", `{"model" "m"}`, "", false, true},
		{"missing comma", `{"a":1 "model":"m"}`, "", false, true},
		{"leading comma", `{,"model":"m"}`, "", false, true},
		{"duplicate model", `{"model":"chat-prod","stream":false,"model":"o1-pro"}`, "", false, true},
		{"duplicate model escaped", `{"model":"chat-prod","mod\u0065l":"o1-pro"}`, "", false, true},
		{"duplicate model after stream", `{"stream":true,"model":"a","x":{},"model":"a"}`, "", false, true},
		{"duplicate stream", `{"model":"m","stream":false,"stream":true}`, "", false, true},
		{"duplicate stream escaped", `{"\u0073tream":true,"model":"m","stream":false}`, "", false, true},
		{"model in another case", `{"model":"m","Model":"o1-pro"}`, "", false, true},
		{"stream with a long s", `{"model":"m","\u017ftream":true}`, "", false, true},
		{"escaped model key", `{"mod\u0065l":"m"}`, "m", false, false},
		{"nested duplicates ignored", `{"model":"m","tools":[{"model":"a","model":"b"}]}`, "m", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			model, _, stream, err := peek([]byte(tc.body))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if err != nil && !errors.Is(err, ErrBadBody) {
				t.Fatalf("error %v is not ErrBadBody", err)
			}
			if model != tc.model || stream != tc.stream {
				t.Fatalf("got (%q, %v), want (%q, %v)", model, stream, tc.model, tc.stream)
			}
		})
	}
}

func TestBodyFor(t *testing.T) {
	tests := []struct {
		name, body, model, want string
	}{
		{"same model keeps body", `{"model":"a","x":1}`, "a", `{"model":"a","x":1}`},
		{"rename", `{"x":1, "model" : "a" ,"y":2}`, "gpt-4o", `{"x":1, "model" : "gpt-4o" ,"y":2}`},
		{"insert", `{"input":"hi"}`, "text-embedding-3-small", `{"model":"text-embedding-3-small","input":"hi"}`},
		{"insert into empty", ` { } `, "m", ` {"model":"m" } `},
		{"escape", `{"model":"a"}`, `we"ird`, `{"model":"we\"ird"}`},
		{"empty model keeps body", `{"model":"a"}`, "", `{"model":"a"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRequest(ChatCompletions, []byte(tc.body), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := string(r.BodyFor(tc.model))
			if got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			if string(r.Body) != tc.body {
				t.Fatal("BodyFor modified the original body")
			}
		})
	}
}

// FuzzPeek checks the scanner against encoding/json's own reading of the
// same bytes, duplicate keys included: into a map (the last duplicate
// wins, keys compared exactly) and into a struct (keys matched
// case-insensitively, as a Go upstream reads them). Whenever peek accepts
// a valid JSON object, it must find the model and stream both readings
// find, and BodyFor must produce valid JSON whose model every reading sees
// as replaced. It may reject instead (duplicates, ambiguous keys), but
// never disagree.
func FuzzPeek(f *testing.F) {
	for _, s := range []string{
		`{"model":"a","stream":true}`, `{"x":[{"model":"b"}],"model":"c"}`, `{"model":"\u00e9\"q"}`, `{}`,
		`{"stream":false,"messages":[{"content":"}{]["}]}`,
		`{"model":"chat-prod","stream":false,"model":"o1-pro"}`, `{"model":"a","mod\u0065l":"b"}`,
		`{"model":"a","MODEL":"b"}`, `{"stream":false,"\u017ftream":true}`, "{\"model\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		model, _, stream, err := peek(b)
		var obj map[string]json.RawMessage
		if json.Unmarshal(b, &obj) != nil || obj == nil {
			return // invalid JSON: peek may accept or reject, but must not panic
		}
		if err != nil {
			if !errors.Is(err, ErrBadBody) {
				t.Fatalf("peek(%q) = %v, not ErrBadBody", b, err)
			}
			return
		}
		var wantModel string
		var wantStream bool
		if raw, ok := obj["model"]; ok {
			if json.Unmarshal(raw, &wantModel) != nil {
				t.Fatalf("peek accepted %q whose model encoding/json reads as %s", b, raw)
			}
		}
		if raw, ok := obj["stream"]; ok && string(raw) != "null" {
			if json.Unmarshal(raw, &wantStream) != nil {
				t.Fatalf("peek accepted %q whose stream encoding/json reads as %s", b, raw)
			}
		}
		if model != wantModel || stream != wantStream {
			t.Fatalf("peek(%q) = %q, %v; encoding/json reads %q, %v", b, model, stream, wantModel, wantStream)
		}
		var st struct {
			Model  *string `json:"model"`
			Stream *bool   `json:"stream"`
		}
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("peek accepted %q that a struct cannot hold: %v", b, err)
		}
		if got := deref(st.Model); got != model || (st.Stream != nil && *st.Stream) != stream {
			t.Fatalf("peek(%q) = %q, %v; a struct reads %q, %v", b, model, stream, got, st.Stream)
		}
		r, err := NewRequest(ChatCompletions, b, nil)
		if err != nil {
			t.Fatalf("NewRequest(%q) = %v after peek accepted it", b, err)
		}
		out := r.BodyFor("renamed")
		var obj2 map[string]json.RawMessage
		if err := json.Unmarshal(out, &obj2); err != nil {
			t.Fatalf("BodyFor(%q) = %q: invalid JSON: %v", b, out, err)
		}
		if string(obj2["model"]) != `"renamed"` {
			t.Fatalf("BodyFor(%q) = %q", b, out)
		}
		st.Model = nil
		if json.Unmarshal(out, &st) != nil || deref(st.Model) != "renamed" {
			t.Fatalf("BodyFor(%q) = %q: a struct reads model %q", b, out, deref(st.Model))
		}
		if m, _, _, err := peek(out); err != nil || m != "renamed" {
			t.Fatalf("peek(BodyFor(%q)) = %q, %v", b, m, err)
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// BenchmarkPeek reads a 1 MiB chat body whose model and stream come
// first: peek now scans the rest too, for duplicates.
func BenchmarkPeek(b *testing.B) {
	msg := `{"role":"user","content":"` + strings.Repeat(`lorem ipsum \"quoted\" `, 40) + `"},`
	body := []byte(`{"model":"chat-prod","stream":true,"messages":[` + strings.Repeat(msg, 1<<20/len(msg)) + `{"role":"user","content":"hi"}]}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, err := peek(body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRequestMember(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       string
		ok         bool
	}{
		{"present", `{"model":"m","max_tokens":64}`, "64", true},
		{"escaped key", `{"max\u005ftokens": 7}`, "7", true},
		{"null", `{"max_tokens":null}`, "null", true},
		{"nested only", `{"metadata":{"max_tokens":1}}`, "", false},
		{"absent", `{"model":"m"}`, "", false},
		{"not an object", `[1]`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Request{Body: []byte(tc.body)}
			v, ok := r.Member("max_tokens")
			if ok != tc.ok || string(v) != tc.want {
				t.Errorf("Member = %q %v, want %q %v", v, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestSkipStringFindsTheClosingQuote: skipString looks for quotes alone;
// a quote after an odd number of backslashes is escaped, after an even
// number it closes the string.
func TestSkipStringFindsTheClosingQuote(t *testing.T) {
	tests := []struct {
		in, str string // str: the string skipped, quotes included; "" for an error
	}{
		{`"plain",1`, `"plain"`},
		{`"a \"quoted\" word"}`, `"a \"quoted\" word"`},
		{`"ends in a backslash\\",`, `"ends in a backslash\\"`},
		{`"two \\\\ then \\\" then"]`, `"two \\\\ then \\\" then"`},
		{`"\\\\\\"x"`, `"\\\\\\"`},
		{`"""`, `""`},
		{`"not closed`, ""},
		{`"escaped close\"`, ""},
		{`"\\\"`, ""},
	}
	for _, tt := range tests {
		end, err := skipString([]byte(tt.in), 0)
		switch {
		case tt.str == "" && err == nil:
			t.Errorf("%s: ends at %d, want an error", tt.in, end)
		case tt.str != "" && (err != nil || tt.in[:end] != tt.str):
			t.Errorf("%s: ends at %d (%v), want %s", tt.in, end, err, tt.str)
		}
	}
}
