package drill

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/sim"
)

// The backend's price in dollars per million tokens: a 40,000-character
// prompt (about 10,000 tokens) costs about $0.10, a small request
// (8 prompt and 5 completion tokens) $0.00023.
const (
	priceInput  = 10
	priceOutput = 30
)

// pool is the model name the callers ask for.
const pool = "chat-drill"

// backend is the simulated OpenAI deployment every replica sends to.
type backend struct {
	sim *sim.Sim
	url string
	key string
}

func startBackend(ctx context.Context, latency time.Duration) (*backend, error) {
	const key = "sk-drill-backend-0000000000"
	s, err := sim.Start(ctx, sim.Config{Seed: 1, Deployments: []sim.Deployment{{
		Name: "openai", Flavour: sim.OpenAI, Deployment: "gpt-4o", Model: "gpt-4o-2024-08-06", Key: key,
		Latency: sim.Latency{Median: latency, Spread: 0.3},
	}}})
	if err != nil {
		return nil, fmt.Errorf("start the simulated backend: %w", err)
	}
	return &backend{sim: s, url: s.Deployments()[0].URL, key: key}, nil
}

func (b *backend) close() { b.sim.Close() }

// setup is what a replica's configuration holds beyond the backend.
type setup struct {
	name     string // the replica's name (state.replica)
	sqlite   string // SQLite file, or ""
	postgres string // PostgreSQL DSN, or ""
	redis    string // state.redis URL, or ""
	prefix   string // state.redis prefix
	keys     string // a keys: block, or ""
}

func (b *backend) config(s setup) string {
	var y strings.Builder
	y.WriteString("log: {format: json, level: warn}\nserver: {drain_delay: 0s}\n")
	fmt.Fprintf(&y, "backends:\n  - {name: openai, type: openai, url: %q, api_key: %q, price: {input: %d, output: %d}}\n",
		b.url, b.key, priceInput, priceOutput)
	fmt.Fprintf(&y, "pools:\n  - name: %s\n    members: [{backend: openai, model: gpt-4o}]\n", pool)
	switch {
	case s.sqlite != "":
		fmt.Fprintf(&y, "store: {sqlite: %q}\n", s.sqlite)
	case s.postgres != "":
		fmt.Fprintf(&y, "store: {postgres: %q}\n", s.postgres)
	}
	if s.redis != "" {
		fmt.Fprintf(&y, "state:\n  redis: {url: %q, prefix: %q}\n  replica: %s\n", s.redis, s.prefix, s.name)
	}
	y.WriteString(s.keys)
	return y.String()
}

// replica is a gateway serving on a loopback port.
type replica struct {
	name string
	gw   *gateway.Gateway
	url  string
	stop func()
}

// startReplica builds a gateway from s and serves it on a free loopback
// port until stop.
func (b *backend) startReplica(s setup) (*replica, error) {
	y := b.config(s)
	cfg, err := config.Parse(s.name+".yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		return nil, fmt.Errorf("the drill's configuration: %w\n%s", err, y)
	}
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(io.Discard, "json", "warn")})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		g.Close(context.Background())
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	return &replica{name: s.name, gw: g, url: "http://" + ln.Addr().String(), stop: stop}, nil
}

// sqliteFile is a new SQLite file in the drill's directory.
func (d *drill) sqliteFile() string {
	d.seq++
	return filepath.Join(d.o.Dir, fmt.Sprintf("drill-%d.db", d.seq))
}

// client sends the callers' requests: enough idle connections for every
// caller, and a bound on each request.
var client = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
}
