package sim

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func TestFaultDownAndError500(t *testing.T) {
	tests := []struct {
		name       string
		fl         Flavour
		fault      string
		wantStatus int
		wantBody   string
	}{
		{"azure down", Azure, `{"mode":"down"}`, 503, `{"error":{"code":"ServiceUnavailable","message":"The service is temporarily unable to process your request. Please try again later."}}`},
		{"azure error500", Azure, `{"mode":"error500"}`, 500, `"type":"server_error","param":null,"code":null`},
		{"openai down", OpenAI, `{"mode":"down"}`, 503, `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error","param":null,"code":null}}`},
		{"openai error500", OpenAI, `{"mode":"error500"}`, 500, `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(tc.fl, func(d *Deployment) { d.Key = "k" }))
			ep := s.Deployments()[0]
			setFaultHTTP(t, s, "d1", tc.fault)
			resp, b := chat(t, ep, "hi", 3) // no key: the fault comes first
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
				t.Fatalf("got %d %s\nwant %d with %s", resp.StatusCode, b, tc.wantStatus, tc.wantBody)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("x-request-id missing")
			}
			if st := s.Stats()["d1"]; st.Errors != 1 || st.Tokens != 0 {
				t.Errorf("stats = %+v, want 1 error and no tokens", st)
			}
			resp, _ = do(t, http.MethodDelete, s.ControlURL()+"/deployments/d1/fault", "", nil)
			if resp.StatusCode != 200 {
				t.Fatalf("DELETE: %d", resp.StatusCode)
			}
			if resp, b := do(t, http.MethodPost, chatPath(ep), chatBodyFor(ep, "hi", 3), map[string]string{"api-key": "k", "Authorization": "Bearer k"}); resp.StatusCode != 200 {
				t.Errorf("after clearing: %d %s", resp.StatusCode, b)
			}
		})
	}
}

func TestFaultBlackholeHoldsUntilClientGivesUp(t *testing.T) {
	s := startSim(t, one(Azure, nil))
	ep := s.Deployments()[0]
	setFaultHTTP(t, s, "d1", `{"mode":"blackhole"}`)
	client := &http.Client{Timeout: 150 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	_, err := client.Post(chatPath(ep), "application/json", strings.NewReader(chatBodyFor(ep, "hi", 3)))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v, want a client timeout", err)
	}
	eventually(t, "blackholed request to end", func() bool { return s.Stats()["d1"].InFlight == 0 })
	if st := s.Stats()["d1"]; st.Calls != 1 || st.Errors != 1 {
		t.Errorf("stats = %+v, want 1 call counted as an error", st)
	}
}

func TestFaultResetIsConnectionError(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	setFaultHTTP(t, s, "d1", `{"mode":"reset"}`)
	_, err := noKeepAlive.Post(chatPath(ep), "application/json", strings.NewReader(chatBodyFor(ep, "hi", 3)))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("err = %v, want connection reset", err)
	}
	// The official client sees a connection error too, not an API error.
	client := newClient(ep, option.WithMaxRetries(0))
	_, err = client.Chat.Completions.New(context.Background(), chatParams(ep, "hi", 3))
	var apiErr *openai.Error
	if err == nil || errors.As(err, &apiErr) {
		t.Fatalf("client err = %v, want a connection error", err)
	}
	if st := s.Stats()["d1"]; st.Errors != 2 {
		t.Errorf("errors = %d, want 2", st.Errors)
	}
}

func TestFaultSlowMultipliesLatency(t *testing.T) {
	w := &recordWaiter{}
	s := startSim(t, one(Azure, func(d *Deployment) { d.Latency = Latency{Median: 100 * time.Millisecond} }), WithWaiter(w))
	ep := s.Deployments()[0]
	chat(t, ep, "hi", 3)
	setFaultHTTP(t, s, "d1", `{"mode":"slow","factor":5}`)
	chat(t, ep, "hi", 3)
	setFaultHTTP(t, s, "d1", `{"mode":"slow"}`) // default factor 5
	chat(t, ep, "hi", 3)
	setFaultHTTP(t, s, "d1", `{"mode":"slow","factor":2.5}`)
	chat(t, ep, "hi", 3)
	want := []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 250 * time.Millisecond}
	if got := w.all(); !equalDurations(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
	if st := s.Stats()["d1"]; st.Answered != 4 {
		t.Errorf("answered = %d, want 4", st.Answered)
	}
}

func TestFaultSlowRealTime(t *testing.T) {
	// One real wait, to show slow answers really take longer on the wire.
	s, err := Start(context.Background(), one(Azure, func(d *Deployment) { d.Latency = Latency{Median: 20 * time.Millisecond} }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ep := s.Deployments()[0]
	setFaultHTTP(t, s, "d1", `{"mode":"slow","factor":5}`)
	start := time.Now()
	if resp, _ := chat(t, ep, "hi", 3); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Errorf("slow answer took %s, want at least 100ms (20ms x 5)", took)
	}
}

func streamBody(ep Endpoint) string {
	return `{"model":"` + ep.Deployment + `","messages":[{"role":"user","content":"hi"}],"stream":true}`
}

func TestFaultStallStream(t *testing.T) {
	for _, fl := range []Flavour{Azure, OpenAI} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, nil))
			ep := s.Deployments()[0]
			setFaultHTTP(t, s, "d1", `{"mode":"stall_stream","after":2}`)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, chatPath(ep), strings.NewReader(streamBody(ep)))
			resp, err := noKeepAlive.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			b, err := io.ReadAll(resp.Body)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("read err = %v, want the client's deadline (stream held open)", err)
			}
			if n := strings.Count(string(b), "data: "); n != 2 {
				t.Errorf("%d events before the stall, want 2:\n%s", n, b)
			}
			eventually(t, "stalled request to end", func() bool { return s.Stats()["d1"].InFlight == 0 })
			if st := s.Stats()["d1"]; st.Errors != 1 {
				t.Errorf("stats = %+v, want 1 error", st)
			}
			// Non-streamed requests are answered normally.
			if resp, _ := chat(t, ep, "hi", 3); resp.StatusCode != 200 {
				t.Errorf("non-streamed request under stall_stream: %d", resp.StatusCode)
			}
		})
	}
}

func TestFaultDropStream(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	setFaultHTTP(t, s, "d1", `{"mode":"drop_stream"}`) // after 3 events
	resp, err := noKeepAlive.Post(chatPath(ep), "application/json", strings.NewReader(streamBody(ep)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read err = %v, want unexpected EOF (stream cut)", err)
	}
	if n := strings.Count(string(b), "data: "); n != 3 {
		t.Errorf("%d events before the drop, want 3", n)
	}
	// The official client reports the cut as a stream error.
	client := newClient(ep, option.WithMaxRetries(0))
	stream := client.Chat.Completions.NewStreaming(context.Background(), chatParams(ep, "hi", 0))
	n := 0
	for stream.Next() {
		n++
	}
	if stream.Err() == nil || n != 3 {
		t.Errorf("client read %d chunks, err %v; want 3 and an error", n, stream.Err())
	}
	if st := s.Stats()["d1"]; st.Errors != 2 {
		t.Errorf("errors = %d, want 2 (counted before the cut)", st.Errors)
	}
}

func TestFaultQuotaCut(t *testing.T) {
	s := startSim(t, one(Azure, func(d *Deployment) { d.Quota = Quota{RPM: 600} }))
	ep := s.Deployments()[0]
	setFaultHTTP(t, s, "d1", `{"mode":"quota","rpm":6}`) // 1 per 10 s slice
	if resp, _ := chat(t, ep, "hi", 3); resp.StatusCode != 200 {
		t.Fatalf("first: %d", resp.StatusCode)
	}
	resp, b := chat(t, ep, "hi", 3)
	if resp.StatusCode != 429 || !strings.Contains(string(b), "call rate limit") {
		t.Fatalf("second: %d %s, want 429", resp.StatusCode, b)
	}
	setFaultHTTP(t, s, "d1", `{"mode":"none"}`)
	if resp, _ := chat(t, ep, "hi", 3); resp.StatusCode != 200 {
		t.Errorf("after the cut is lifted: %d", resp.StatusCode)
	}
}

func TestFaultErrorRate(t *testing.T) {
	tests := []struct {
		name          string
		fault         string
		minErr, maxEr int
		statuses      map[int]bool
	}{
		{"never", `{"mode":"error_rate","rate":0}`, 0, 0, map[int]bool{200: true}},
		{"always 503", `{"mode":"error_rate","rate":1,"status":503}`, 100, 100, map[int]bool{503: true}},
		{"always, either status", `{"mode":"error_rate","rate":1}`, 100, 100, map[int]bool{500: true, 503: true}},
		{"thirty percent", `{"mode":"error_rate","rate":0.3,"status":500}`, 15, 45, map[int]bool{200: true, 500: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startSim(t, one(Azure, nil))
			ep := s.Deployments()[0]
			setFaultHTTP(t, s, "d1", tc.fault)
			seen := map[int]int{}
			for range 100 {
				resp, _ := chat(t, ep, "hi", 1)
				seen[resp.StatusCode]++
			}
			failed := 100 - seen[200]
			if failed < tc.minErr || failed > tc.maxEr {
				t.Errorf("%d of 100 failed, want %d..%d", failed, tc.minErr, tc.maxEr)
			}
			for status := range seen {
				if !tc.statuses[status] {
					t.Errorf("unexpected status %d (%v)", status, seen)
				}
			}
			for status := range tc.statuses {
				if seen[status] == 0 {
					t.Errorf("status %d never seen (%v)", status, seen)
				}
			}
			if st := s.Stats()["d1"]; st.Errors != int64(failed) || st.Answered != int64(seen[200]) {
				t.Errorf("stats = %+v, want %d errors", st, failed)
			}
		})
	}
}

func TestControlFaultAPI(t *testing.T) {
	s := startSim(t, one(Azure, nil))
	base := s.ControlURL() + "/deployments/d1/fault"
	tests := []struct {
		name       string
		method     string
		url        string
		body       string
		wantStatus int
		wantBody   string
	}{
		{"read default", "GET", base, "", 200, `{"deployment":"d1","fault":{"mode":"none"},"scheduled":null,"effective":{"mode":"none"}}`},
		{"set slow with default factor", "POST", base, `{"mode":"slow"}`, 200, `"effective":{"mode":"slow","factor":5}`},
		{"read back", "GET", base, "", 200, `"fault":{"mode":"slow","factor":5}`},
		{"error rate", "POST", base, `{"mode":"error_rate","rate":0.3}`, 200, `"effective":{"mode":"error_rate","rate":0.3}`},
		{"clear with none", "POST", base, `{"mode":"none"}`, 200, `"effective":{"mode":"none"}`},
		{"clear with delete", "DELETE", base, "", 200, `"fault":{"mode":"none"}`},
		{"unknown mode", "POST", base, `{"mode":"explode"}`, 400, `unknown mode`},
		{"bad rate", "POST", base, `{"mode":"error_rate","rate":2}`, 400, `rate`},
		{"unknown field", "POST", base, `{"mode":"slow","speed":3}`, 400, `unknown field`},
		{"quota without limits", "POST", base, `{"mode":"quota"}`, 400, `needs rpm or tpm`},
		{"not json", "POST", base, `slow`, 400, `bad fault`},
		{"unknown deployment", "POST", s.ControlURL() + "/deployments/nope/fault", `{"mode":"down"}`, 404, `unknown deployment`},
		{"unknown route", "GET", s.ControlURL() + "/nothing", "", 404, `no control route`},
		{"deployments list", "GET", s.ControlURL() + "/deployments", "", 200, `"name":"d1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, tc.method, tc.url, tc.body, nil)
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("%s %s: %d %s\nwant %d with %s", tc.method, tc.url, resp.StatusCode, b, tc.wantStatus, tc.wantBody)
			}
		})
	}
}

func TestSetFaultGoAPI(t *testing.T) {
	s := startSim(t, one(Azure, nil))
	if err := s.SetFault("nope", Fault{Mode: FaultDown}); !errors.Is(err, ErrUnknownDeployment) {
		t.Errorf("unknown deployment: err = %v", err)
	}
	var fe *FieldError
	if err := s.SetFault("d1", Fault{Mode: FaultSlow, Factor: -1}); !errors.As(err, &fe) || fe.Path != "factor" {
		t.Errorf("bad factor: err = %v, want *FieldError for factor", err)
	}
	if err := s.SetFault("d1", Fault{Mode: FaultDown}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Fault("d1")
	if err != nil || st.Effective.Mode != FaultDown {
		t.Errorf("Fault = %+v, %v", st, err)
	}
	if got := s.Stats()["d1"].Fault; got != FaultDown {
		t.Errorf("Stats().Fault = %q, want down", got)
	}
	var decoded FaultState
	resp, b := do(t, "GET", s.ControlURL()+"/deployments/d1/fault", "", nil)
	if err := json.Unmarshal(b, &decoded); err != nil || resp.StatusCode != 200 || decoded.Effective.Mode != FaultDown {
		t.Errorf("GET fault: %d %s", resp.StatusCode, b)
	}
}

// flavourRequest is a small request for an anthropic or gemini endpoint:
// URL, body and headers.
func flavourRequest(ep Endpoint, stream bool) (string, string, map[string]string) {
	if ep.Flavour == Anthropic {
		s := ""
		if stream {
			s = `,"stream":true`
		}
		return ep.URL + "/v1/messages", `{"model":"` + ep.Deployment + `","max_tokens":5` + s + `,"messages":[{"role":"user","content":"hi"}]}`, anthropicHeaders("")
	}
	return generateURL(ep, stream), geminiRequest("hi", ""), nil
}

// faultExpect is what a fault in TestFaultsAnthropicAndGemini does to
// the request.
type faultExpect int

const (
	expectAnswer  faultExpect = iota // status and body
	expectTimeout                    // the client gives up
	expectReset                      // connection reset
	expectSlow                       // 200 after 3x the latency
	expectStall                      // 200, 2 events, then held open
	expectDrop                       // 200, 3 events, then cut
	expectQuota                      // second request refused
)

// faultCase is a fault set on a deployment of one flavour and what it
// does to a request.
type faultCase struct {
	name       string
	fl         Flavour
	fault      string
	stream     bool
	expect     faultExpect
	wantStatus int
	wantBody   string
}

func TestFaultsAnthropicAndGemini(t *testing.T) {
	tests := []faultCase{
		{"anthropic down", Anthropic, `{"mode":"down"}`, false, expectAnswer, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"anthropic overloaded", Anthropic, `{"mode":"overloaded"}`, false, expectAnswer, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"anthropic error500", Anthropic, `{"mode":"error500"}`, false, expectAnswer, 500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`},
		{"anthropic error_rate 503", Anthropic, `{"mode":"error_rate","rate":1,"status":503}`, false, expectAnswer, 503, `{"type":"error","error":{"type":"api_error",`},
		{"anthropic blackhole", Anthropic, `{"mode":"blackhole"}`, false, expectTimeout, 0, ""},
		{"anthropic reset", Anthropic, `{"mode":"reset"}`, false, expectReset, 0, ""},
		{"anthropic slow", Anthropic, `{"mode":"slow","factor":3}`, false, expectSlow, 200, `"type":"message"`},
		{"anthropic stall_stream", Anthropic, `{"mode":"stall_stream","after":2}`, true, expectStall, 200, ""},
		{"anthropic drop_stream", Anthropic, `{"mode":"drop_stream"}`, true, expectDrop, 200, ""},
		{"anthropic quota", Anthropic, `{"mode":"quota","rpm":6}`, false, expectQuota, 429, `"type":"rate_limit_error","message":"This request would exceed your organization's rate limit of 6 requests per minute`},
		{"gemini down", Gemini, `{"mode":"down"}`, false, expectAnswer, 503, `{"error":{"code":503,"message":"The service is currently unavailable.","status":"UNAVAILABLE"}}`},
		{"gemini overloaded", Gemini, `{"mode":"overloaded"}`, false, expectAnswer, 503, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`},
		{"gemini error500", Gemini, `{"mode":"error500"}`, false, expectAnswer, 500, `{"error":{"code":500,"message":"An internal error has occurred.`},
		{"gemini error_rate 500", Gemini, `{"mode":"error_rate","rate":1,"status":500}`, false, expectAnswer, 500, `"status":"INTERNAL"`},
		{"gemini blackhole", Gemini, `{"mode":"blackhole"}`, true, expectTimeout, 0, ""},
		{"gemini reset", Gemini, `{"mode":"reset"}`, false, expectReset, 0, ""},
		{"gemini slow", Gemini, `{"mode":"slow","factor":3}`, false, expectSlow, 200, `"candidates"`},
		{"gemini stall_stream", Gemini, `{"mode":"stall_stream","after":2}`, true, expectStall, 200, ""},
		{"gemini drop_stream", Gemini, `{"mode":"drop_stream"}`, true, expectDrop, 200, ""},
		{"gemini quota", Gemini, `{"mode":"quota","rpm":6}`, false, expectQuota, 429, `"status":"RESOURCE_EXHAUSTED"`},
		{"openai overloaded", OpenAI, `{"mode":"overloaded"}`, false, expectAnswer, 503, `"message":"The engine is currently overloaded, please try again later.","type":"server_error"`},
		{"azure overloaded", Azure, `{"mode":"overloaded"}`, false, expectAnswer, 503, `{"error":{"code":"ServiceUnavailable",`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &recordWaiter{}
			s := startSim(t, one(tc.fl, func(d *Deployment) {
				d.Deployment = "m1"
				d.Key = "k" // a fault comes before the key check
				d.Latency = Latency{Median: 100 * time.Millisecond}
			}), WithWaiter(w))
			ep := s.Deployments()[0]
			setFaultHTTP(t, s, "d1", tc.fault)
			url, body, hdr := flavourRequest(ep, tc.stream)
			if tc.fl == OpenAI || tc.fl == Azure {
				url, body = chatPath(ep), chatBodyFor(ep, "hi", 3)
			}
			wantErrors := int64(1)
			switch tc.expect {
			case expectAnswer, expectSlow, expectQuota:
				wantErrors = answerUnderFault(t, tc, w, url, body, hdr)
			case expectTimeout:
				timeoutUnderFault(t, s, url, body)
			case expectReset:
				resetUnderFault(t, url, body)
			case expectStall, expectDrop:
				streamUnderFault(t, tc, s, url, body)
			}
			st := s.Stats()["d1"]
			if st.Errors != wantErrors {
				t.Errorf("stats = %+v, want %d errors", st, wantErrors)
			}
			if tc.expect == expectQuota && st.Refused != 1 {
				t.Errorf("stats = %+v, want 1 refused", st)
			}
		})
	}
}

// answerUnderFault: the fault answers with tc's status and body. A slow
// fault answers after 3x the latency; a quota lets the first request
// through and refuses the second. Both are past the key check, so they
// send the right key. It returns the errors the stats should count: none
// for a slow answer or a refusal.
func answerUnderFault(t *testing.T, tc faultCase, w *recordWaiter, url, body string, hdr map[string]string) int64 {
	wantErrors := int64(1)
	if tc.expect != expectAnswer {
		if hdr == nil {
			hdr = map[string]string{}
		}
		hdr["x-api-key"], hdr["x-goog-api-key"] = "k", "k"
	}
	resp, b := do(t, http.MethodPost, url, body, hdr)
	if tc.expect == expectQuota {
		if resp.StatusCode != 200 {
			t.Fatalf("first request under the cut: %d %s", resp.StatusCode, b)
		}
		resp, b = do(t, http.MethodPost, url, body, hdr)
		wantErrors = 0
	}
	if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
		t.Fatalf("got %d %s\nwant %d with %s", resp.StatusCode, b, tc.wantStatus, tc.wantBody)
	}
	if tc.expect == expectSlow {
		wantErrors = 0
		if got := w.all(); !equalDurations(got, []time.Duration{300 * time.Millisecond}) {
			t.Errorf("waits = %v, want [300ms]", got)
		}
	}
	return wantErrors
}

// timeoutUnderFault: a blackhole holds the request until the client
// gives up, and then lets it go.
func timeoutUnderFault(t *testing.T, s *Sim, url, body string) {
	client := &http.Client{Timeout: 150 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	_, err := client.Post(url, "application/json", strings.NewReader(body))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v, want a client timeout", err)
	}
	eventually(t, "blackholed request to end", func() bool { return s.Stats()["d1"].InFlight == 0 })
}

// resetUnderFault: a reset is a connection error, not an answer.
func resetUnderFault(t *testing.T, url, body string) {
	_, err := noKeepAlive.Post(url, "application/json", strings.NewReader(body))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("err = %v, want connection reset", err)
	}
}

// streamUnderFault: a stream starts with 200; a stall sends 2 events and
// holds the stream open until the client gives up, a drop sends 3 and
// cuts it.
func streamUnderFault(t *testing.T, tc faultCase, s *Sim, url, body string) {
	hdr := map[string]string{"x-api-key": "k", "x-goog-api-key": "k", "anthropic-version": "2023-06-01"}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	wantErr, wantEvents := error(io.ErrUnexpectedEOF), 3
	if tc.expect == expectStall {
		wantErr, wantEvents = context.DeadlineExceeded, 2
	}
	if !errors.Is(err, wantErr) {
		t.Fatalf("read err = %v, want %v", err, wantErr)
	}
	if n := strings.Count(string(b), "data: "); n != wantEvents {
		t.Errorf("%d events before the fault, want %d:\n%s", n, wantEvents, b)
	}
	eventually(t, "faulted stream to end", func() bool { return s.Stats()["d1"].InFlight == 0 })
}
