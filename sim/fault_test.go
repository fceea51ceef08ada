package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

func TestFaultValidate(t *testing.T) {
	tests := []struct {
		name     string
		f        Fault
		wantPath string // "" when valid
	}{
		{"zero is none", Fault{}, ""},
		{"none", Fault{Mode: FaultNone}, ""},
		{"down", Fault{Mode: FaultDown}, ""},
		{"overloaded", Fault{Mode: FaultOverloaded}, ""},
		{"slow default factor", Fault{Mode: FaultSlow}, ""},
		{"slow negative", Fault{Mode: FaultSlow, Factor: -2}, "factor"},
		{"stall", Fault{Mode: FaultStallStream, After: 1}, ""},
		{"drop negative after", Fault{Mode: FaultDropStream, After: -1}, "after"},
		{"quota rpm", Fault{Mode: FaultQuota, RPM: 6}, ""},
		{"quota nothing", Fault{Mode: FaultQuota}, "rpm"},
		{"quota negative", Fault{Mode: FaultQuota, TPM: -1}, "rpm"},
		{"error rate", Fault{Mode: FaultErrorRate, Rate: 0.3}, ""},
		{"error rate above 1", Fault{Mode: FaultErrorRate, Rate: 1.5}, "rate"},
		{"error rate bad status", Fault{Mode: FaultErrorRate, Rate: 0.5, Status: 502}, "status"},
		{"unknown", Fault{Mode: "meltdown"}, "mode"},
		{"unauthorized", Fault{Mode: FaultUnauthorized}, ""},
		{"forbidden", Fault{Mode: FaultForbidden}, ""},
		{"not found", Fault{Mode: FaultNotFound}, ""},
		{"truncate", Fault{Mode: FaultTruncateStream, After: 1}, ""},
		{"truncate negative after", Fault{Mode: FaultTruncateStream, After: -1}, "after"},
		{"short body", Fault{Mode: FaultShortBody}, ""},
		{"keepalive hang", Fault{Mode: FaultKeepaliveHang}, ""},
		{"slow error body", Fault{Mode: FaultSlowErrorBody}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.f.validate()
			if tc.wantPath == "" {
				if err != nil {
					t.Errorf("validate = %v, want nil", err)
				}
				return
			}
			fe, ok := err.(*FieldError)
			if !ok || fe.Path != tc.wantPath {
				t.Errorf("validate = %v, want *FieldError at %q", err, tc.wantPath)
			}
		})
	}
}

func TestFaultDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Fault
		want Fault
	}{
		{"empty is none", Fault{}, Fault{Mode: FaultNone}},
		{"slow", Fault{Mode: FaultSlow}, Fault{Mode: FaultSlow, Factor: DefaultSlowFactor}},
		{"stall", Fault{Mode: FaultStallStream}, Fault{Mode: FaultStallStream, After: DefaultStreamAfter}},
		{"drop keeps after", Fault{Mode: FaultDropStream, After: 1}, Fault{Mode: FaultDropStream, After: 1}},
		{"truncate", Fault{Mode: FaultTruncateStream}, Fault{Mode: FaultTruncateStream, After: DefaultStreamAfter}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.withDefaults(); got != tc.want {
				t.Errorf("withDefaults = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// testKey is the key the fault tests send; long enough that openai's
// message masks it ("sk-****7890").
const testKey = "sk-test-1234567890"

// apiRequest is a small request for ep in its flavour, streamed or not,
// sending testKey: URL, body and headers. Chat asks for 3 tokens, anthropic
// for 5; gemini leaves its reply at the default length.
func apiRequest(ep Endpoint, stream bool) (string, string, map[string]string) {
	switch ep.Flavour {
	case Anthropic, Gemini:
		url, body, hdr := flavourRequest(ep, stream)
		if hdr == nil {
			hdr = map[string]string{}
		}
		hdr["x-api-key"], hdr["x-goog-api-key"] = testKey, testKey
		return url, body, hdr
	}
	body := chatBodyFor(ep, "hi", 3)
	if stream {
		body = strings.Replace(body, `"max_tokens":3`, `"max_tokens":3,"stream":true`, 1)
	}
	return chatPath(ep), body, map[string]string{"api-key": testKey, "Authorization": "Bearer " + testKey}
}

// faultSim starts a sim with one deployment of flavour fl (deployment
// "m1", key testKey) under fault, set through the control API.
func faultSim(t *testing.T, fl Flavour, fault string, opts ...Option) (*Sim, Endpoint) {
	t.Helper()
	s := startSim(t, one(fl, func(d *Deployment) { d.Deployment = "m1"; d.Key = testKey }), opts...)
	setFaultHTTP(t, s, "d1", fault)
	return s, s.Deployments()[0]
}

// post sends a request under ctx without reading the body.
func post(t *testing.T, ctx context.Context, url, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

var allFlavours = []Flavour{Azure, OpenAI, Anthropic, Gemini}

func TestFaultCallerErrors(t *testing.T) {
	tests := []struct {
		name       string
		fl         Flavour
		fault      FaultMode
		wantStatus int
		wantBody   string
	}{
		{"azure unauthorized", Azure, FaultUnauthorized, 401, `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}`},
		{"openai unauthorized", OpenAI, FaultUnauthorized, 401, `{"error":{"message":"Incorrect API key provided: sk-****7890. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		{"anthropic unauthorized", Anthropic, FaultUnauthorized, 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`},
		{"gemini unauthorized is google's bad key", Gemini, FaultUnauthorized, 400, `"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"`},
		{"azure forbidden", Azure, FaultForbidden, 403, `{"error":{"code":"403","message":"Access denied due to Virtual Network/Firewall rules."}}`},
		{"openai forbidden", OpenAI, FaultForbidden, 403, `{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","param":null,"code":"unsupported_country_region_territory"}}`},
		{"anthropic forbidden", Anthropic, FaultForbidden, 403, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`},
		{"gemini forbidden", Gemini, FaultForbidden, 403, `{"error":{"code":403,"message":"The caller does not have permission","status":"PERMISSION_DENIED"}}`},
		{"azure not found", Azure, FaultNotFound, 404, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist.`},
		{"openai not found", OpenAI, FaultNotFound, 404, `{"error":{"message":"The model ` + "`m1`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`},
		{"anthropic not found", Anthropic, FaultNotFound, 404, `{"type":"error","error":{"type":"not_found_error","message":"model: m1"}}`},
		{"gemini not found", Gemini, FaultNotFound, 404, `{"error":{"code":404,"message":"models/m1 is not found for API version v1beta`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, ep := faultSim(t, tc.fl, `{"mode":"`+string(tc.fault)+`"}`)
			for _, stream := range []bool{false, true} {
				url, body, hdr := apiRequest(ep, stream)
				resp, b := do(t, http.MethodPost, url, body, hdr)
				if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
					t.Fatalf("stream %v: got %d %s\nwant %d with %s", stream, resp.StatusCode, b, tc.wantStatus, tc.wantBody)
				}
			}
			if st := s.Stats()["d1"]; st.Errors != 2 || st.Tokens != 0 {
				t.Errorf("stats = %+v, want 2 errors and nothing charged", st)
			}
		})
	}
}

func TestFaultTruncateStream(t *testing.T) {
	tests := []struct {
		name       string
		fl         Flavour
		after      int
		wantEvents int
	}{
		{"azure", Azure, 2, 2},
		{"openai", OpenAI, 2, 2},
		{"anthropic", Anthropic, 2, 2},
		{"gemini", Gemini, 2, 2},
		// More than the answer has: every event up to the finish.
		{"azure, all but the finish", Azure, 50, 5},       // prompt filter, role, 3 words
		{"openai, all but the finish", OpenAI, 50, 4},     // role, 3 words
		{"anthropic, all but the stop", Anthropic, 50, 9}, // start, block start, ping, 5 words, block stop
		{"gemini, all but the last chunk", Gemini, 50, DefaultReplyTokens - 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, ep := faultSim(t, tc.fl, fmt.Sprintf(`{"mode":"truncate_stream","after":%d}`, tc.after))
			url, body, hdr := apiRequest(ep, true)
			resp, b := do(t, http.MethodPost, url, body, hdr) // fails on a read error: the end is clean
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if n := strings.Count(string(b), "data: "); n != tc.wantEvents {
				t.Errorf("%d events, want %d:\n%s", n, tc.wantEvents, b)
			}
			for _, end := range []string{"[DONE]", "message_stop", "message_delta", `"finish_reason":"`, `"stop_reason":"`, "finishReason", "usageMetadata"} {
				if strings.Contains(string(b), end) {
					t.Errorf("truncated stream carries %s:\n%s", end, b)
				}
			}
			if st := s.Stats()["d1"]; st.Errors != 1 || st.Answered != 0 {
				t.Errorf("stats = %+v, want 1 error", st)
			}
			url, body, hdr = apiRequest(ep, false)
			if resp, b := do(t, http.MethodPost, url, body, hdr); resp.StatusCode != 200 {
				t.Errorf("non-streamed request under truncate_stream: %d %s", resp.StatusCode, b)
			}
		})
	}
}

func TestFaultShortBody(t *testing.T) {
	for _, fl := range allFlavours {
		t.Run(string(fl), func(t *testing.T) {
			s, ep := faultSim(t, fl, `{"mode":"short_body"}`)
			url, body, hdr := apiRequest(ep, false)
			resp := post(t, context.Background(), url, body, hdr)
			if resp.StatusCode != 200 || resp.ContentLength <= ShortBodyBytes {
				t.Fatalf("status %d, content length %d; want 200 promising more than %d bytes", resp.StatusCode, resp.ContentLength, ShortBodyBytes)
			}
			b, err := io.ReadAll(resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) || len(b) != ShortBodyBytes {
				t.Fatalf("read %d bytes, err %v; want %d and an unexpected EOF", len(b), err, ShortBodyBytes)
			}
			if st := s.Stats()["d1"]; st.Errors != 1 {
				t.Errorf("stats = %+v, want 1 error (counted before the cut)", st)
			}
			url, body, hdr = apiRequest(ep, true)
			if resp, b := do(t, http.MethodPost, url, body, hdr); resp.StatusCode != 200 || !strings.Contains(string(b), "data: ") {
				t.Errorf("stream under short_body: %d %s", resp.StatusCode, b)
			}
			eventually(t, "the stream to be counted", func() bool { return s.Stats()["d1"].Answered == 1 })
		})
	}
}

func TestFaultKeepaliveHang(t *testing.T) {
	for _, fl := range allFlavours {
		t.Run(string(fl), func(t *testing.T) {
			clk := fakeclock.New()
			s, ep := faultSim(t, fl, `{"mode":"keepalive_hang"}`, WithClock(clk))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			url, body, hdr := apiRequest(ep, true)
			resp := post(t, ctx, url, body, hdr)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			rd := bufio.NewReader(resp.Body)
			for i := range 3 {
				if i > 0 {
					clk.Advance(KeepaliveInterval)
				}
				var got string
				for range 2 {
					line, err := rd.ReadString('\n')
					if err != nil {
						t.Fatalf("comment %d: %v", i+1, err)
					}
					got += line
				}
				if got != ": keep-alive\n\n" {
					t.Fatalf("comment %d = %q", i+1, got)
				}
			}
			cancel() // the client gives up
			eventually(t, "the hung stream to end", func() bool { return s.Stats()["d1"].InFlight == 0 })
			if st := s.Stats()["d1"]; st.Errors != 1 || st.Answered != 0 {
				t.Errorf("stats = %+v, want 1 error", st)
			}
			url, body, hdr = apiRequest(ep, false)
			if resp, b := do(t, http.MethodPost, url, body, hdr); resp.StatusCode != 200 {
				t.Errorf("non-streamed request under keepalive_hang: %d %s", resp.StatusCode, b)
			}
		})
	}
}

func TestFaultSlowErrorBody(t *testing.T) {
	tests := []struct {
		fl       Flavour
		wantBody string // the body the headers promise
	}{
		{Azure, `{"error":{"code":"ServiceUnavailable","message":"The service is temporarily unable to process your request. Please try again later."}}`},
		{OpenAI, `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`},
		{Anthropic, `{"type":"error","error":{"type":"api_error","message":"Service Unavailable"}}`},
		{Gemini, `{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}`},
	}
	for _, tc := range tests {
		t.Run(string(tc.fl), func(t *testing.T) {
			s, ep := faultSim(t, tc.fl, `{"mode":"slow_error_body"}`)
			for _, stream := range []bool{false, true} {
				ctx, cancel := context.WithCancel(context.Background())
				url, body, hdr := apiRequest(ep, stream)
				resp := post(t, ctx, url, body, hdr)
				if resp.StatusCode != 503 || resp.ContentLength != int64(len(tc.wantBody)) || resp.Header.Get("Content-Type") != "application/json" {
					t.Fatalf("stream %v: status %d, content length %d, type %q; want 503 promising %d bytes of JSON",
						stream, resp.StatusCode, resp.ContentLength, resp.Header.Get("Content-Type"), len(tc.wantBody))
				}
				read := make(chan error, 1)
				go func() {
					_, err := io.ReadAll(resp.Body)
					read <- err
				}()
				eventually(t, "the request to be held", func() bool { return s.Stats()["d1"].InFlight == 1 })
				cancel() // the client gives up waiting for the body
				if err := <-read; err == nil {
					t.Errorf("stream %v: the body arrived", stream)
				}
				eventually(t, "the held request to end", func() bool { return s.Stats()["d1"].InFlight == 0 })
			}
			if st := s.Stats()["d1"]; st.Errors != 2 {
				t.Errorf("stats = %+v, want 2 errors", st)
			}
		})
	}
}

func TestScheduleAcceptsEveryMode(t *testing.T) {
	clk := fakeclock.New()
	cfg := Config{Seed: 1}
	for i, m := range faultModes {
		name := fmt.Sprintf("d%d", i)
		cfg.Deployments = append(cfg.Deployments, Deployment{Name: name, Flavour: Azure, Deployment: "chat-prod"})
		f := Fault{Mode: m}
		if m == FaultQuota {
			f.RPM = 6
		}
		cfg.Schedule = append(cfg.Schedule, ScheduledFault{Deployment: name, From: time.Second, To: time.Minute, Fault: f})
	}
	s := startSim(t, cfg, WithClock(clk))
	clk.Advance(2 * time.Second)
	for i, m := range faultModes {
		st, err := s.Fault(fmt.Sprintf("d%d", i))
		if err != nil || st.Scheduled == nil || st.Effective.Mode != m {
			t.Errorf("%s: state %+v, err %v", m, st, err)
		}
	}
}
