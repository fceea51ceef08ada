package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/sim"
)

// providerEnv is one simulated deployment per provider, with keys, and a
// gateway whose pool chat-prod puts them in the given priority order.
type providerEnv struct {
	sim  *sim.Sim
	gw   *gateway.Gateway
	url  string
	logs *syncBuffer
}

// simProviders are the simulated deployments: an Azure region, OpenAI,
// Anthropic, Gemini and a local OpenAI-compatible server.
var simProviders = []sim.Deployment{
	{Name: "aoai-weu", Flavour: sim.Azure, Deployment: "gpt-4o", Key: "azure-key-000000000"},
	{Name: "openai", Flavour: sim.OpenAI, Deployment: "gpt-4o-2024-08-06", Model: "gpt-4o-2024-08-06", Key: "sk-openai-00000000"},
	{Name: "claude", Flavour: sim.Anthropic, Deployment: "claude-sonnet-4-5", Key: "sk-ant-000000000000"},
	{Name: "gemini", Flavour: sim.Gemini, Deployment: "gemini-2.5-flash", Key: "goog-key-000000000"},
	{Name: "local", Flavour: sim.OpenAI, Deployment: "llama3.1"},
}

// backendYAML is the gateway backend for a simulated deployment served
// at url.
func backendYAML(d sim.Deployment, url string) string {
	switch d.Flavour {
	case sim.Azure:
		return fmt.Sprintf("  - {name: %s, type: azure, url: %q, api_key: %q, region: westeurope}\n", d.Name, url, d.Key)
	case sim.OpenAI:
		if d.Key == "" {
			return fmt.Sprintf("  - {name: %s, type: openai_compatible, url: %q}\n", d.Name, url)
		}
		return fmt.Sprintf("  - {name: %s, type: openai, url: %q, api_key: %q}\n", d.Name, url, d.Key)
	case sim.Anthropic:
		return fmt.Sprintf("  - {name: %s, type: anthropic, url: %q, api_key: %q}\n", d.Name, url, d.Key)
	case sim.Gemini:
		return fmt.Sprintf("  - {name: %s, type: gemini, url: %q, api_key: %q}\n", d.Name, url, d.Key)
	}
	panic(d.Flavour)
}

// startProviders starts the simulated deployments (edit changes the
// simulated side only: the gateway is configured with simProviders as
// they are) and a gateway with pool chat-prod over the named members in
// priority order.
func startProviders(t *testing.T, order []string, edit func(*sim.Deployment), extra string) *providerEnv {
	t.Helper()
	return startProvidersWith(t, order, edit, extra, nil)
}

// startProvidersWith is startProviders with the gateway's YAML passed
// through mod before it is parsed.
func startProvidersWith(t *testing.T, order []string, edit func(*sim.Deployment), extra string, mod func(string) string) *providerEnv {
	t.Helper()
	deps := append([]sim.Deployment(nil), simProviders...)
	for i := range deps {
		if edit != nil {
			edit(&deps[i])
		}
	}
	s, urls := startSim(t, deps...)
	var y strings.Builder
	y.WriteString("log: {format: json, level: info}\nserver: {drain_delay: 0s}\nbackends:\n")
	for _, d := range simProviders {
		y.WriteString(backendYAML(d, urls[d.Name]))
	}
	y.WriteString("pools:\n  - name: chat-prod\n    aliases: [claude-sonnet-4-5]\n    retry: {attempts: 5}\n    members:\n")
	for i, name := range order {
		for _, d := range deps {
			if d.Name == name {
				fmt.Fprintf(&y, "      - {backend: %s, priority: %d, model: %s}\n", name, i+1, d.Deployment)
			}
		}
	}
	y.WriteString(extra)
	yml := y.String()
	if mod != nil {
		yml = mod(yml)
	}
	secrets := map[string]string{}
	for _, d := range deps {
		if d.Key != "" {
			secrets["backend key of "+d.Name] = d.Key
		}
	}
	g, url, logs := serveYAML(t, "providers.yaml", yml, secrets)
	return &providerEnv{sim: s, gw: g, url: url, logs: logs}
}

// serveYAML starts a gateway on the configuration yml (name is its file
// name in errors) with an info-level JSON log, serves it on a loopback
// port until the test ends, and returns it with its base URL and its log.
// When the test ends, none of secrets (what each is -> its value) may be in
// the log.
func serveYAML(t *testing.T, name, yml string, secrets map[string]string) (*gateway.Gateway, string, *syncBuffer) {
	t.Helper()
	cfg, err := config.Parse(name, []byte(yml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%v\n%s", err, yml)
	}
	logs := &syncBuffer{}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(logs, "json", "info")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after serve's: the log is complete
		for what, secret := range secrets {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the gateway's log shows the %s", what)
			}
		}
	})
	return g, serve(t, g), logs
}

// serve serves g on a loopback port until the test ends and returns its
// base URL.
func serve(t *testing.T, g *gateway.Gateway) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// startSim starts the simulated deployments deps, closed when the test
// ends, and returns the simulator with each deployment's base URL by name.
func startSim(t *testing.T, deps ...sim.Deployment) (*sim.Sim, map[string]string) {
	t.Helper()
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: deps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	urls := map[string]string{}
	for _, e := range s.Deployments() {
		urls[e.Name] = e.URL
	}
	return s, urls
}

// sdkOpenAI is the official OpenAI SDK's client of the gateway at url,
// without retries (the gateway's retries are under test).
func sdkOpenAI(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

// sdkAnthropic is the official Anthropic SDK's client of the gateway at
// url, without retries.
func sdkAnthropic(url string) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("unused"), aoption.WithMaxRetries(0))
}

// readAnthropicStream accumulates an Anthropic SDK stream into its message,
// failing t on an error of the stream or of an event.
func readAnthropicStream(t *testing.T, s *ssestream.Stream[anthropic.MessageStreamEventUnion]) anthropic.Message {
	t.Helper()
	var m anthropic.Message
	for s.Next() {
		if err := m.Accumulate(s.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *providerEnv) openai() openai.Client { return sdkOpenAI(e.url) }

// TestModelVersionMismatchWarned: members of one pool of the same type
// answering with different versions are warned about, once both versions
// are known. (Recording each backend's version is the engine's:
// engine.TestModelVersionRecordedFromPlainAndStreamedAnswers.)
func TestModelVersionMismatchWarned(t *testing.T) {
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Deployments: []sim.Deployment{
		{Name: "weu", Flavour: sim.Azure, Deployment: "chat", Model: "gpt-4o-2024-08-06"},
		{Name: "sec", Flavour: sim.Azure, Deployment: "chat", Model: "gpt-4o-2024-11-20"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	eps := s.Deployments()
	y := fmt.Sprintf(`backends:
  - {name: weu, type: azure, url: %q}
  - {name: sec, type: azure, url: %q}
pools:
  - name: chat
    members: [{backend: weu, priority: 1}, {backend: sec, priority: 2}]
`, eps[0].URL, eps[1].URL)
	cfg, _ := config.Parse("m.yaml", []byte(y), nil)
	logs := &syncBuffer{}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(logs, "json", "info")})
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: g.Pool("chat")}
	send := func(stream bool) {
		body := `{"model":"chat","messages":[{"role":"user","content":"hi"}],"stream":` + fmt.Sprint(stream) + `}`
		resp, err := client.Post("http://x/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	send(false)
	if strings.Contains(logs.String(), "different model versions") {
		t.Fatal("warned with one version known")
	}
	s.SetFault("weu", sim.Fault{Mode: sim.FaultDown})
	send(true)
	if !strings.Contains(logs.String(), `"versions":"sec=gpt-4o-2024-11-20, weu=gpt-4o-2024-08-06"`) {
		t.Fatalf("no mismatch warning:\n%s", logs.String())
	}
}
