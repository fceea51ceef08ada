package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
)

// testAPIVersion is the api-version the Azure clients in tests send.
const testAPIVersion = "2024-10-21"

// newClient returns an openai-go client for ep. For azure it reproduces what
// azure.WithEndpoint and azure.WithAPIKey do (deployment path, api-version
// query, api-key header) without the azure package, whose Azure SDK
// dependency is not in go.mod; azuresdk_test.go runs the same calls
// through the azure package itself.
func newClient(ep Endpoint, opts ...option.RequestOption) openai.Client {
	var base []option.RequestOption
	if ep.Flavour == OpenAI {
		base = []option.RequestOption{option.WithBaseURL(ep.URL + "/"), option.WithAPIKey(keyOr(ep.Key))}
	} else {
		base = []option.RequestOption{
			option.WithBaseURL(ep.URL + "/openai/deployments/" + ep.Deployment + "/"),
			option.WithQuery("api-version", testAPIVersion),
			option.WithHeader("api-key", keyOr(ep.Key)),
		}
	}
	return openai.NewClient(append(base, opts...)...)
}

func keyOr(k string) string {
	if k == "" {
		return "unused-key"
	}
	return k
}

// chatParams is a one-message chat request for ep.
func chatParams(ep Endpoint, prompt string, maxTokens int64) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:    ep.Deployment,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
	}
	if maxTokens > 0 {
		p.MaxTokens = openai.Int(maxTokens)
	}
	return p
}

// recordWaiter records every wait and returns at once (or with ctx.Err()
// when ctx is already done), so tests see latency draws without sleeping.
type recordWaiter struct {
	mu    sync.Mutex
	waits []time.Duration
}

var _ Waiter = (*recordWaiter)(nil)

func (w *recordWaiter) Wait(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.waits = append(w.waits, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *recordWaiter) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.waits...)
}

// startSim starts cfg with a fake clock and a recording waiter unless opts
// say otherwise, and closes it when the test ends.
func startSim(t *testing.T, cfg Config, opts ...Option) *Sim {
	t.Helper()
	opts = append([]Option{WithClock(fakeclock.New()), WithWaiter(&recordWaiter{})}, opts...)
	s, err := Start(context.Background(), cfg, opts...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// one is a config with a single deployment "d1" of the given flavour.
func one(fl Flavour, mod func(*Deployment)) Config {
	d := Deployment{Name: "d1", Region: "testregion", Flavour: fl, Deployment: "chat-prod"}
	if mod != nil {
		mod(&d)
	}
	return Config{Seed: 1, Deployments: []Deployment{d}}
}

// chatPath is the chat completions path of an endpoint.
func chatPath(ep Endpoint) string {
	if ep.Flavour == OpenAI {
		return ep.URL + "/chat/completions"
	}
	return ep.URL + "/openai/deployments/" + ep.Deployment + "/chat/completions?api-version=2024-10-21"
}

// chatBodyFor is a small chat request for an endpoint; maxTokens 0 leaves
// max_tokens out.
func chatBodyFor(ep Endpoint, prompt string, maxTokens int) string {
	req := map[string]any{
		"model":    ep.Deployment,
		"messages": []map[string]string{{"role": "user", "content": prompt}},
	}
	if maxTokens > 0 {
		req["max_tokens"] = maxTokens
	}
	b, _ := json.Marshal(req)
	return string(b)
}

var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

// do sends a request and returns the response with its body read.
func do(t *testing.T, method, url, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp, b
}

// chat posts a chat request to ep and returns status, headers and body.
func chat(t *testing.T, ep Endpoint, prompt string, maxTokens int) (*http.Response, []byte) {
	t.Helper()
	return do(t, http.MethodPost, chatPath(ep), chatBodyFor(ep, prompt, maxTokens), nil)
}

// setFaultHTTP sets a fault through the control API and fails on non-200.
func setFaultHTTP(t *testing.T, s *Sim, name, body string) {
	t.Helper()
	resp, b := do(t, http.MethodPost, s.ControlURL()+"/deployments/"+name+"/fault", body, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("set fault %s: %d %s", body, resp.StatusCode, b)
	}
}

// eventually polls cond until it holds or 5 s pass. It is for waiting on
// goroutines to wind down, not for asserting timing.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 5*time.Second, cond, func() string { return "waiting for " + what })
}

// simGoroutines lists goroutines running sim code or net/http server
// connections.
func simGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		s := string(g)
		if strings.Contains(s, "switchover/sim.Test") {
			continue // the test itself
		}
		if strings.Contains(s, "switchover/sim.") || strings.Contains(s, "net/http.(*conn).serve") || strings.Contains(s, "net/http.(*Server).Serve") {
			out = append(out, s)
		}
	}
	return out
}

func TestCloseUnblocksHangingRequestsAndLeaksNoGoroutines(t *testing.T) {
	cfg := Config{Seed: 1, Deployments: []Deployment{
		{Name: "hole", Deployment: "chat-prod"},
		{Name: "stall", Deployment: "chat-prod"},
	}}
	s, err := Start(context.Background(), cfg, WithWaiter(&recordWaiter{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetFault("hole", Fault{Mode: FaultBlackhole}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetFault("stall", Fault{Mode: FaultStallStream, After: 1}); err != nil {
		t.Fatal(err)
	}
	eps := s.Deployments()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	errs := make(chan error, 2)
	go func() {
		resp, err := client.Post(chatPath(eps[0]), "application/json", strings.NewReader(chatBodyFor(eps[0], "hi", 5)))
		if err == nil {
			resp.Body.Close()
			err = errors.New("blackhole answered")
		}
		errs <- err
	}()
	stalled := make(chan struct{})
	go func() {
		body := `{"messages":[{"role":"user","content":"hi"}],"stream":true}`
		resp, err := client.Post(chatPath(eps[1]), "application/json", strings.NewReader(body))
		close(stalled) // headers go out with the one event sent before the stall
		if err == nil {
			_, err = io.ReadAll(resp.Body) // then nothing until Close
			resp.Body.Close()
			if err == nil {
				err = errors.New("stalled stream ended cleanly")
			}
		}
		errs <- err
	}()
	<-stalled
	eventually(t, "the blackholed request to be in flight", func() bool { return s.Stats()["hole"].InFlight == 1 })
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range 2 {
		if err := <-errs; err == nil {
			t.Error("a hanging request ended without error after Close")
		}
	}
	st := s.Stats()
	if st["hole"].InFlight != 0 || st["stall"].InFlight != 0 || st["hole"].Errors != 1 || st["stall"].Errors != 1 {
		t.Errorf("after Close: %+v", st)
	}
	client.CloseIdleConnections()
	eventually(t, "sim goroutines to exit", func() bool { return len(simGoroutines()) == 0 })
	if _, err := net.Dial("tcp", strings.TrimPrefix(eps[0].URL, "http://")); err == nil {
		t.Error("listener still accepting after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestStartContextCancelClosesSim(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, one(Azure, nil))
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(s.Deployments()[0].URL, "http://")
	cancel()
	eventually(t, "listener to close", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	if err := s.Close(); err != nil {
		t.Errorf("Close after cancel: %v", err)
	}
}

func TestStartRejectsInvalidConfig(t *testing.T) {
	if _, err := Start(context.Background(), Config{}); err == nil {
		t.Fatal("Start with no deployments succeeded")
	}
}

func TestStartPicksSeedWhenZero(t *testing.T) {
	cfg := one(Azure, nil)
	cfg.Seed = 0
	s := startSim(t, cfg)
	if s.Seed() == 0 {
		t.Error("Seed() = 0, want a picked seed")
	}
}

func TestSharedListenerRoutesByName(t *testing.T) {
	cfg := Config{Seed: 1, Listen: "127.0.0.1:0", Deployments: []Deployment{
		{Name: "uksouth", Deployment: "chat-prod"},
		{Name: "westeurope", Deployment: "chat-prod"},
		{Name: "oai", Flavour: OpenAI, Deployment: "gpt-4o-mini"},
	}}
	s := startSim(t, cfg)
	eps := s.Deployments()
	host := strings.TrimSuffix(eps[0].URL, "/uksouth")
	tests := []struct {
		name    string
		ep      Endpoint
		wantURL string
	}{
		{"azure uksouth", eps[0], host + "/uksouth"},
		{"azure westeurope", eps[1], host + "/westeurope"},
		{"openai", eps[2], host + "/oai/v1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ep.URL != tc.wantURL {
				t.Fatalf("URL = %q, want %q", tc.ep.URL, tc.wantURL)
			}
			resp, b := chat(t, tc.ep, "hello", 3)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			if tc.ep.Flavour == Azure && resp.Header.Get("x-ms-region") != tc.ep.Region {
				t.Errorf("x-ms-region = %q, want %q", resp.Header.Get("x-ms-region"), tc.ep.Region)
			}
		})
	}
	st := s.Stats()
	for _, ep := range eps {
		if st[ep.Name].Answered != 1 {
			t.Errorf("%s answered %d, want 1", ep.Name, st[ep.Name].Answered)
		}
	}
	if resp, _ := do(t, http.MethodPost, host+"/nosuch/openai/v1/chat/completions", "{}", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown prefix: status %d, want 404", resp.StatusCode)
	}
	if resp, _ := do(t, http.MethodGet, host+"/_sim/stats", "", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("control on shared listener: status %d", resp.StatusCode)
	}
}

func TestSharedListenerAnthropicAndGemini(t *testing.T) {
	cfg := Config{Seed: 1, Listen: "127.0.0.1:0", Deployments: []Deployment{
		{Name: "claude", Flavour: Anthropic, Deployment: "claude-test"},
		{Name: "gem", Flavour: Gemini, Deployment: "gemini-test"},
	}}
	s := startSim(t, cfg)
	an, gm := s.Deployments()[0], s.Deployments()[1]
	if !strings.HasSuffix(an.URL, "/claude") || !strings.HasSuffix(gm.URL, "/gem") {
		t.Fatalf("URLs %q and %q, want the /{name} prefix and nothing more", an.URL, gm.URL)
	}
	client := anthropicClient(an)
	if _, err := client.Messages.New(context.Background(), messageParams(an, "hi", 5)); err != nil {
		t.Errorf("anthropic through the prefix: %v", err)
	}
	if resp, b := do(t, http.MethodPost, generateURL(gm, false), geminiRequest("hi", ""), nil); resp.StatusCode != 200 {
		t.Errorf("gemini through the prefix: %d %s", resp.StatusCode, b)
	}
	st := s.Stats()
	if st["claude"].Answered != 1 || st["gem"].Answered != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestSeparateControlListener(t *testing.T) {
	cfg := one(Azure, nil)
	cfg.Control = "127.0.0.1:0"
	s := startSim(t, cfg)
	ep := s.Deployments()[0]
	if strings.HasPrefix(s.ControlURL(), ep.URL) {
		t.Fatalf("ControlURL %q is on the deployment listener %q", s.ControlURL(), ep.URL)
	}
	for _, base := range []string{s.ControlURL(), ep.URL + "/_sim"} {
		resp, b := do(t, http.MethodGet, base+"/stats", "", nil)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"d1"`) {
			t.Errorf("GET %s/stats: %d %s", base, resp.StatusCode, b)
		}
	}
	resp, _ := do(t, http.MethodPost, strings.TrimSuffix(s.ControlURL(), "/_sim")+"/openai/v1/chat/completions", "{}", nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("API on control listener: status %d, want 404", resp.StatusCode)
	}
}

func TestFixedDeploymentListen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := startSim(t, one(Azure, func(d *Deployment) { d.Listen = addr }))
	if got, want := s.Deployments()[0].URL, "http://"+addr; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
}

func TestCloseDuringLatencyCutsTheConnection(t *testing.T) {
	s, err := Start(context.Background(), one(Azure, func(d *Deployment) { d.Latency = Latency{Median: time.Hour} }))
	if err != nil {
		t.Fatal(err)
	}
	ep := s.Deployments()[0]
	done := make(chan error, 1)
	go func() {
		resp, err := noKeepAlive.Post(chatPath(ep), "application/json", strings.NewReader(chatBodyFor(ep, "hi", 3)))
		if err == nil {
			resp.Body.Close()
			err = errors.New("got a response: " + resp.Status)
		}
		done <- err
	}()
	eventually(t, "the request to be in flight", func() bool { return s.Stats()["d1"].InFlight == 1 })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || strings.Contains(err.Error(), "got a response") {
		t.Errorf("client: %v, want a connection error (no empty 200)", err)
	}
	if st := s.Stats()["d1"]; st.Abandoned != 1 {
		t.Errorf("stats = %+v, want 1 abandoned", st)
	}
}
