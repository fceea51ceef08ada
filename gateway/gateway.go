// Package gateway assembles a running switchover from a configuration: the
// backends with their breakers and transports, the pools, the HTTP handler,
// metrics and logs, and serves it with a graceful shutdown.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/entra"
	"github.com/switchover-gw/switchover/metrics"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
)

// Options adjust how a Gateway is built. The zero value is valid.
type Options struct {
	// Logger receives the request log and breaker events. Nil means a
	// logger on stderr in the configuration's format and level.
	Logger *slog.Logger
	// Clock drives breakers and selection. Nil means the wall clock.
	Clock breaker.Clock
	// OnTransition, if set, also receives every breaker transition (after
	// it is logged and counted), on the goroutine that caused it.
	OnTransition func(breaker.Transition)
	// Entra, if set, supplies Entra ID token sources (tests point it at a
	// local token endpoint). Nil means a registry of its own.
	Entra *entra.Registry
	// Observer, if set, also receives every engine event.
	Observer route.Observer
}

// Gateway is a built gateway. It is safe for concurrent use.
type Gateway struct {
	Config   *config.Config
	Handler  *proxy.Handler
	Metrics  *metrics.Metrics
	Logger   *slog.Logger
	Backends map[string]*route.Backend
	// Pools maps pool names to pools (aliases not included).
	Pools map[string]*route.Pool

	opts  Options
	entra *entra.Registry
	types map[string]string // backend name -> type
}

// New builds a gateway from a validated configuration.
func New(cfg *config.Config, opts Options) (*Gateway, error) {
	g := &Gateway{Config: cfg, Metrics: metrics.New(), opts: opts, Backends: map[string]*route.Backend{}, Pools: map[string]*route.Pool{},
		entra: opts.Entra, types: map[string]string{}}
	if g.entra == nil {
		g.entra = &entra.Registry{}
	}
	g.Logger = opts.Logger
	if g.Logger == nil {
		g.Logger = NewLogger(os.Stderr, cfg.Log.Format, cfg.Log.Level)
	}
	obs := multiObserver{g.Metrics, route.ObserverFunc(g.observeModel)}
	if opts.Observer != nil {
		obs = append(obs, opts.Observer)
	}
	for _, bc := range cfg.Backends {
		b, err := g.newBackend(bc)
		if err != nil {
			return nil, fmt.Errorf("backend %s: %w", bc.Name, err)
		}
		g.Backends[bc.Name] = b
		g.types[bc.Name] = bc.Type
		g.Metrics.AddBackend(bc.Name, bc.Region, bc.Type)
	}
	routes := &proxy.Routes{Pools: map[string]*route.Pool{}, MaxBody: int64(cfg.Server.MaxBody)}
	for _, pc := range cfg.Pools {
		p := &route.Pool{
			Name:     pc.Name,
			Attempts: pc.Retry.Attempts,
			RetryOn:  statusSet(pc.Retry.On),
			Observer: obs,
			Clock:    opts.Clock,
		}
		for _, mc := range pc.Members {
			p.Members = append(p.Members, &route.Member{Backend: g.Backends[mc.Backend], Priority: mc.Priority, Weight: mc.Weight, Model: mc.Model, MaxTokens: mc.MaxTokens})
		}
		g.Pools[pc.Name] = p
		routes.Pools[pc.Name] = p
		for _, a := range pc.Aliases {
			routes.Pools[a] = p
		}
	}
	for _, k := range cfg.Keys {
		routes.Keys = append(routes.Keys, proxy.NewKey(k.Name, k.Key.Value()))
	}
	g.Handler = &proxy.Handler{
		Logger:          g.Logger,
		Recorder:        g.Metrics,
		Metrics:         g.Metrics.Handler(),
		BodyReadTimeout: cfg.Server.ReadTimeout.D(),
		TraceHeader:     *cfg.Server.TraceHeader,
	}
	g.Handler.Ready = g.Ready
	g.Handler.Update(routes)
	return g, nil
}

func (g *Gateway) newBackend(bc config.Backend) (*route.Backend, error) {
	u, err := url.Parse(bc.URL)
	if err != nil {
		return nil, err
	}
	var hdr http.Header
	if len(bc.Headers) > 0 {
		hdr = http.Header{}
		for k, v := range bc.Headers {
			hdr.Set(k, v)
		}
	}
	b := &route.Backend{
		Name:                   bc.Name,
		Region:                 bc.Region,
		Transport:              route.NewTransport(route.TransportSettings{ConnectTimeout: bc.ConnectTimeout.D()}),
		Counts:                 statusSet(bc.Breaker.Statuses),
		FirstByteTimeout:       bc.FirstByteTimeout.D(),
		StreamFirstByteTimeout: bc.StreamFirstByteTimeout.D(),
		Timeout:                bc.Timeout.D(),
		IdleTimeout:            bc.IdleTimeout.D(),
	}
	switch bc.Type {
	case config.TypeOpenAI, config.TypeOpenAICompatible:
		b.Provider = &route.OpenAI{BaseURL: u, APIKey: bc.APIKey.Value(), Header: hdr}
	case config.TypeAzure:
		az := &route.Azure{Endpoint: u, APIKey: bc.APIKey.Value(), APIVersion: bc.APIVersion, Header: hdr}
		if e := bc.Entra; e != nil {
			src, err := g.entra.Source(entra.Settings{
				TenantID: e.TenantID, ClientID: e.ClientID, ClientSecret: e.ClientSecret.Value(),
				FederatedTokenFile: e.FederatedTokenFile, ManagedIdentity: e.ManagedIdentity,
				Scope: e.Scope, AuthorityHost: e.AuthorityHost,
			})
			if err != nil {
				return nil, err
			}
			az.Token = src
		}
		b.Provider = az
	case config.TypeAnthropic:
		b.Provider = &route.Anthropic{BaseURL: u, APIKey: bc.APIKey.Value(), Version: bc.AnthropicVersion, Header: hdr}
	case config.TypeGemini:
		b.Provider = &route.Gemini{BaseURL: u, APIKey: bc.APIKey.Value(), APIVersion: bc.APIVersion, Header: hdr}
	default:
		return nil, fmt.Errorf("unknown type %q", bc.Type)
	}
	if !bc.Breaker.Disabled {
		b.Breaker = breaker.New(bc.Name, breaker.Settings{
			Failures:         bc.Breaker.Failures,
			Window:           bc.Breaker.Window.D(),
			Trip:             bc.Breaker.Trip.D(),
			AcceptRetryAfter: *bc.Breaker.AcceptRetryAfter,
			FollowRetryAfter: *bc.Breaker.FollowRetryAfter,
			MaxRetryAfter:    bc.Breaker.MaxRetryAfter.D(),
			Clock:            g.opts.Clock,
			OnTransition:     g.onTransition,
		})
	}
	return b, nil
}

// onTransition logs, counts and forwards a breaker state change.
func (g *Gateway) onTransition(t breaker.Transition) {
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("backend", t.Name),
		slog.String("from", t.From.String()),
		slog.String("to", t.To.String()),
		slog.String("cause", t.Cause),
	}
	if t.To == breaker.Open {
		level = slog.LevelWarn
		attrs = append(attrs, slog.Time("until", t.Until), slog.Duration("for", t.Until.Sub(t.At)))
	}
	g.Logger.LogAttrs(context.Background(), level, "breaker", attrs...)
	g.Metrics.Transition(t)
	if g.opts.OnTransition != nil {
		g.opts.OnTransition(t)
	}
}

// observeModel logs a backend's model version when it first answers or
// changes, and warns when members of one pool of the same provider type
// answer with different versions (seed 001: pin the version on every
// region, or the fallback answers differently from the primary).
func (g *Gateway) observeModel(e route.Event) {
	if e.Kind != route.EventModel {
		return
	}
	g.Logger.Info("backend model", "backend", e.Backend.Name, "model", e.Model)
	for _, p := range g.Pools {
		in := false
		versions := map[string][]string{} // type -> "backend=model"
		for _, m := range p.Members {
			in = in || m.Backend == e.Backend
			if v := m.Backend.Model(); v != "" {
				t := g.types[m.Backend.Name]
				if t == config.TypeOpenAICompatible {
					t = config.TypeOpenAI
				}
				versions[t] = append(versions[t], m.Backend.Name+"="+v)
			}
		}
		if !in {
			continue
		}
		for t, vs := range versions {
			distinct := map[string]bool{}
			for _, v := range vs {
				distinct[v[strings.IndexByte(v, '=')+1:]] = true
			}
			if len(distinct) > 1 {
				sort.Strings(vs)
				g.Logger.Warn("pool members answer with different model versions; pin the version on every deployment",
					"pool", p.Name, "type", t, "versions", strings.Join(vs, ", "))
			}
		}
	}
}

func statusSet(l config.StatusList) *route.StatusSet {
	s := &route.StatusSet{}
	for _, r := range l {
		s.AddRange(r.Lo, r.Hi)
	}
	return s
}

type multiObserver []route.Observer

func (m multiObserver) Observe(e route.Event) {
	for _, o := range m {
		o.Observe(e)
	}
}

// NewLogger returns a slog logger writing to w in format "text" or "json"
// at level "debug", "info", "warn" or "error".
func NewLogger(w io.Writer, format, level string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		lv = slog.LevelInfo
	}
	o := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// Server returns the http.Server for the gateway, with timeouts that resist
// slow clients without cutting long streams: headers must arrive within
// read_header_timeout, the body within read_timeout (set per request by
// the handler), and idle keep-alive connections close after idle_timeout.
// There is no write timeout: a stream may legitimately run for minutes,
// bounded by each backend's timeout.
func (g *Gateway) Server() *http.Server {
	s := g.Config.Server
	return &http.Server{
		Handler:           g.Handler,
		ReadHeaderTimeout: s.ReadHeaderTimeout.D(),
		IdleTimeout:       s.IdleTimeout.D(),
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(g.Logger.Handler(), slog.LevelDebug),
	}
}

// Serve serves on ln until ctx ends, then shuts down gracefully: it stops
// accepting, lets in-flight requests and streams finish within the
// configured shutdown_grace, and then cuts what is left.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	srv := g.Server()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	grace := g.Config.Server.ShutdownGrace.D()
	g.Logger.Info("shutting down", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		g.Logger.Warn("shutdown grace period over; closing remaining connections")
		srv.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return nil
}

// Ready reports whether every pool has a backend that would take a call.
func (g *Gateway) Ready() error {
	now := time.Now()
	if g.opts.Clock != nil {
		now = g.opts.Clock.Now()
	}
	return proxy.PoolsReady(g.Pools, now)
}
