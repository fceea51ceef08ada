package route

import (
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/translate"
)

func TestEndUser(t *testing.T) {
	tests := []struct {
		name   string
		format translate.Format
		ctype  string
		body   string
		want   string
	}{
		{"chat user", translate.OpenAI, "", `{"model":"m","messages":[{"role":"user","content":"hi"}],"user":"alice"}`, "alice"},
		{"user before the messages, nested user ignored", translate.OpenAI, "", `{"user":"bob","messages":[{"user":"mallory"}]}`, "bob"},
		{"only nested", translate.OpenAI, "", `{"messages":[{"role":"user","user":"mallory"}],"metadata":{"user":"x"}}`, ""},
		{"escapes decoded", translate.OpenAI, "", `{"user":"a\u00e9\"b"}`, `aé"b`},
		{"safety_identifier without user", translate.OpenAI, "", `{"input":"x","safety_identifier":"sid-1","prompt_cache_key":"c"}`, "sid-1"},
		{"user wins over safety_identifier", translate.OpenAI, "", `{"safety_identifier":"sid-1","user":"u-1"}`, "u-1"},
		{"prompt_cache_key is no user", translate.OpenAI, "", `{"input":"x","prompt_cache_key":"c"}`, ""},
		{"not a string", translate.OpenAI, "", `{"user":42}`, ""},
		{"null", translate.OpenAI, "", `{"user":null}`, ""},
		{"the last of two, as decoders keep", translate.OpenAI, "", `{"user":"a","user":"b"}`, "b"},
		{"anthropic metadata.user_id", translate.Anthropic, "", `{"model":"m","metadata":{"user_id":"u-42"},"messages":[]}`, "u-42"},
		{"anthropic ignores user", translate.Anthropic, "", `{"user":"alice","messages":[]}`, ""},
		{"anthropic metadata not an object", translate.Anthropic, "", `{"metadata":"u"}`, ""},
		{"anthropic user_id not a string", translate.Anthropic, "", `{"metadata":{"user_id":{"id":1}}}`, ""},
		{"multipart", translate.OpenAI, "multipart/form-data; boundary=x", `{"user":"alice"}`, ""},
		{"not an object", translate.OpenAI, "", `["user","alice"]`, ""},
		{"truncated", translate.OpenAI, "", `{"user":"ali`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Request{Body: []byte(tc.body), Format: tc.format, ContentType: tc.ctype}
			if got := r.EndUser(); got != tc.want {
				t.Fatalf("EndUser(%s) = %q, want %q", tc.body, got, tc.want)
			}
		})
	}
}

func BenchmarkEndUser(b *testing.B) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 64<<10) + `"}],"user":"alice"}`)
	r := &Request{Body: body}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if r.EndUser() != "alice" {
			b.Fatal("no end user")
		}
	}
}
