package sim

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRouting(t *testing.T) {
	s := startSim(t, Config{Seed: 1, Deployments: []Deployment{
		{Name: "az", Deployment: "chat-prod"},
		{Name: "oa", Flavour: OpenAI, Deployment: "gpt-4o-mini"},
	}})
	az, oa := s.Deployments()[0], s.Deployments()[1]
	chatBody := `{"model":"%s","messages":[{"role":"user","content":"hi"}]}`
	body := func(model string) string { return strings.Replace(chatBody, "%s", model, 1) }
	tests := []struct {
		name       string
		method     string
		url        string
		body       string
		wantStatus int
		wantBody   string
	}{
		{"azure deployment route", "POST", az.URL + "/openai/deployments/chat-prod/chat/completions?api-version=2024-10-21", body(""), 200, `"object":"chat.completion"`},
		{"azure any api-version", "POST", az.URL + "/openai/deployments/chat-prod/chat/completions?api-version=2099-01-01-preview", body(""), 200, `"object":"chat.completion"`},
		{"azure missing api-version", "POST", az.URL + "/openai/deployments/chat-prod/chat/completions", body(""), 404, `{"error":{"code":"404","message":"Resource not found"}}`},
		{"azure unknown deployment", "POST", az.URL + "/openai/deployments/other/chat/completions?api-version=1", body(""), 404, `"code":"DeploymentNotFound"`},
		{"azure unknown operation", "POST", az.URL + "/openai/deployments/chat-prod/images?api-version=1", body(""), 404, `Resource not found`},
		{"azure wrong method", "GET", az.URL + "/openai/deployments/chat-prod/chat/completions?api-version=1", "", 405, `"code":"405"`},
		{"azure v1 with model", "POST", az.URL + "/openai/v1/chat/completions", body("chat-prod"), 200, `"object":"chat.completion"`},
		{"azure v1 embeddings", "POST", az.URL + "/openai/v1/embeddings", `{"model":"chat-prod","input":"x"}`, 200, `"object":"list"`},
		{"azure v1 other model", "POST", az.URL + "/openai/v1/chat/completions", body("gpt-5"), 404, `DeploymentNotFound`},
		{"azure v1 without model", "POST", az.URL + "/openai/v1/chat/completions", body(""), 400, `you must provide a model parameter`},
		{"foundry chat", "POST", az.URL + "/models/chat/completions?api-version=2024-05-01-preview", body("chat-prod"), 200, `"object":"chat.completion"`},
		{"foundry embeddings", "POST", az.URL + "/models/embeddings?api-version=2024-05-01-preview", `{"model":"chat-prod","input":"x"}`, 200, `"object":"list"`},
		{"foundry unknown model", "POST", az.URL + "/models/chat/completions?api-version=2024-05-01-preview", body("Phi-4"), 400, `{"error":{"code":"unknown_model","message":"Unknown model: Phi-4"}}`},
		{"foundry missing api-version", "POST", az.URL + "/models/chat/completions", body("chat-prod"), 404, `Resource not found`},
		{"foundry no completions", "POST", az.URL + "/models/completions?api-version=2024-05-01-preview", `{"model":"chat-prod","prompt":"x"}`, 404, `Resource not found`},
		{"foundry wrong method", "GET", az.URL + "/models/chat/completions?api-version=2024-05-01-preview", "", 405, `"code":"405"`},
		{"azure openai path", "POST", az.URL + "/v1/chat/completions", body("chat-prod"), 404, `Resource not found`},
		{"openai chat", "POST", oa.URL + "/chat/completions", body("gpt-4o-mini"), 200, `"service_tier":"default"`},
		{"openai wrong model", "POST", oa.URL + "/chat/completions", body("gpt-5"), 404, `"code":"model_not_found"`},
		{"openai unknown route", "POST", oa.URL + "/images/unknown", body("gpt-4o-mini"), 404, `Invalid URL (POST /v1/images/unknown)`},
		{"openai wrong method", "DELETE", oa.URL + "/chat/completions", "", 405, `invalid_request_error`},
		{"openai list of stored chats", "GET", oa.URL + "/chat/completions", "", 200, `"object":"list"`},
		{"openai models", "GET", oa.URL + "/models", "", 200, `"id":"gpt-4o-mini"`},
		{"bad json", "POST", oa.URL + "/chat/completions", `{"model":`, 400, `could not parse the JSON body`},
		{"no messages", "POST", oa.URL + "/chat/completions", `{"model":"gpt-4o-mini","messages":[]}`, 400, `'messages' is a required property`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := do(t, tc.method, tc.url, tc.body, nil)
			if resp.StatusCode != tc.wantStatus || !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("%d %s\nwant %d with %s", resp.StatusCode, b, tc.wantStatus, tc.wantBody)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("x-request-id missing")
			}
		})
	}
}

// run sends the same request sequence to a fresh sim with seed and returns
// what an observer sees: statuses, bodies and latency waits.
func run(t *testing.T, seed int64) (statuses []int, bodies []string, ids []string, waits []time.Duration) {
	t.Helper()
	w := &recordWaiter{}
	cfg := one(Azure, func(d *Deployment) { d.Latency = Latency{Median: 300 * time.Millisecond, Spread: 0.5} })
	cfg.Seed = seed
	s := startSim(t, cfg, WithWaiter(w))
	ep := s.Deployments()[0]
	if err := s.SetFault("d1", Fault{Mode: FaultErrorRate, Rate: 0.4}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		resp, b := chat(t, ep, "hello", 3+i%5)
		statuses = append(statuses, resp.StatusCode)
		bodies = append(bodies, string(b))
		ids = append(ids, resp.Header.Get("X-Request-Id"))
	}
	return statuses, bodies, ids, w.all()
}

func TestSameSeedSameDecisions(t *testing.T) {
	st1, b1, id1, w1 := run(t, 42)
	st2, b2, id2, w2 := run(t, 42)
	for i := range st1 {
		if st1[i] != st2[i] || b1[i] != b2[i] || id1[i] != id2[i] {
			t.Fatalf("request %d differs between runs with the same seed:\n%d %s %s\n%d %s %s", i, st1[i], id1[i], b1[i], st2[i], id2[i], b2[i])
		}
	}
	if !equalDurations(w1, w2) {
		t.Errorf("latency draws differ:\n%v\n%v", w1, w2)
	}
	failed := 0
	for _, s := range st1 {
		if s != 200 {
			failed++
		}
	}
	if failed == 0 || failed == len(st1) {
		t.Errorf("%d of %d failed; the error-rate draw should split them", failed, len(st1))
	}
	distinct := map[time.Duration]bool{}
	for _, d := range w1 {
		distinct[d] = true
	}
	if len(distinct) < len(w1)/2 {
		t.Errorf("only %d distinct latency draws in %d", len(distinct), len(w1))
	}

	st3, b3, _, w3 := run(t, 43)
	same := equalDurations(w1, w3)
	for i := range st1 {
		same = same && st1[i] == st3[i] && b1[i] == b3[i]
	}
	if same {
		t.Error("a different seed gave the same decisions")
	}
}

func TestAbandonedRequestAbortsInsteadOfAnEmpty200(t *testing.T) {
	s := startSim(t, one(Azure, func(d *Deployment) { d.Latency = Latency{Median: time.Second} }))
	ep := s.Deployments()[0]
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the client is gone: the latency wait fails at once
	req := httptest.NewRequest(http.MethodPost, chatPath(ep), strings.NewReader(chatBodyFor(ep, "hi", 3))).WithContext(ctx)
	rec := httptest.NewRecorder()
	recovered := func() (v any) {
		defer func() { v = recover() }()
		s.byName["d1"].ServeHTTP(rec, req)
		return nil
	}()
	if recovered != http.ErrAbortHandler {
		t.Fatalf("recovered %v, want http.ErrAbortHandler", recovered)
	}
	if rec.Body.Len() != 0 || rec.Flushed {
		t.Errorf("wrote %q before aborting", rec.Body.String())
	}
	if st := s.Stats()["d1"]; st.Abandoned != 1 {
		t.Errorf("stats = %+v, want 1 abandoned", st)
	}
}

// runFlavour is run for the anthropic and gemini flavours: plain,
// streamed and tool-calling requests under an error rate.
func runFlavour(t *testing.T, fl Flavour, seed int64) (out []string, waits []time.Duration) {
	t.Helper()
	w := &recordWaiter{}
	cfg := one(fl, func(d *Deployment) {
		d.Deployment = "m1"
		d.Latency = Latency{Median: 300 * time.Millisecond, Spread: 0.5, PerToken: time.Millisecond}
	})
	cfg.Seed = seed
	s := startSim(t, cfg, WithWaiter(w))
	ep := s.Deployments()[0]
	if err := s.SetFault("d1", Fault{Mode: FaultErrorRate, Rate: 0.4}); err != nil {
		t.Fatal(err)
	}
	for i := range 24 {
		url, body, hdr := flavourRequest(ep, i%3 == 1)
		if i%3 == 2 {
			if fl == Anthropic {
				body = `{"model":"m1","max_tokens":50,"tools":[{"name":"f","input_schema":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}],"messages":[{"role":"user","content":"hi"}]}`
			} else {
				body = geminiRequest("hi", weatherDeclaration)
			}
		}
		resp, b := do(t, http.MethodPost, url, body, hdr)
		out = append(out, fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Header.Get("Request-Id"), b))
	}
	return out, w.all()
}

func TestSameSeedSameDecisionsNewFlavours(t *testing.T) {
	for _, fl := range []Flavour{Anthropic, Gemini} {
		t.Run(string(fl), func(t *testing.T) {
			o1, w1 := runFlavour(t, fl, 42)
			o2, w2 := runFlavour(t, fl, 42)
			for i := range o1 {
				if o1[i] != o2[i] {
					t.Fatalf("request %d differs between runs with the same seed:\n%s\n%s", i, o1[i], o2[i])
				}
			}
			if !equalDurations(w1, w2) {
				t.Errorf("latency draws differ:\n%v\n%v", w1, w2)
			}
			ok, calls := 0, 0
			for _, o := range o1 {
				if strings.HasPrefix(o, "200 ") {
					ok++
				}
				if strings.Contains(o, `"tool_use"`) || strings.Contains(o, `"functionCall"`) {
					calls++
				}
			}
			if ok == 0 || ok == len(o1) || calls == 0 {
				t.Errorf("%d of %d answered, %d tool calls; want a mix", ok, len(o1), calls)
			}
			o3, _ := runFlavour(t, fl, 43)
			if strings.Join(o1, "\n") == strings.Join(o3, "\n") {
				t.Error("a different seed gave the same answers")
			}
		})
	}
}
