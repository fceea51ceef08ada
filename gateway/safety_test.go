package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// echoCredential answers code with the credential it received quoted in
// its error message, in headers that are relayed (request id, rate
// limits) and in one that is not.
func echoCredential(code int) upstreamtest.Step {
	return func(w http.ResponseWriter, r *http.Request) {
		cred := r.Header.Get("Authorization") + r.Header.Get("Api-Key") + r.Header.Get("X-Api-Key")
		raw := strings.TrimPrefix(cred, "Bearer ")
		w.Header().Set("X-Request-Id", raw)
		w.Header().Set("X-Ratelimit-Echo", "key="+raw)
		w.Header().Set("X-Debug-Credential", cred)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		msg, _ := json.Marshal(fmt.Sprintf("Incorrect request: you sent %s (token %s)", cred, raw))
		fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","code":"echo"}}`, msg)
	}
}

// TestBackendCredentialsNeverRelayed: an upstream that echoes the key or
// the Entra ID token it was sent, in its error message and its headers,
// does not get it to the client, the log or the trace, whether its error
// is passed through or retried until every attempt has failed.
func TestBackendCredentialsNeverRelayed(t *testing.T) {
	const token = "opaque-entra-token-0123456789"
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"access_token": token, "expires_on": fmt.Sprint(time.Now().Add(time.Hour).Unix()),
			"resource": "https://cognitiveservices.azure.com", "token_type": "Bearer",
		})
	}))
	defer idp.Close()
	t.Setenv("IDENTITY_ENDPOINT", idp.URL)
	t.Setenv("IDENTITY_HEADER", "h")
	useEntra := func(y string) string {
		return strings.Replace(y, "    api_key: ${TEST_WEU_KEY}\n", "    entra: {managed_identity: true}\n", 1)
	}
	tests := []struct {
		name       string
		entra      bool
		weu, sec   upstreamtest.Step
		wantStatus int
	}{
		{"openai key in a passed-through 400", false, status(503), echoCredential(400), 400},
		{"azure and openai keys in retried 500s", false, echoCredential(500), echoCredential(500), 500},
		{"entra token in a passed-through 400", true, echoCredential(400), answer("sec"), 400},
		{"entra token in retried 500s", true, echoCredential(500), echoCredential(500), 500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			var mods []func(string) string
			if tc.entra {
				mods = append(mods, useEntra)
			}
			h := startWith(t, gateway.Options{Tracer: tp}, []upstreamtest.Step{tc.weu}, []upstreamtest.Step{tc.sec}, "", mods...)
			resp, body := h.post("/v1/chat/completions", chat)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if !strings.Contains(body, "[redacted]") {
				t.Errorf("the echo was not relayed at all: %s", body)
			}
			var seen strings.Builder
			seen.WriteString(body)
			resp.Header.Write(&seen)
			seen.WriteString(h.logs.String())
			for _, s := range exp.GetSpans() {
				fmt.Fprintf(&seen, "%s %v %v\n", s.Status.Description, s.Attributes, s.Events)
			}
			for _, secret := range []string{weuSecret, secSecret, token} {
				if strings.Contains(seen.String(), secret) {
					t.Errorf("%q reached the client, the log or a span:\n%s", secret, seen.String())
				}
			}
			if resp.Header.Get("X-Debug-Credential") != "" {
				t.Errorf("an unlisted upstream header was relayed")
			}
		})
	}
}
