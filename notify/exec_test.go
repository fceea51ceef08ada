package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// script writes a shell script under t.TempDir and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs /bin/sh")
	}
	p := filepath.Join(t.TempDir(), "notify.sh")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

func TestExecStdinAndEnv(t *testing.T) {
	dir := t.TempDir()
	sh := script(t, `cat > "$1/stdin.json"; env > "$1/env"; echo done; echo oops >&2`)
	t.Setenv("PROVIDER_KEY", "sk-should-not-leak")
	var stdout, stderr bytes.Buffer
	e := &Exec{
		Command: []string{"/bin/sh", sh, dir},
		Env:     []string{"PATH=/usr/bin:/bin", "EXTRA=1"},
		Stdout:  &stdout, Stderr: &stderr,
	}
	if e.Name() != "exec:sh" {
		t.Errorf("Name %q", e.Name())
	}
	n := sample()
	n.To = []string{"westeurope", "swedencentral"}
	if err := e.Send(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	var got Notification
	b, err := os.ReadFile(filepath.Join(dir, "stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("stdin %s: %v", b, err)
	}
	if got.Kind != n.Kind || got.Pool != n.Pool || !slices.Equal(got.To, n.To) || got.Text != n.Text || !got.At.Equal(n.At) {
		t.Errorf("stdin %s", b)
	}
	env := readEnv(t, filepath.Join(dir, "env"))
	want := map[string]string{
		"SWITCHOVER_KIND":   "failover",
		"SWITCHOVER_POOL":   "chat-prod",
		"SWITCHOVER_FROM":   "eastus",
		"SWITCHOVER_TO":     "westeurope,swedencentral",
		"SWITCHOVER_REASON": "429 quota: 5 failures in 30s, last 429",
		"SWITCHOVER_AT":     "2026-11-30T13:00:05Z",
		"SWITCHOVER_TEXT":   n.Text,
		"EXTRA":             "1",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["PROVIDER_KEY"]; ok {
		t.Error("the gateway's environment leaked through an explicit Env")
	}
	if stdout.String() != "done\n" || stderr.String() != "oops\n" {
		t.Errorf("stdout %q stderr %q", stdout.String(), stderr.String())
	}
}

func TestExecInheritsEnvironmentByDefault(t *testing.T) {
	dir := t.TempDir()
	sh := script(t, `env > "$1/env"`)
	t.Setenv("NOTIFY_TEST_INHERITED", "yes")
	if err := (&Exec{Command: []string{"/bin/sh", sh, dir}}).Send(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	env := readEnv(t, filepath.Join(dir, "env"))
	if env["NOTIFY_TEST_INHERITED"] != "yes" || env["SWITCHOVER_POOL"] != "chat-prod" {
		t.Errorf("env %v", env)
	}
}

func TestExecErrors(t *testing.T) {
	const secretArg = "--token=XXXXSECRET"
	cases := []struct {
		name  string
		exec  Exec
		check func(t *testing.T, err error)
	}{
		{"exit 1", Exec{Command: []string{"/bin/sh", "-c", "exit 1", secretArg}}, func(t *testing.T, err error) {
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("err %v, want exit status 1", err)
			}
			if !temporary(err) {
				t.Error("a failed script should be retried")
			}
		}},
		{"hangs past the timeout", Exec{Command: []string{"/bin/sh", "-c", "exec sleep 30", secretArg}, Timeout: 100 * time.Millisecond},
			func(t *testing.T, err error) {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err %v, want deadline exceeded", err)
				}
			}},
		{"child holds the output open", Exec{Command: []string{"/bin/sh", "-c", "sleep 30 & wait", secretArg},
			Timeout: 100 * time.Millisecond, Stdout: &bytes.Buffer{}},
			func(t *testing.T, err error) {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err %v, want deadline exceeded", err)
				}
			}},
		{"no such program", Exec{Command: []string{"/nonexistent/notify-prog", secretArg}}, func(t *testing.T, err error) {
			if !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("err %v", err)
			}
		}},
		{"no command", Exec{}, func(t *testing.T, err error) {
			if !errors.Is(err, ErrNoCommand) || temporary(err) {
				t.Fatalf("err %v", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if runtime.GOOS == "windows" {
				t.Skip("needs /bin/sh")
			}
			errc := make(chan error, 1)
			go func() { errc <- tc.exec.Send(context.Background(), sample()) }()
			var err error
			select {
			case err = <-errc:
			case <-time.After(10 * time.Second): // a guard against a hang, not a timing assertion
				t.Fatal("Send did not return: the command was not killed")
			}
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "XXXXSECRET") {
				t.Errorf("error shows an argument: %v", err)
			}
			tc.check(t, err)
		})
	}
}
