package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// Backend keys in mixed case, so that a lower-case copy differs from the
// key (the harness's own keys are in lower case).
const (
	weuMixed = "Weu-Mixed-SECRET-key-42AbC"
	secMixed = "sk-Sec-MIXED-secret-77xYz"
)

// mixedKeys makes the harness's backends use weuMixed and secMixed.
func mixedKeys(t *testing.T) func(string) string {
	t.Setenv("TEST_WEU_MIXED", weuMixed)
	t.Setenv("TEST_SEC_MIXED", secMixed)
	return func(y string) string {
		return strings.NewReplacer("${TEST_WEU_KEY}", "${TEST_WEU_MIXED}", "${TEST_SEC_KEY}", "${TEST_SEC_MIXED}").Replace(y)
	}
}

// credentialOf is the backend credential an upstream request carries.
func credentialOf(r *http.Request) string {
	return strings.TrimPrefix(r.Header.Get("Authorization")+r.Header.Get("Api-Key")+r.Header.Get("X-Api-Key"), "Bearer ")
}

// echoInStream answers 200 with a stream whose error event quotes the
// credential it was sent, as form makes it.
func echoInStream(form func(key string) string) upstreamtest.Step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, form(credentialOf(r)))
	}
}

// echoInBody answers 400 with a JSON error body quoting the credential it
// was sent, as disguise makes it (the result goes into a JSON string).
func echoInBody(disguise func(key string) string) upstreamtest.Step {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`, disguise(credentialOf(r)))
	}
}

// TestKeyEchoInNonJSONStreamErrorEventIsRedacted is the regression test
// of issue 23's item 10 for streams: a backend key inside a stream's
// error event that is not JSON (event: error, data: key=…), or split
// across its data lines, reached the client as it was, on chat and
// Responses streams.
func TestKeyEchoInNonJSONStreamErrorEventIsRedacted(t *testing.T) {
	streams := []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", `{"model":"chat-prod","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"responses", "/v1/responses", `{"model":"chat-prod","stream":true,"input":"hi"}`},
	}
	forms := []struct {
		name string
		form func(key string) string
	}{
		{"non-JSON error event", func(k string) string { return "event: error\ndata: key=" + k + "\n\n" }},
		{"non-JSON data line alone", func(k string) string { return "data: upstream refused key=" + k + "\n\n" }},
		{"lower case", func(k string) string { return "event: error\ndata: key=" + strings.ToLower(k) + "\n\n" }},
		{"split across data lines", func(k string) string {
			return "event: error\ndata: key=" + k[:len(k)/2] + "\ndata: " + k[len(k)/2:] + " refused\n\n"
		}},
		{"JSON error event, escaped", func(k string) string {
			return `data: {"error":{"message":"key ` + strings.ReplaceAll(k, "-", `\u002d`) + `"}}` + "\n\n"
		}},
	}
	for _, st := range streams {
		for _, f := range forms {
			t.Run(st.name+"/"+f.name, func(t *testing.T) {
				h := start(t, []upstreamtest.Step{echoInStream(f.form)}, []upstreamtest.Step{echoInStream(f.form)}, "", mixedKeys(t))
				resp, body := h.post(st.path, st.body)
				if h.weu.Calls()+h.sec.Calls() == 0 {
					t.Fatalf("no upstream was called: %d %s", resp.StatusCode, body)
				}
				checkNoBackendKey(t, body)
				// Without a key, or with another, nothing reaches an upstream.
				for _, auth := range []string{"", "Bearer not-a-key-0123456789abcdef"} {
					before := h.weu.Calls() + h.sec.Calls()
					resp, body := h.post(st.path, st.body, "Authorization", auth)
					if resp.StatusCode != http.StatusUnauthorized || h.weu.Calls()+h.sec.Calls() != before {
						t.Errorf("with Authorization %q: %d %s", auth, resp.StatusCode, body)
					}
				}
			})
		}
	}
}

// TestKeyEchoInDisguisedErrorBodyIsRedacted is the regression test of
// issue 23's item 10 for error bodies: lower-case, upper-case, split
// (…SECRE T-…, or by an escaped line break) and \u002d-escaped copies of
// the backend's key passed the redaction.
func TestKeyEchoInDisguisedErrorBodyIsRedacted(t *testing.T) {
	tests := []struct {
		name     string
		disguise func(key string) string
	}{
		{"lower case", strings.ToLower},
		{"upper case", strings.ToUpper},
		{"split by a space", func(k string) string { return k[:len(k)/2] + " " + k[len(k)/2:] }},
		{"split by an escaped line break", func(k string) string { return k[:5] + `\n` + k[5:] }},
		{"split by an escaped CRLF and a tab", func(k string) string { return k[:3] + `\r\n\t` + k[3:] }},
		{"dash escaped", func(k string) string { return strings.ReplaceAll(k, "-", `\u002d`) }},
		{"every character escaped", func(k string) string {
			var b strings.Builder
			for _, c := range []byte(k) {
				fmt.Fprintf(&b, `\u%04X`, c)
			}
			return b.String()
		}},
		{"upper case, split and escaped", func(k string) string {
			u := strings.ToUpper(k)
			return strings.ReplaceAll(u[:7]+" "+u[7:], "-", `\u002D`)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, []upstreamtest.Step{echoInBody(tc.disguise)}, []upstreamtest.Step{echoInBody(tc.disguise)}, "", mixedKeys(t))
			resp, body := h.post("/v1/chat/completions", chat)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "[redacted]") {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			checkNoBackendKey(t, body)
		})
	}
}

// checkNoBackendKey fails the test if body holds either backend key, or
// a third of one, in any case, escaped or not, once white space is taken
// out.
func checkNoBackendKey(t *testing.T, body string) {
	t.Helper()
	norm := strings.ToLower(strings.NewReplacer(`\u002d`, "-", `\u002D`, "-", " ", "", "\n", "", `\n`, "", `\r`, "", `\t`, "").Replace(body))
	for _, secret := range []string{weuMixed, secMixed} {
		s := strings.ToLower(secret)
		for _, part := range []string{s[:len(s)/3], s[len(s)/3 : 2*len(s)/3], s[2*len(s)/3:]} {
			if strings.Contains(norm, part) {
				t.Fatalf("a piece of %q (%q) reached the client:\n%s", secret, part, body)
			}
		}
	}
}
