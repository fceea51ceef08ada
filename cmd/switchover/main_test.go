package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestExitCodes(t *testing.T) {
	good := filepath.Join("..", "..", "examples", "switchover.yaml")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("backends:\n  - name: a\n    typo: 1\n"), 0o600)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"no command", nil, exitUsage, "", "Usage:"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"version", []string{"version"}, exitOK, "switchover dev", ""},
		{"check good", []string{"check", "-c", good}, exitOK, "ok (3 backends, 1 pools, 0 keys)", ""},
		{"check bad", []string{"check", "-c", bad}, exitConfig, "", `bad.yaml:3: backends[0]: unknown field "typo"`},
		{"check missing file", []string{"check", "-c", "/nonexistent.yaml"}, exitError, "", "no such file"},
		{"check without -c", []string{"check"}, exitUsage, "", "check needs -c FILE"},
		{"serve bad config", []string{"serve", "-c", bad}, exitConfig, "", "unknown field"},
		{"bad flag", []string{"serve", "-nope"}, exitUsage, "", "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut syncBuffer
			code := run(t.Context(), tc.args, &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errOut.String())
			}
			if !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) {
				t.Fatalf("stdout %q stderr %q", out.String(), errOut.String())
			}
		})
	}
}

// TestDemo runs the README's first command in-process: serve with no
// config, then uses the gateway it prints with the official OpenAI client,
// and takes the primary region down through the simulator's control API.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "-listen", "127.0.0.1:0"}, &out, &errOut) }()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("demo exited %d: %s", code, errOut.String())
		}
	}()
	base := regexp.MustCompile(`a gateway on (http://127\.0\.0\.1:\d+)`)
	control := regexp.MustCompile(`curl -s -X POST (http://127\.0\.0\.1:\d+)/_sim/deployments/uksouth/fault`)
	var gw, ctl string
	for deadline := time.Now().Add(10 * time.Second); gw == "" || ctl == ""; {
		if m := base.FindStringSubmatch(out.String()); m != nil {
			gw = m[1]
		}
		if m := control.FindStringSubmatch(out.String()); m != nil {
			ctl = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("demo did not start: %s %s", out.String(), errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{"uksouth", "swedencentral", "westeurope", "base URL " + gw + "/v1", `model "chat-prod"`, "listen: 127.0.0.1:0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q", want)
		}
	}

	client := openai.NewClient(option.WithBaseURL(gw+"/v1/"), option.WithAPIKey("anything"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model:     "chat-prod",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")},
		MaxTokens: openai.Int(8),
	}
	var raw *http.Response
	resp, err := client.Chat.Completions.New(t.Context(), params, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content == "" || raw.Header.Get("X-Switchover-Backend") != "aoai-uksouth" {
		t.Fatalf("first answer %q from %s", resp.Choices[0].Message.Content, raw.Header.Get("X-Switchover-Backend"))
	}

	// Take uksouth down: the next call, streamed, is answered by tier 2.
	r, err := http.Post(ctl+"/_sim/deployments/uksouth/fault", "application/json", strings.NewReader(`{"mode":"down"}`))
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("setting the fault: %v %v", r, err)
	}
	r.Body.Close()
	stream := client.Chat.Completions.NewStreaming(t.Context(), params, option.WithResponseInto(&raw))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if b := raw.Header.Get("X-Switchover-Backend"); b != "aoai-swedencentral" && b != "aoai-westeurope" {
		t.Fatalf("with uksouth down, answered by %q", b)
	}
	if raw.Header.Get("X-Switchover-Failover") != "true" || acc.Choices[0].Message.Content == "" {
		t.Fatalf("failover %q, content %q", raw.Header.Get("X-Switchover-Failover"), acc.Choices[0].Message.Content)
	}
}

func TestLoadAndGamedayCommands(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Switchover-Backend", "here")
		io.WriteString(w, `{"choices":[{"message":{"content":"hi"}}]}`)
	}))
	defer srv.Close()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"load burst", []string{"load", "-url", srv.URL, "-concurrency", "2", "-n", "6", "-q"}, exitOK, "success      100.00% (6 answered, 0 failed)", ""},
		{"load json", []string{"load", "-url", srv.URL, "-concurrency", "1", "-n", "2", "-q", "-json"}, exitOK, `"success_rate": 1`, ""},
		{"load needs a model of load", []string{"load", "-url", srv.URL}, exitUsage, "", "exactly one of -rate or -concurrency"},
		{"load bad strategy", []string{"load", "-rate", "1", "-strategy", "random", "-region", "a=http://127.0.0.1:1"}, exitUsage, "", `unknown strategy "random"`},
		{"load bad region flag", []string{"load", "-rate", "1", "-region", "nourl"}, exitUsage, "", "want NAME=URL"},
		{"gameday list", []string{"gameday", "-list"}, exitOK, "main-region-short", ""},
		{"gameday unknown scenario", []string{"gameday", "-only", "nope"}, exitUsage, "", `no scenario "nope"`},
		{"gameday bad file", []string{"gameday", "-f", "/nonexistent.yaml"}, exitConfig, "", "no such file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut syncBuffer
			code := run(t.Context(), tc.args, &out, &errOut)
			if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errOut.String())
			}
		})
	}
}

// TestGamedayWritesReports runs a one-scenario game day from a YAML file
// and checks the files it writes.
func TestGamedayWritesReports(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	os.WriteFile(scen, []byte(`scenarios:
  - name: quick
    title: Quick
    regions: [{name: a, latency: 20ms}, {name: b, latency: 30ms}]
    load: {concurrency: 2, total: 20, max_tokens: 5}
    setups:
      - {name: "gateway", mode: gateway, members: [{region: a}, {region: b}], attempts: 2}
      - {name: "client", mode: client, members: [{region: a}, {region: b}], attempts: 2}
`), 0o600)
	html, js, md := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md")
	var out, errOut syncBuffer
	if code := run(t.Context(), []string{"gameday", "-f", scen, "-html", html, "-json", js, "-markdown", md, "-q"}, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "== Quick") || !strings.Contains(out.String(), "100%") {
		t.Fatalf("tables:\n%s", out.String())
	}
	for _, f := range []struct{ path, want string }{{html, "<svg"}, {js, `"scenarios"`}, {md, "| gateway | 100% |"}} {
		b, err := os.ReadFile(f.path)
		if err != nil || !strings.Contains(string(b), f.want) {
			t.Errorf("%s: %v, lacks %q", f.path, err, f.want)
		}
	}
}
