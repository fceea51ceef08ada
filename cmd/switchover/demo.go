package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/sim"
)

func simCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return sim.Command(ctx, args, stdout, stderr)
}

// demoPriority places the demo regions in the pool: the fastest region
// first, the other two sharing the second tier.
var demoPriority = map[string]int{"uksouth": 1, "swedencentral": 2, "westeurope": 2}

// demoConfig is the gateway configuration of the demo, in front of the
// simulated regions at eps. It is real YAML, parsed like any other, so the
// demo exercises the same path as a user's file, and a user can print it
// as a starting point.
func demoConfig(listen string, eps []sim.Endpoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# The switchover demo: a pool over three simulated Azure OpenAI regions.
listen: %s
log: {format: text, level: info}
# No load balancer in front of the demo: Ctrl-C stops it at once. Behind
# one, keep the default drain_delay (5s) so it takes the replica out first.
server: {drain_delay: 0s}
# The admin API and its console, for switchover status. Without a key, for the demo only:
# on loopback, any local process may use it. Give yours a key instead.
admin: {listen: "127.0.0.1:0", allow_no_key: true}
backend_defaults:
  first_byte_timeout: 5s
  stream_first_byte_timeout: 5s
  timeout: 60s
  # The sin bin: 3 failures in 30s bench a region until its Retry-After says
  # its quota is back (30s and one probe when it gives no Retry-After).
  breaker: {failures: 3, window: 30s, trip: 30s}
backends:
`, listen)
	for _, e := range eps {
		fmt.Fprintf(&b, `  - name: aoai-%s
    type: azure
    url: %s
    region: %s
`, e.Name, e.URL, e.Region)
	}
	b.WriteString(`pools:
  - name: chat-prod
    aliases: [gpt-4o-mini]
    members:
`)
	for _, e := range eps {
		fmt.Fprintf(&b, "      - {backend: aoai-%s, priority: %d, model: %s}\n", e.Name, demoPriority[e.Name], e.Deployment)
	}
	b.WriteString("    retry: {attempts: 3}\n")
	b.WriteString(`# Files and batches live where they are made: a new one goes to a usable
# region, and every later call on it (ids name their region) goes there.
pinned:
  - {paths: [files, uploads, batches], pool: chat-prod}
`)
	return b.String()
}

// serveDemo runs the gateway in front of three simulated regions in the
// same process: the first command a newcomer runs.
func serveDemo(ctx context.Context, listen string, stdout, stderr io.Writer) error {
	if listen == "" {
		listen = config.DefaultListen
	}
	simLog := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := sim.Start(ctx, sim.DemoConfig(), sim.WithLogger(simLog))
	if err != nil {
		return fmt.Errorf("starting the simulated regions: %w", err)
	}
	defer s.Close()
	yaml := demoConfig(listen, s.Deployments())
	cfg, err := config.Parse("demo.yaml", []byte(yaml), os.LookupEnv)
	if err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(stderr, "text", "info")})
	if err != nil {
		return err
	}
	ln, admin, err := gateway.Listen(cfg)
	if err != nil {
		g.Close(context.Background())
		var oe *net.OpError
		if errors.As(err, &oe) {
			return fmt.Errorf("%w (another process has the port? try: switchover serve -listen 127.0.0.1:8181)", err)
		}
		return err
	}
	printDemo(stdout, "http://"+ln.Addr().String(), "http://"+admin.Addr().String(), s, yaml)
	return g.Serve(ctx, ln, admin)
}

func printDemo(w io.Writer, base, admin string, s *sim.Sim, yaml string) {
	fmt.Fprintf(w, "switchover demo: a gateway on %s in front of three simulated Azure OpenAI regions\n\n", base)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  region\tpriority\tsimulated at\tquota")
	for _, e := range s.Deployments() {
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%d RPM, %d TPM (checked per 10 s)\n", e.Region, demoPriority[e.Name], e.URL, sim.DemoRPM, sim.DemoTPM)
	}
	tw.Flush()
	uk := ""
	for _, e := range s.Deployments() {
		if e.Name == "uksouth" {
			uk = e.URL
		}
	}
	fmt.Fprintf(w, `
Send a chat completion (the headers say which region answered):
  curl -si %[1]s/v1/chat/completions -H 'Content-Type: application/json' \
    -d '{"model":"chat-prod","messages":[{"role":"user","content":"Hello"}]}'

Use it from the OpenAI SDK: base URL %[1]s/v1, any API key, model "chat-prod".

Run out uksouth's quota (10 requests per 10 s) and watch x-switchover-backend move:
  for i in $(seq 15); do curl -s -o /dev/null -D - %[1]s/v1/chat/completions \
    -d '{"model":"chat-prod","messages":[{"role":"user","content":"hi"}]}' | grep -i x-switchover-backend; done

Take uksouth down, then bring it back (the breaker benches it, then one probe restores it):
  curl -s -X POST %[2]s/_sim/deployments/uksouth/fault -d '{"mode":"blackhole"}'
  curl -s -X POST %[2]s/_sim/deployments/uksouth/fault -d '{"mode":"none"}'

See the pools, breakers and events, and drain a region, in the console:
  %[5]s/console/
or from another terminal:
  switchover status -admin %[5]s
  switchover status -admin %[5]s drain aoai-uksouth

Metrics: %[5]s/metrics   Simulator counters: %[3]s/stats
Stop with Ctrl-C. The demo's configuration, to start your own from:

%[4]s
`, base, uk, s.ControlURL(), indent(yaml), admin)
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ")
}
