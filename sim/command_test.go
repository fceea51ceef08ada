package sim

import (
	"github.com/switchover-gw/switchover/internal/syncbuf"

	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

type syncBuffer = syncbuf.Buffer

// runCommand starts Command in the background and waits for it to print
// its endpoints. The returned stop cancels it and returns its error.
func runCommand(t *testing.T, args ...string) (out string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	// The wait for the endpoints ends early if Command returns.
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second) // a guard against a hang, not a timing assertion
	defer wcancel()
	go func() {
		err := Command(ctx, args, stdout, stderr)
		wcancel()
		done <- err
	}()
	if stdout.WaitFor(wctx, func(s string) bool { return strings.Contains(s, "control: ") }) != nil {
		cancel()
		select {
		case err := <-done:
			t.Fatalf("Command %v: %v\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr.String())
		case <-time.After(5 * time.Second):
			t.Fatalf("Command %v printed no endpoints and did not return\nstderr: %s", args, stderr.String())
		}
	}
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			return errors.New("Command did not return after cancel")
		}
	}
	t.Cleanup(func() { _ = stop() })
	return stdout.String(), stop
}

var urlRE = regexp.MustCompile(`http://127\.0\.0\.1:\d+\S*`)

func TestCommandQuickForm(t *testing.T) {
	out, stop := runCommand(t, "--regions", "uksouth,westeurope", "--flavour", "openai", "--deployment", "gpt-4o-mini", "--rpm", "60", "--tpm", "10000", "--seed", "1", "--key", "sk-x")
	for _, want := range []string{"2 deployments, seed 1, quota slice 10s", "uksouth", "westeurope", "deployment=gpt-4o-mini", "rpm=60 tpm=10000"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	urls := urlRE.FindAllString(out, -1)
	if len(urls) < 3 {
		t.Fatalf("found URLs %v in:\n%s", urls, out)
	}
	ep := Endpoint{Flavour: OpenAI, Deployment: "gpt-4o-mini", URL: urls[0]}
	if !strings.HasSuffix(ep.URL, "/v1") {
		t.Errorf("openai URL %q lacks /v1", ep.URL)
	}
	resp, b := do(t, http.MethodPost, chatPath(ep), chatBodyFor(ep, "hi", 2), map[string]string{"Authorization": "Bearer sk-x"})
	if resp.StatusCode != 200 {
		t.Errorf("chat via printed URL: %d %s", resp.StatusCode, b)
	}
	resp, b = do(t, http.MethodPost, ep.URL+"/responses", `{"model":"gpt-4o-mini","input":"hi"}`, map[string]string{"Authorization": "Bearer sk-x"})
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"object":"response"`) {
		t.Errorf("responses via printed URL: %d %s", resp.StatusCode, b)
	}
	control := urlRE.FindString(out[strings.Index(out, "control: "):])
	if resp, b := do(t, http.MethodGet, control+"/stats", "", nil); resp.StatusCode != 200 || !strings.Contains(string(b), `"uksouth"`) {
		t.Errorf("stats via printed control URL: %d %s", resp.StatusCode, b)
	}
	if err := stop(); err != nil {
		t.Errorf("Command returned %v after cancel, want nil", err)
	}
}

func TestCommandDefaultsToDemo(t *testing.T) {
	out, _ := runCommand(t)
	for _, want := range []string{"3 deployments", "uksouth", "swedencentral", "westeurope", "azure", "deployment=chat-prod", "rpm=60"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The demo serves the endpoints beyond chat too.
	base := urlRE.FindString(out)
	resp, b := do(t, http.MethodPost, base+"/openai/responses?api-version=2025-04-01-preview", `{"model":"chat-prod","input":"hi"}`, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"object":"response"`) {
		t.Errorf("demo responses at %s: %d %s", base, resp.StatusCode, b)
	}
}

func TestCommandConfigFile(t *testing.T) {
	out, _ := runCommand(t, "-c", "testdata/benchmark.good.yaml", "--seed", "99", "--listen", "127.0.0.1:0")
	if !strings.Contains(out, "seed 99") {
		t.Errorf("--seed did not override the file:\n%s", out)
	}
	if !strings.Contains(out, "/uksouth") || !strings.Contains(out, "/westeurope") {
		t.Errorf("--listen did not put deployments on one port under /{name}:\n%s", out)
	}
}

func TestCommandErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"quick flag with a file", []string{"-c", "testdata/benchmark.good.yaml", "--rpm", "5"}, "--rpm belongs to the quick form"},
		{"bad file", []string{"-c", "testdata/negative-rpm.bad.yaml"}, "line 6"},
		{"bad flavour", []string{"--flavour", "watsonx"}, "flavour"},
		{"stray argument", []string{"serve"}, "unexpected argument"},
		{"unknown flag", []string{"--nope"}, "flag provided but not defined"},
		{"no regions", []string{"--regions", ","}, "at least one deployment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Command(context.Background(), tc.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if err := Command(context.Background(), []string{"-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: err = %v, want flag.ErrHelp", err)
	}
}
