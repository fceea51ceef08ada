package route

import (
	"bytes"
	"encoding/json"
	"errors"
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

// FuzzPeek checks the scanner against encoding/json: for every valid JSON
// object, peek finds the same model and stream, and BodyFor produces valid
// JSON with the model replaced.
func FuzzPeek(f *testing.F) {
	for _, s := range []string{`{"model":"a","stream":true}`, `{"x":[{"model":"b"}],"model":"c"}`, `{"model":"\u00e9\"q"}`, `{}`, `{"stream":false,"messages":[{"content":"}{]["}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		model, _, stream, err := peek(b)
		var obj map[string]json.RawMessage
		if json.Unmarshal(b, &obj) != nil {
			return // invalid JSON: peek may accept or reject, but must not panic
		}
		var wantModel string
		var wantStream *bool
		modelOK := true
		if raw, ok := obj["model"]; ok {
			modelOK = json.Unmarshal(raw, &wantModel) == nil
		}
		if raw, ok := obj["stream"]; ok && string(raw) != "null" {
			var s bool
			if json.Unmarshal(raw, &s) != nil {
				modelOK = false
			}
			wantStream = &s
		}
		if !modelOK {
			if err == nil {
				t.Fatalf("peek accepted %q", b)
			}
			return
		}
		if hasDuplicateKeys(b) {
			return // encoding/json keeps the last; peek may stop at the first
		}
		if err != nil {
			t.Fatalf("peek(%q) = %v", b, err)
		}
		if model != wantModel || (wantStream != nil && stream != *wantStream) {
			t.Fatalf("peek(%q) = %q, %v; want %q, %v", b, model, stream, wantModel, wantStream)
		}
		r, _ := NewRequest(ChatCompletions, b, nil)
		out := r.BodyFor("renamed")
		var obj2 map[string]json.RawMessage
		if err := json.Unmarshal(out, &obj2); err != nil {
			t.Fatalf("BodyFor(%q) = %q: invalid JSON: %v", b, out, err)
		}
		if string(obj2["model"]) != `"renamed"` {
			t.Fatalf("BodyFor(%q) = %q", b, out)
		}
	})
}

func hasDuplicateKeys(b []byte) bool {
	dec := json.NewDecoder(bytesReader(b))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		ks, _ := k.(string)
		if seen[ks] {
			return true
		}
		seen[ks] = true
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
	}
	return false
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
