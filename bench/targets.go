package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Target names.
const (
	Direct     = "direct"
	Nginx      = "nginx"
	Switchover = "switchover"
	GoProxy    = "go-proxy"
)

// benchKey is the gateway key every request carries (the other targets
// pass it on to the mock, which ignores it).
const benchKey = "bench-key-0123456789abcdef0123456789"

// azurePath is the path the gateway's azure backend calls, and the one the
// direct call and the plain proxies are sent to.
const azurePath = "/openai/deployments/chat-prod/chat/completions?api-version=2024-10-21"

// target is one thing measured: a process (or, for direct, the mock
// upstream itself) and the URL its requests go to.
type target struct {
	name string
	url  string // the chat completions URL
	// pids are the processes whose CPU and memory are the target's: the
	// gateway, the reference proxy, nginx's master and worker. None for
	// direct.
	pids    []int
	metrics string // the gateway's /metrics URL, else ""
	admin   string // the gateway's admin API, for the reload row, else ""
	config  string // the gateway's configuration file, for the reload row
	cmd     *exec.Cmd
	log     *os.File
}

// freeAddr returns a 127.0.0.1 address no one listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// gatewayConfig is the README's "Use it" config with the mock upstream as
// both Azure resources, and a metrics listener of its own so that the
// bench can read the gateway's allocation counter without touching the
// API listener. Keys, the info log, quota-aware routing and the retry
// budget are the defaults, as there.
func gatewayConfig(listen, metrics, upstream string) string {
	return fmt.Sprintf(`listen: %s
server:
  metrics_listen: %s
keys:
  - name: app-team
    key: %s
backends:
  - name: aoai-westeurope
    type: azure
    url: %s
    api_key: upstream-key-weu
    region: westeurope
    first_byte_timeout: 60s
    stream_first_byte_timeout: 10s
    breaker: {failures: 5, window: 30s, statuses: [429, "500-599"], trip: 60s, accept_retry_after: true}
  - name: aoai-swedencentral
    type: azure
    url: %s
    api_key: upstream-key-sec
    region: swedencentral
pools:
  - name: chat-prod
    members:
      - {backend: aoai-westeurope, priority: 1}
      - {backend: aoai-swedencentral, priority: 2}
    retry: {attempts: 3}
`, listen, metrics, benchKey, upstream, upstream)
}

// nginxConfig is one worker proxying to the upstream over a keep-alive
// pool, logging each request to a file, as nginx is run in front of an API.
func nginxConfig(dir, listen, upstream string) string {
	up := strings.TrimPrefix(upstream, "http://")
	return fmt.Sprintf(`worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/nginx-error.log warn;
worker_rlimit_nofile 65536;
events { worker_connections 16384; }
http {
  access_log %[1]s/nginx-access.log;
  client_body_temp_path %[1]s/nginx-body;
  proxy_temp_path %[1]s/nginx-proxy;
  fastcgi_temp_path %[1]s/nginx-fastcgi;
  uwsgi_temp_path %[1]s/nginx-uwsgi;
  scgi_temp_path %[1]s/nginx-scgi;
  upstream mock {
    server %[3]s;
    keepalive 256;
  }
  server {
    listen %[2]s;
    location / {
      proxy_pass http://mock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`, dir, listen, up)
}

// starter starts the child processes of a run.
type starter struct {
	exe   string   // the switchover binary (or a test binary standing in)
	env   []string // added to every child's environment
	gwEnv []string // added to the gateway's
	nginx string   // path of nginx
	dir   string
}

func (s *starter) command(name string, args []string, env []string, logName string) (*exec.Cmd, *os.File, error) {
	log, err := os.Create(filepath.Join(s.dir, logName))
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(append(os.Environ(), s.env...), env...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so that stopping it stops nginx's workers too
	// and a terminal's ^C reaches the bench alone, which stops everything.
	// If the bench dies, the kernel signals the child: SIGKILL, except for
	// nginx's master, which must live to stop its workers (SIGTERM is its
	// fast shutdown).
	death := syscall.SIGKILL
	if name == s.nginx {
		death = syscall.SIGTERM
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: death}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, nil, err
	}
	return cmd, log, nil
}

// errExited is a target that ended before it answered: most likely its
// port was taken between freeAddr and its listen.
var errExited = errors.New("it exited")

// start starts the named target and waits until a chat completion through
// it succeeds; a target that exits at once is started again on another
// port, up to three times.
func (s *starter) start(ctx context.Context, name string, up *Upstream, h2 bool) (*target, error) {
	return thrice(func() (*target, error) { return s.startOnce(ctx, name, up, h2) })
}

// thrice runs start up to three times while the process it starts exits
// at once (errExited: its port taken between freeAddr and its listen).
func thrice(start func() (*target, error)) (*target, error) {
	var err error
	for range 3 {
		var t *target
		if t, err = start(); !errors.Is(err, errExited) {
			return t, err
		}
	}
	return nil, err
}

// gateway starts the gateway (`switchover serve`, with env) on the
// configuration that config writes for its listen and metrics addresses,
// as target name, its configuration and log files named after file, and
// waits until a chat completion through it succeeds.
func (s *starter) gateway(ctx context.Context, name, file string, env []string, config func(addr, maddr string) string) (*target, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	maddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(s.dir, file+".yaml")
	if err := os.WriteFile(cfg, []byte(config(addr, maddr)), 0o600); err != nil {
		return nil, err
	}
	cmd, log, err := s.command(s.exe, []string{"serve", "-c", cfg}, env, file+".log")
	if err != nil {
		return nil, err
	}
	t := &target{name: name, url: "http://" + addr + "/v1/chat/completions", metrics: "http://" + maddr + "/metrics", config: cfg, cmd: cmd, log: log}
	if err := t.waitReady(ctx); err != nil {
		t.stop()
		return nil, fmt.Errorf("bench: %s did not start: %w (its log: %s)", name, err, log.Name())
	}
	t.pids = []int{cmd.Process.Pid}
	return t, nil
}

func (s *starter) startOnce(ctx context.Context, name string, up *Upstream, h2 bool) (*target, error) {
	switch name {
	case Direct:
		return &target{name: Direct, url: up.URL + azurePath}, nil
	case Switchover:
		file, env := "switchover", s.gwEnv
		if h2 {
			file = "switchover-h2"
		}
		if up.CAFile != "" {
			env = append(append([]string(nil), env...), "SSL_CERT_FILE="+up.CAFile)
		}
		return s.gateway(ctx, name, file, env, func(addr, maddr string) string {
			return gatewayConfig(addr, maddr, up.URL)
		})
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	t := &target{name: name, url: "http://" + addr + azurePath}
	var cmd *exec.Cmd
	var log *os.File
	switch name {
	case GoProxy:
		cmd, log, err = s.command(s.exe, []string{"bench", "reference-proxy", "-listen", addr, "-upstream", up.URL}, nil, "go-proxy.log")
		if err != nil {
			return nil, err
		}
	case Nginx:
		cfg := filepath.Join(s.dir, "nginx.conf")
		if err := os.WriteFile(cfg, []byte(nginxConfig(s.dir, addr, up.URL)), 0o600); err != nil {
			return nil, err
		}
		cmd, log, err = s.command(s.nginx, []string{"-p", s.dir, "-c", cfg, "-e", filepath.Join(s.dir, "nginx-error.log")}, nil, "nginx.log")
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("bench: unknown target %q", name)
	}
	t.cmd, t.log = cmd, log
	if err := t.waitReady(ctx); err != nil {
		t.stop()
		return nil, fmt.Errorf("bench: %s did not start: %w (its log: %s)", name, err, log.Name())
	}
	t.pids = []int{cmd.Process.Pid}
	if name == Nginx {
		t.pids = append(t.pids, childrenOf(cmd.Process.Pid)...)
	}
	return t, nil
}

// waitReady sends a chat completion every 50 ms until one succeeds, the
// process ends, or 20 s pass.
func (t *target) waitReady(ctx context.Context) error {
	proc := t.cmd.Process
	deadline := time.Now().Add(20 * time.Second)
	c := &http.Client{Timeout: 2 * time.Second}
	var last error
	for time.Now().Before(deadline) {
		last = t.probe(c)
		if last == nil {
			return nil
		}
		// Signal 0 checks the process is there without reaping it.
		if err := proc.Signal(syscall.Signal(0)); err != nil {
			return errExited
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return last
}

func (t *target) probe(c *http.Client) error {
	req := chatRequest(t.url, false)
	hr, err := req.httpRequest(context.Background())
	if err != nil {
		return err
	}
	resp, err := c.Do(hr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("choices")) {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, b)
	}
	return nil
}

// stop ends the target: SIGTERM to its process group, SIGKILL after a
// second (the gateway would first answer /readyz 503 for its drain_delay,
// 5 s, for a load balancer that is not there).
func (t *target) stop() {
	if t.cmd == nil || t.cmd.Process == nil {
		return
	}
	pgid := t.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { t.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	if t.log != nil {
		t.log.Close()
	}
	t.cmd = nil
}
