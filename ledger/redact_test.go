package ledger_test

import (
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
)

// TestRedactBody: each kind of secret docs/operations.md lists is
// replaced, what names it kept; ordinary text is left alone; a cut
// body loses its trailing word and a character cut in two.
func TestRedactBody(t *testing.T) {
	const R = ledger.Redacted
	for _, tc := range []struct {
		name, in, want string
		cut            bool
	}{
		{name: "OpenAI project key", in: `key sk-proj-abcdefghijklmnopqrstuvwxyz0123 ok`, want: `key ` + R + ` ok`},
		{name: "Anthropic key", in: `"sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAA-BBBB"`, want: `"` + R + `"`},
		{name: "gateway key", in: `use sk-so-0123456789ABCDEFGHIJabcdefghijKL.`, want: `use ` + R + `.`},
		{name: "bearer token", in: `Authorization: Bearer eyJhbGciOi.abc-def`, want: `Authorization: Bearer ` + R},
		{name: "AWS access key id", in: `id=AKIAIOSFODNN7EXAMPLE;`, want: `id=` + R + `;`},
		{name: "AWS secret by name", in: `aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`, want: `aws_secret_access_key = ` + R},
		{name: "Google API key", in: `AIzaSyA-1234567890abcdefghijklmnopqrstu`, want: R},
		{name: "Azure hex key", in: `api-key: 0123456789abcdef0123456789ABCDEF`, want: `api-key: ` + R},
		{name: "Azure identifiable key", in: `k ` + strings.Repeat("a", 52) + "JQQJ99" + strings.Repeat("B", 26) + ` end`, want: `k ` + R + ` end`},
		{name: "JSON api_key field", in: `{"api_key": "hunter2hunter2", "n": 1}`, want: `{"api_key": "` + R + `", "n": 1}`},
		{name: "password assignment", in: `password=correcthorse&x=1`, want: `password=` + R + `&x=1`},
		{name: "JWT", in: `t eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlc2ln x`, want: `t ` + R + ` x`},
		{name: "GitHub token", in: `ghp_0123456789abcdefghijABCDEFGHIJklmnop`, want: R},
		{name: "private key", in: "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nb", want: "a\n" + R + "\nb"},
		{name: "private key cut", in: "a -----BEGIN PRIVATE KEY-----\nMIIEabc", want: "a " + R, cut: true},
		{name: "ordinary text", in: `{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"skim the risk-free tasks"}]}`,
			want: `{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"skim the risk-free tasks"}]}`},
		{name: "short sk- word", in: `sk-learn is a library`, want: `sk-learn is a library`},
		{name: "cut mid-secret", in: `my key is sk-proj-abc`, want: `my key is `, cut: true},
		{name: "cut mid-character", in: "ein Café \xc3", want: "ein Café ", cut: true},
		{name: "basic credentials", in: `Basic dXNlcjpwYXNzd29yZA==`, want: `Basic ` + R},
		{name: "cut after a space", in: `done `, want: `done `, cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(ledger.RedactBody([]byte(tc.in), tc.cut)); got != tc.want {
				t.Errorf("RedactBody(%q, %v)\n= %q\nwant %q", tc.in, tc.cut, got, tc.want)
			}
		})
	}
}

// BenchmarkRedactBody is the redaction of a 16 KiB chat body with one
// key in it, which the writer's goroutine pays per kept body.
func BenchmarkRedactBody(b *testing.B) {
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 360) +
		` sk-proj-abcdefghijklmnopqrstuvwxyz0123"}]}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		ledger.RedactBody(body, false)
	}
}

// TestRedactLiterals: the configuration's own secrets are replaced word
// for word, and, in a cut body, a secret's first part at its end.
func TestRedactLiterals(t *testing.T) {
	secrets := []string{"my-team-password-1", "backend-secret-xyz"}
	for _, tc := range []struct {
		name, in, want string
		cut            bool
	}{
		{name: "whole", in: `a my-team-password-1 b my-team-password-1`, want: `a ` + ledger.Redacted + ` b ` + ledger.Redacted},
		{name: "cut after 9 bytes", in: `a backend-s`, want: `a ` + ledger.Redacted, cut: true},
		{name: "cut after 4 bytes is left", in: `a back`, want: `a back`, cut: true},
		{name: "not cut, a prefix stays", in: `a backend-s`, want: `a backend-s`},
		{name: "none", in: `nothing here`, want: `nothing here`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			if got := string(ledger.RedactLiterals(in, secrets, tc.cut)); got != tc.want {
				t.Errorf("RedactLiterals(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if string(in) != tc.in {
				t.Errorf("RedactLiterals changed its input to %q", in)
			}
		})
	}
}
