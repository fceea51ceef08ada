package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

// endpointCall is one call of an endpoint beyond chat, in raw HTTP.
type endpointCall struct {
	name, method, path, body string
	multipart                bool // body is ignored; a small form with a file is sent
}

// endpointCalls are calls of every endpoint beyond chat for a flavour,
// relative to the endpoint URL.
func endpointCalls(fl Flavour) []endpointCall {
	switch fl {
	case Anthropic:
		return []endpointCall{
			{"count_tokens", "POST", "/v1/messages/count_tokens", `{"model":"chat-prod","messages":[{"role":"user","content":"hi"}]}`, false},
			{"message batches create", "POST", "/v1/messages/batches", `{"requests":[{"custom_id":"a","params":{"model":"chat-prod","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}}]}`, false},
			{"message batches list", "GET", "/v1/messages/batches", "", false},
		}
	case Azure:
		v := "?api-version=" + testAPIVersion
		return []endpointCall{
			{"responses", "POST", "/openai/responses" + v, `{"model":"chat-prod","input":"hi"}`, false},
			{"responses v1", "POST", "/openai/v1/responses", `{"model":"chat-prod","input":"hi"}`, false},
			{"files list", "GET", "/openai/files" + v, "", false},
			{"files upload v1", "POST", "/openai/v1/files", "", true},
			{"batches list", "GET", "/openai/batches" + v, "", false},
			{"transcriptions", "POST", "/openai/deployments/chat-prod/audio/transcriptions" + v, "", true},
			{"speech", "POST", "/openai/deployments/chat-prod/audio/speech" + v, `{"input":"hi","voice":"alloy"}`, false},
			{"images", "POST", "/openai/deployments/chat-prod/images/generations" + v, `{"prompt":"hi"}`, false},
		}
	}
	return []endpointCall{
		{"responses", "POST", "/responses", `{"model":"chat-prod","input":"hi"}`, false},
		{"files list", "GET", "/files", "", false},
		{"files upload", "POST", "/files", "", true},
		{"batches list", "GET", "/batches", "", false},
		{"transcriptions", "POST", "/audio/transcriptions", "", true},
		{"speech", "POST", "/audio/speech", `{"model":"chat-prod","input":"hi","voice":"alloy"}`, false},
		{"images", "POST", "/images/generations", `{"model":"chat-prod","prompt":"hi"}`, false},
		{"moderations", "POST", "/moderations", `{"input":"hi"}`, false},
	}
}

func sendEndpointCall(t *testing.T, ep Endpoint, c endpointCall, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	body := c.body
	h := map[string]string{}
	for k, v := range hdr {
		h[k] = v
	}
	if c.multipart {
		var ct string
		body, ct = multipartBody(t, map[string]string{"model": "chat-prod", "purpose": "user_data"}, "file", "a.wav", []byte("abc"))
		h["Content-Type"] = ct
	}
	return do(t, c.method, ep.URL+c.path, body, h)
}

func keyHeaders(fl Flavour, key string) map[string]string {
	switch fl {
	case Anthropic:
		return map[string]string{"X-Api-Key": key, "Anthropic-Version": "2023-06-01"}
	case Azure:
		return map[string]string{"Api-Key": key}
	}
	return map[string]string{"Authorization": "Bearer " + key}
}

// TestEveryEndpointFacesFaultsKeysAndStats checks that each endpoint beyond
// chat answers with the right key, is refused with a wrong one, is refused
// by the down fault with the flavour's 5xx, and is counted in the stats
// and metrics like chat.
func TestEveryEndpointFacesFaultsKeysAndStats(t *testing.T) {
	downStatus := map[Flavour]int{OpenAI: 503, Azure: 503, Anthropic: 529}
	for _, fl := range []Flavour{OpenAI, Azure, Anthropic} {
		for _, c := range endpointCalls(fl) {
			t.Run(string(fl)+"/"+c.name, func(t *testing.T) {
				s := startSim(t, one(fl, func(d *Deployment) { d.Key = "right" }))
				ep := s.Deployments()[0]
				if resp, b := sendEndpointCall(t, ep, c, keyHeaders(fl, "right")); resp.StatusCode != 200 {
					t.Fatalf("with the key: %d %s", resp.StatusCode, b)
				}
				if resp, b := sendEndpointCall(t, ep, c, keyHeaders(fl, "wrong")); resp.StatusCode != 401 {
					t.Errorf("wrong key: %d %s, want 401", resp.StatusCode, b)
				}
				if err := s.SetFault("d1", Fault{Mode: FaultDown}); err != nil {
					t.Fatal(err)
				}
				if resp, b := sendEndpointCall(t, ep, c, keyHeaders(fl, "right")); resp.StatusCode != downStatus[fl] {
					t.Errorf("down: %d %s, want %d", resp.StatusCode, b, downStatus[fl])
				}
				if st := s.Stats()["d1"]; st.Calls != 3 || st.Answered != 1 || st.Rejected != 1 || st.Errors != 1 || st.InFlight != 0 {
					t.Errorf("stats = %+v, want 3 calls: 1 answered, 1 rejected, 1 error", st)
				}
				_, m := do(t, "GET", s.ControlURL()+"/metrics", "", nil)
				if !strings.Contains(string(m), `switchover_sim_requests_total{deployment="d1",region="testregion",result="ok"} 1`) {
					t.Errorf("metrics do not count the call:\n%s", m)
				}
			})
		}
	}
}

func TestEndpointRouting(t *testing.T) {
	s := startSim(t, Config{Seed: 1, Deployments: []Deployment{
		{Name: "az", Deployment: "chat-prod"},
		{Name: "oa", Flavour: OpenAI, Deployment: "chat-prod"},
		{Name: "an", Flavour: Anthropic, Deployment: "chat-prod"},
	}})
	az, oa, an := s.Deployments()[0], s.Deployments()[1], s.Deployments()[2]
	ah := map[string]string{"Anthropic-Version": "2023-06-01"}
	tests := []struct {
		name       string
		method     string
		url        string
		hdr        map[string]string
		wantStatus int
		wantBody   string
	}{
		{"azure responses without api-version", "POST", az.URL + "/openai/responses", nil, 404, "Resource not found"},
		{"azure responses under a deployment", "POST", az.URL + "/openai/deployments/chat-prod/responses?api-version=1", nil, 404, "Resource not found"},
		{"azure audio without a deployment", "POST", az.URL + "/openai/audio/speech?api-version=1", nil, 404, "Resource not found"},
		{"azure files wrong method", "PUT", az.URL + "/openai/files?api-version=1", nil, 405, `"code":"405"`},
		{"azure images other deployment", "POST", az.URL + "/openai/deployments/other/images/generations?api-version=1", nil, 404, "DeploymentNotFound"},
		{"azure unknown v1 path", "POST", az.URL + "/openai/v1/nothing", nil, 404, "Resource not found"},
		{"azure unknown resource path", "GET", az.URL + "/openai/nothing?api-version=1", nil, 404, "Resource not found"},
		{"openai unknown", "GET", oa.URL + "/nothing", nil, 404, "Invalid URL (GET /v1/nothing)"},
		{"openai responses wrong method", "PUT", oa.URL + "/responses", nil, 405, "Invalid method for URL"},
		{"openai file id wrong method", "POST", oa.URL + "/files/file-x", nil, 405, "Invalid method"},
		{"openai too deep", "GET", oa.URL + "/responses/a/b/c", nil, 404, "Invalid URL"},
		{"openai count_tokens is anthropic's", "POST", oa.URL + "/messages/count_tokens", nil, 404, "Invalid URL"},
		{"anthropic responses is openai's", "POST", an.URL + "/v1/responses", ah, 404, "not_found_error"},
		{"anthropic batch wrong method", "DELETE", an.URL + "/v1/messages/batches/x/cancel", ah, 405, "Method Not Allowed"},
		{"anthropic unknown batch", "GET", an.URL + "/v1/messages/batches/msgbatch_x", ah, 404, "not_found_error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, tc.method, tc.url, "", tc.hdr)
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("%d %s, want %d with %s", resp.StatusCode, b, tc.wantStatus, tc.wantBody)
			}
		})
	}
}

func TestEndpointsOnASharedListener(t *testing.T) {
	clk := fakeclock.New()
	s := startSim(t, Config{Seed: 1, Listen: "127.0.0.1:0", Deployments: []Deployment{
		{Name: "uksouth", Deployment: "chat-prod"},
		{Name: "claude", Flavour: Anthropic, Deployment: "chat-prod"},
	}}, WithClock(clk))
	az, an := s.Deployments()[0], s.Deployments()[1]
	resp, b := do(t, "POST", az.URL+"/openai/responses?api-version=1", `{"model":"chat-prod","input":"hi"}`, nil)
	var r struct{ ID string }
	if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil {
		t.Fatalf("responses under /uksouth: %d %s", resp.StatusCode, b)
	}
	if resp, b := do(t, "GET", az.URL+"/openai/responses/"+r.ID+"?api-version=1", "", nil); resp.StatusCode != 200 {
		t.Errorf("GET under /uksouth: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, "POST", an.URL+"/v1/messages/batches", `{"requests":[{"custom_id":"a","params":{"model":"chat-prod","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}}]}`,
		map[string]string{"Anthropic-Version": "2023-06-01"})
	var mb struct{ ID string }
	if resp.StatusCode != 200 || json.Unmarshal(b, &mb) != nil {
		t.Fatalf("message batch under /claude: %d %s", resp.StatusCode, b)
	}
	// The batch ends on the clock; its results URL must carry the prefix.
	clk.Advance(time.Second)
	ah := map[string]string{"Anthropic-Version": "2023-06-01"}
	_, b = do(t, "GET", an.URL+"/v1/messages/batches/"+mb.ID, "", ah)
	var got struct {
		ProcessingStatus string `json:"processing_status"`
		ResultsURL       string `json:"results_url"`
	}
	if json.Unmarshal(b, &got) != nil || got.ProcessingStatus != "ended" || got.ResultsURL != an.URL+"/v1/messages/batches/"+mb.ID+"/results" {
		t.Fatalf("batch = %s, want results under %s", b, an.URL)
	}
	if resp, b := do(t, "GET", got.ResultsURL, "", ah); resp.StatusCode != 200 || !strings.Contains(string(b), `"type":"succeeded"`) {
		t.Errorf("results: %d %s", resp.StatusCode, b)
	}
}

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		name, pattern, path string
		wantID              string
		wantOK              bool
	}{
		{"plain", "files", "files", "", true},
		{"id", "files/{id}", "files/file-1", "file-1", true},
		{"id and tail", "responses/{id}/input_items", "responses/resp_1/input_items", "resp_1", true},
		{"empty id", "files/{id}", "files/", "", false},
		{"longer path", "files/{id}", "files/a/b", "", false},
		{"other tail", "responses/{id}/cancel", "responses/r/input_items", "", false},
		{"trailing slash", "files", "files/", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, ok := matchPattern(tc.pattern, tc.path)
			if id != tc.wantID || ok != tc.wantOK {
				t.Errorf("matchPattern(%q, %q) = %q %v, want %q %v", tc.pattern, tc.path, id, ok, tc.wantID, tc.wantOK)
			}
		})
	}
}
