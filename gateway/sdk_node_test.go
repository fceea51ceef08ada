package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/testpki"
	"github.com/switchover-gw/switchover/sim"
)

// The official JavaScript SDKs through the gateway: the scripts in
// sdk/node (their versions pinned by its package-lock.json) run named
// checks against a gateway in front of the simulator and print one JSON
// line per check; each check is a subtest here.

const sdkNodeKey = "sdk-node-client-key-0123456789abcdef"

// sdkNodeDeployments are the simulated deployments behind the gateway.
// down and busy fail every call (a 500, a 429) and overloaded every
// Anthropic call (529), so that the pools they head fail over.
var sdkNodeDeployments = []sim.Deployment{
	{Name: "oai", Flavour: sim.OpenAI, Deployment: "gpt-4o", Key: "sk-oai-backend-000000"},
	{Name: "reasoner", Flavour: sim.OpenAI, Deployment: "o4-mini", Key: "sk-oai-backend-000000"},
	{Name: "aoai", Flavour: sim.Azure, Deployment: "gpt-4o", Key: "azure-backend-key-0000"},
	{Name: "claude", Flavour: sim.Anthropic, Deployment: "claude-sonnet-4-5", Key: "sk-ant-backend-00000"},
	{Name: "gemini", Flavour: sim.Gemini, Deployment: "gemini-2.5-flash", Key: "goog-backend-key-0000"},
	{Name: "down", Flavour: sim.OpenAI, Deployment: "gpt-4o", Key: "sk-oai-backend-000000"},
	{Name: "busy", Flavour: sim.OpenAI, Deployment: "gpt-4o", Key: "sk-oai-backend-000000"},
	{Name: "overloaded", Flavour: sim.Anthropic, Deployment: "claude-sonnet-4-5", Key: "sk-ant-backend-00000"},
}

// sdkNodeFaults are the faults set on the failing deployments.
var sdkNodeFaults = map[string]sim.Fault{
	"down":       {Mode: sim.FaultError500},
	"busy":       {Mode: sim.FaultQuota, TPM: 1},
	"overloaded": {Mode: sim.FaultOverloaded},
}

// sdkNodePools are the gateway's pools, one per shape: passed through
// (the member speaks the client's format), translated (it does not), and
// failover (the first member fails every call).
const sdkNodePools = `pools:
  - {name: gpt-4o, members: [{backend: oai, priority: 1}]}
  - {name: azure-4o, members: [{backend: aoai, priority: 1, model: gpt-4o}]}
  - {name: claude, members: [{backend: claude, priority: 1, model: claude-sonnet-4-5}]}
  - {name: via-claude, members: [{backend: claude, priority: 1, model: claude-sonnet-4-5}]}
  - {name: via-openai, members: [{backend: reasoner, priority: 1, model: o4-mini}]}
  - {name: via-azure, members: [{backend: aoai, priority: 1, model: gpt-4o}]}
  - {name: via-gemini, members: [{backend: gemini, priority: 1, model: gemini-2.5-flash}]}
  - name: failover-5xx
    retry: {attempts: 3}
    members: [{backend: down, priority: 1, model: gpt-4o}, {backend: oai, priority: 2, model: gpt-4o}]
  - name: failover-429
    retry: {attempts: 3}
    members: [{backend: busy, priority: 1, model: gpt-4o}, {backend: oai, priority: 2, model: gpt-4o}]
  - name: failover-529
    retry: {attempts: 3}
    members: [{backend: overloaded, priority: 1, model: claude-sonnet-4-5}, {backend: claude, priority: 2, model: claude-sonnet-4-5}]
pinned:
  - {paths: [files, batches], backend: oai}
  - {paths: [messages/batches], backend: claude}
`

// sdkNodeRun is one run of a script: its checks against one pool.
type sdkNodeRun struct {
	name   string // subtest name; known failures are keyed "name/check"
	script string
	model  string
	env    []string
	checks []string
	// failedOver names a deployment that must have taken at least one
	// call during the run and answered none (the pool's failing first
	// member), so that the run's answers came after a failure.
	failedOver string
}

var (
	openaiChecks = []string{"errors", "chat", "chat_n2", "chat_stream", "chat_stream_helper", "chat_tools", "chat_tools_runner",
		"responses_create", "responses_stream", "responses_stored", "responses_background", "responses_compact",
		"embeddings", "moderations", "images", "audio_speech", "audio_transcription", "files_batches", "realtime"}
	// Azure has no moderations.
	azureChecks = []string{"errors", "chat", "chat_n2", "chat_stream", "chat_stream_helper", "chat_tools", "chat_tools_runner",
		"responses_create", "responses_stream", "responses_stored", "responses_background", "responses_compact", "responses_deployment_client",
		"embeddings", "images", "audio_speech", "audio_transcription", "files_batches", "realtime"}
	// Translated for an Anthropic or Gemini member: chat, and Responses
	// through chat.
	openaiTranslatedChecks = []string{"errors", "chat", "chat_stream", "chat_stream_helper", "chat_tools", "chat_tools_runner",
		"responses_create", "responses_stream"}
	openaiFailoverChecks = []string{"chat", "chat_stream", "chat_tools", "responses_create", "responses_stream", "embeddings"}
	anthropicChecks      = []string{"errors", "messages", "messages_stream", "messages_stream_helper", "tools", "count_tokens", "thinking", "thinking_blocks", "message_batches"}
	anthropicTranslated  = []string{"errors", "messages", "messages_stream", "messages_stream_helper", "tools", "count_tokens", "thinking"}
	// gpt-4o and Gemini do not reason: thinking skips them.
	anthropicNoThinking = []string{"errors", "messages", "messages_stream", "messages_stream_helper", "tools", "count_tokens"}
	anthropicFailover   = []string{"messages", "messages_stream", "tools"}
	vercelOpenAIChecks  = []string{"openai_generate", "openai_stream", "openai_tools", "openai_chat_generate"}
	vercelAnthropic     = []string{"anthropic_generate", "anthropic_stream", "anthropic_tools"}
	langchainOpenAI     = []string{"openai_invoke", "openai_stream", "openai_tools", "openai_responses_invoke"}
	langchainAnthropic  = []string{"anthropic_invoke", "anthropic_stream"}
)

var sdkNodeRuns = []sdkNodeRun{
	{name: "openai/passthrough", script: "openai.mjs", model: "gpt-4o", checks: openaiChecks},
	{name: "openai/azure", script: "openai.mjs", model: "azure-4o", env: []string{"SDK_AZURE=1"}, checks: azureChecks},
	{name: "openai/translated", script: "openai.mjs", model: "via-claude", checks: openaiTranslatedChecks},
	{name: "openai/translated-gemini", script: "openai.mjs", model: "via-gemini", checks: openaiTranslatedChecks},
	{name: "openai/failover-5xx", script: "openai.mjs", model: "failover-5xx", checks: openaiFailoverChecks, failedOver: "down"},
	{name: "openai/failover-429", script: "openai.mjs", model: "failover-429", checks: openaiFailoverChecks, failedOver: "busy"},
	{name: "anthropic/passthrough", script: "anthropic.mjs", model: "claude", checks: anthropicChecks},
	{name: "anthropic/translated", script: "anthropic.mjs", model: "via-openai", checks: anthropicTranslated},
	{name: "anthropic/translated-azure", script: "anthropic.mjs", model: "via-azure", checks: anthropicNoThinking},
	{name: "anthropic/translated-gemini", script: "anthropic.mjs", model: "via-gemini", checks: anthropicNoThinking},
	{name: "anthropic/failover-529", script: "anthropic.mjs", model: "failover-529", checks: anthropicFailover, failedOver: "overloaded"},
	{name: "vercel/openai-passthrough", script: "vercel.mjs", model: "gpt-4o", checks: vercelOpenAIChecks},
	{name: "vercel/openai-translated", script: "vercel.mjs", model: "via-claude", checks: vercelOpenAIChecks},
	{name: "vercel/anthropic-passthrough", script: "vercel.mjs", model: "claude", checks: vercelAnthropic},
	{name: "vercel/anthropic-translated", script: "vercel.mjs", model: "via-openai", checks: vercelAnthropic},
	{name: "langchain/openai-passthrough", script: "langchain.mjs", model: "gpt-4o", checks: langchainOpenAI},
	{name: "langchain/anthropic-translated", script: "langchain.mjs", model: "via-openai", checks: langchainAnthropic},
}

// sdkNodeKnownFailures are the checks known to fail, keyed "run/check",
// with the reason. A known failure is still run: it is reported as a
// skip with its reason while it fails, and fails the test once it passes,
// so that it is taken off this list.
var sdkNodeKnownFailures = map[string]string{}

// sdkNodeTools finds node and sdk/node's modules; without them the test
// is skipped, or fails when SWITCHOVER_REQUIRE_NODE=1 (CI).
func sdkNodeTools(t *testing.T) (node, dir string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("SWITCHOVER_REQUIRE_NODE") == "1" {
			t.Fatalf("%s is missing and SWITCHOVER_REQUIRE_NODE=1", what)
		}
		t.Skipf("%s is missing: SDK test skipped (set SWITCHOVER_REQUIRE_NODE=1 to fail instead)", what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	dir, _ = filepath.Abs(filepath.Join("..", "sdk", "node"))
	for _, m := range []string{"openai", "@anthropic-ai/sdk", "ai", "@ai-sdk/openai", "@ai-sdk/anthropic", "ws", "@langchain/openai", "@langchain/anthropic"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", m, "package.json")); err != nil {
			missing(m + " (npm ci in sdk/node)")
		}
	}
	return node, dir
}

// sdkNodeEnv is the simulator and the gateway of the SDK test. The
// gateway serves TLS itself (server.tls, with a CA the test makes), as
// the SDK's Realtime client dials wss:// only: every script runs over
// https.
type sdkNodeEnv struct {
	sim    *sim.Sim
	url    string // https://127.0.0.1:port
	caFile string // the test CA's certificate, for NODE_EXTRA_CA_CERTS
}

func startSDKNodeEnv(t *testing.T) *sdkNodeEnv {
	t.Helper()
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: sdkNodeDeployments}, sim.WithWaiter(instant{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for name, f := range sdkNodeFaults {
		if err := s.SetFault(name, f); err != nil {
			t.Fatal(err)
		}
	}
	eps := map[string]sim.Endpoint{}
	for _, e := range s.Deployments() {
		eps[e.Name] = e
	}
	dir := t.TempDir()
	ca := testpki.NewCA(t, "sdk test CA")
	certPEM, keyPEM := ca.Server(t, "gateway", "127.0.0.1")
	certFile, keyFile := testpki.Write(t, dir, "cert.pem", certPEM), testpki.Write(t, dir, "key.pem", keyPEM)
	var y strings.Builder
	fmt.Fprintf(&y, "listen: 127.0.0.1:0\nlog: {format: json, level: warn}\nserver: {drain_delay: 0s, tls: {cert_file: %q, key_file: %q}}\n", certFile, keyFile)
	fmt.Fprintf(&y, "keys: [{name: sdk, key: %s}]\nbackends:\n", sdkNodeKey)
	for _, d := range sdkNodeDeployments {
		typ := map[sim.Flavour]string{sim.OpenAI: "openai", sim.Azure: "azure", sim.Anthropic: "anthropic", sim.Gemini: "gemini"}[d.Flavour]
		// No probes: the failing members stay in their pools, so every
		// failover run meets them (until the breaker benches them).
		fmt.Fprintf(&y, "  - {name: %s, type: %s, url: %q, api_key: %q, probe: {disabled: true}}\n", d.Name, typ, eps[d.Name].URL, d.Key)
	}
	y.WriteString(sdkNodePools)
	path := filepath.Join(dir, "switchover.yaml")
	if err := os.WriteFile(path, []byte(y.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, y.String())
	}
	logs := &syncBuffer{}
	g, err := gateway.New(c, gateway.Options{Path: path, Logger: gateway.NewLogger(logs, "json", "warn")})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		for _, d := range sdkNodeDeployments {
			if strings.Contains(logs.String(), d.Key) {
				t.Errorf("backend key of %s in the log", d.Name)
			}
		}
		if strings.Contains(logs.String(), sdkNodeKey) {
			t.Error("client key in the log")
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	e := &sdkNodeEnv{sim: s, url: "https://" + ln.Addr().String(), caFile: testpki.Write(t, dir, "ca.pem", ca.PEM)}
	return e
}

// sdkNodeResult is a line a script prints.
type sdkNodeResult struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// runSDKNode runs a script with the run's checks, bounded in time, and
// returns its results by check.
func runSDKNode(t *testing.T, node, dir string, e *sdkNodeEnv, r sdkNodeRun) map[string]sdkNodeResult {
	t.Helper()
	// Each check is bounded by the script (SDK_CHECK_TIMEOUT_MS); the
	// whole run by this context, generous for a busy 2-core machine.
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{r.script}, r.checks...)...)
	cmd.Dir = dir
	cmd.WaitDelay = 10 * time.Second
	// The SDKs read these when no option is given (and some refuse an
	// empty one): keep the developer's own out of the run.
	var environ []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_VERSION", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
			"AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "GEMINI_API_KEY", "GOOGLE_API_KEY",
			"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY":
			continue
		}
		environ = append(environ, kv)
	}
	cmd.Env = append(environ,
		"SWITCHOVER_URL="+e.url,
		"SWITCHOVER_WSS_URL="+e.url,
		"SWITCHOVER_KEY="+sdkNodeKey,
		"NODE_EXTRA_CA_CERTS="+e.caFile,
		"SDK_MODEL="+r.model,
		"SDK_CHECK_TIMEOUT_MS=60000",
	)
	cmd.Env = append(cmd.Env, r.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", r.script, err, stdout.String(), stderr.String())
	}
	got := map[string]sdkNodeResult{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var res sdkNodeResult
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil || res.Check == "" {
			t.Errorf("not a result line: %q", sc.Text())
			continue
		}
		got[res.Check] = res
	}
	if stderr.Len() > 0 {
		t.Logf("stderr of %s:\n%s", r.script, stderr.String())
	}
	return got
}

// TestSDKNode runs the official JavaScript SDKs (OpenAI with its
// AzureOpenAI client, Anthropic, the Vercel AI SDK, LangChain) through
// the gateway on every pool shape, and fails per check with the script's
// detail.
func TestSDKNode(t *testing.T) {
	node, dir := sdkNodeTools(t)
	e := startSDKNodeEnv(t)
	// A script's run is cheap, but the SDKs' module loading is not on a
	// busy machine: the runs go one after another.
	for _, r := range sdkNodeRuns {
		t.Run(r.name, func(t *testing.T) {
			before := e.sim.Stats()[r.failedOver]
			got := runSDKNode(t, node, dir, e, r)
			for _, c := range r.checks {
				t.Run(c, func(t *testing.T) {
					res, ok := got[c]
					known, isKnown := sdkNodeKnownFailures[r.name+"/"+c]
					switch {
					case !ok:
						t.Fatalf("%s printed no result for %s", r.script, c)
					case res.OK && isKnown:
						t.Fatalf("passes but is listed as a known failure (%s): take it off sdkNodeKnownFailures", known)
					case res.OK:
						t.Logf("%.200s", res.Detail)
					case isKnown:
						t.Skipf("known failure (%s): %s", known, res.Detail)
					default:
						t.Fatalf("%s", res.Detail)
					}
				})
			}
			if r.failedOver != "" {
				after := e.sim.Stats()[r.failedOver]
				if after.Calls <= before.Calls {
					t.Errorf("%s took no call: the run did not fail over", r.failedOver)
				}
				if after.Answered != before.Answered {
					t.Errorf("%s answered %d calls: its fault is not in force", r.failedOver, after.Answered-before.Answered)
				}
			}
		})
	}
}

// TestSDKNodeGemini runs Google's Gen AI SDK (@google/genai) against
// the gateway's Gemini inbound API, on pools served by an OpenAI and by
// an Anthropic member (translated).
func TestSDKNodeGemini(t *testing.T) {
	node, dir := sdkNodeTools(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@google", "genai", "package.json")); err != nil {
		t.Fatal("@google/genai is missing (npm ci in sdk/node)")
	}
	e := startSDKNodeEnv(t)
	for _, r := range []sdkNodeRun{
		{name: "genai/openai-member", script: "genai.mjs", model: "gpt-4o", checks: []string{"generate", "stream", "tools", "count_tokens", "embed"}},
		{name: "genai/anthropic-member", script: "genai.mjs", model: "claude", checks: []string{"generate", "stream", "tools", "count_tokens"}},
	} {
		t.Run(r.name, func(t *testing.T) {
			got := runSDKNode(t, node, dir, e, r)
			for _, c := range r.checks {
				if res, ok := got[c]; !ok {
					t.Errorf("%s: %s printed no result", c, r.script)
				} else if !res.OK {
					t.Errorf("%s: %s", c, res.Detail)
				}
			}
		})
	}
}
