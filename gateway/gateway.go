// Package gateway assembles a running switchover from a configuration: the
// backends with their breakers and transports, the pools, the HTTP handler,
// metrics, logs, notifications, health probes, tracing and the admin API;
// it reloads the configuration without dropping requests, and serves with
// a graceful shutdown.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/clock"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/engine"
	"github.com/switchover-gw/switchover/entra"
	"github.com/switchover-gw/switchover/fleet"
	"github.com/switchover-gw/switchover/internal/asynclog"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/metrics"
	"github.com/switchover-gw/switchover/notify"
	"github.com/switchover-gw/switchover/pricing"
	"github.com/switchover-gw/switchover/proxy"
	"github.com/switchover-gw/switchover/route"
)

// Options adjust how a Gateway is built. The zero value is valid.
type Options struct {
	// Logger receives the request log and breaker events. Nil means a
	// logger on LogOutput in the configuration's format and level, through
	// a buffered, asynchronous writer (internal/asynclog): a request pays
	// for a copy of its line, not a write(2); lines go out every 200ms, by
	// 32 KiB and at Close; past 4 MiB pending, lines are dropped and
	// counted in switchover_log_lines_dropped_total.
	Logger *slog.Logger
	// LogOutput is where that logger writes. Nil means os.Stderr. Unused
	// when Logger is set.
	LogOutput io.Writer
	// Clock drives breakers and selection. Nil means the wall clock.
	Clock breaker.Clock
	// OnTransition, if set, also receives every breaker transition (after
	// it is logged and counted), on the goroutine that caused it (a trip
	// that ends without traffic: the clock's timer). Two may arrive out of
	// order; Transition.Seq orders them per backend.
	OnTransition func(breaker.Transition)
	// Entra, if set, supplies Entra ID token sources (tests point it at a
	// local token endpoint). Nil means a registry of its own.
	Entra *entra.Registry
	// Observer, if set, also receives every engine event, and an
	// EventProbe for each probe the gateway's probers send.
	Observer route.Observer
	// Sinks, if set, receive notifications in addition to those the
	// configuration names (tests).
	Sinks []notify.Sink
	// Tracer, if set, is used instead of the configured exporter (tests
	// use the SDK's in-memory exporter).
	Tracer trace.TracerProvider
	// Path is the configuration file, for Reload and the admin API's
	// reload. Optional.
	Path string
	// Store, if set, is the state shared with other replicas, instead of
	// the configuration's state block (tests give fleet.Memory views).
	Store fleet.Store
	// FleetHeartbeat is how often the replica renews its heartbeat and
	// leases (fleet.DefaultHeartbeat when zero).
	FleetHeartbeat time.Duration
	// Version is shown in the fleet's status.
	Version string
	// Ledger, if set, is the store of keys, teams and usage, instead of
	// the configuration's store block (tests). The gateway does not close
	// it.
	Ledger ledger.Store
}

// Gateway is a built gateway. Its configuration can be replaced while it
// serves (Reload); Handler, Metrics and Logger stay the same. It is safe
// for concurrent use.
type Gateway struct {
	Handler *proxy.Handler
	Metrics *metrics.Metrics
	Logger  *slog.Logger

	opts   Options
	tracer *tracing
	// index keeps the owners of objects without metadata (ownerIndex),
	// for every engine built.
	index route.OwnerIndex
	// state is the engine in force; mu serialises its changes: reloads
	// and admin actions.
	state atomic.Pointer[engine.Engine]
	mu    sync.Mutex
	// overrides are operators' changes to members, kept across reloads
	// until reset. Guarded by mu.
	overrides map[memberKey]override
	// notes is what the gateway tells: notifications, the history,
	// the order of transitions.
	notes notices
	// probes are the backends' health probes.
	probes probing
	// fileSum is the hash of the configuration file last loaded.
	fileSum atomic.Pointer[[32]byte]
	// logs is the log's buffered output when the gateway made its own.
	logs logOutput
	life lifecycle
	// fleet is this gateway's membership of a fleet of replicas sharing
	// state; nil when it keeps everything in the process.
	fleet *fleetMember
	// ten is the keys, limits and usage store.
	ten *tenancy
	// keyThrottle throttles failed key checks per address (guardAPI).
	keyThrottle *keyThrottle
	// metricsAddr is server.metrics_listen's bound address (a net.Addr).
	metricsAddr atomic.Value
	// conns are the API listener's connection limits while Serve runs.
	conns atomic.Pointer[connLimits]
	// tlsCerts are the listeners' certificates while Serve runs.
	tlsCerts tlsListeners
}

// notices is what the gateway tells of what happens: notifications (the
// tracker decides, the dispatcher delivers), the recent history, and the
// order of breaker transitions for the active sets.
type notices struct {
	tracker  *notify.Tracker
	notifier *notify.Dispatcher
	events   *history
	seqs     breaker.Order
	// misconfigured holds, per backend name, when its misconfiguration
	// was last notified.
	misconfigured sync.Map
	// storms are the pools' storm thresholds by name (stormFor).
	storms atomic.Pointer[poolStorms]
}

// probing is the backends' health probes.
type probing struct {
	// byBackend are the running probers; guarded by Gateway.mu.
	byBackend map[string]*prober
	// held holds the names of backends whose breaker an operator forced
	// open: recovery probes leave those alone.
	held sync.Map
	// wake holds each running prober's wake-up channel by backend name
	// (a chan struct{} of one slot), for the engine's word that a pool is
	// short of members (wakeProbers), read without Gateway.mu.
	wake sync.Map
}

// logOutput is the log's buffered writer when the gateway made its own
// logger (Close writes out what it holds), and the request log's
// formatter on it; both nil when Options.Logger was given.
type logOutput struct {
	out     *asynclog.Writer
	request *proxy.RequestLog
}

// lifecycle is the gateway's background work and its end.
type lifecycle struct {
	// bg is the background work's context (probes, tracker, fleet);
	// cancel ends it.
	bg     context.Context
	cancel context.CancelFunc
	// draining is set once a shutdown has begun: /readyz fails from then.
	draining  atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

type memberKey struct{ pool, backend string }

// override is an operator's change to a member; 0 keeps the configured
// value.
type override struct{ priority, weight int }

// New builds a gateway from a validated configuration. Close it when done
// (Serve does on return).
func New(cfg *config.Config, opts Options) (*Gateway, error) {
	g := &Gateway{Metrics: metrics.New(), opts: opts, overrides: map[memberKey]override{},
		probes: probing{byBackend: map[string]*prober{}}, notes: notices{events: newHistory(200)},
		keyThrottle: newKeyThrottle(opts.Clock)}
	if g.opts.Entra == nil {
		g.opts.Entra = &entra.Registry{}
	}
	g.Logger = opts.Logger
	if g.Logger == nil {
		out := opts.LogOutput
		if out == nil {
			out = os.Stderr
		}
		g.logs.out = asynclog.New(out, asynclog.Options{OnDrop: g.Metrics.LogLineDropped})
		g.Logger = NewLogger(g.logs.out, cfg.Log.Format, cfg.Log.Level)
		// The request line, a line per request, is written by a formatter
		// of its own, in the same format (see proxy.RequestLog).
		g.logs.request = proxy.NewRequestLog(g.logs.out, cfg.Log.Format, logLevel(cfg.Log.Level))
	}
	g.logWarnings(cfg)
	g.life.bg, g.life.cancel = context.WithCancel(context.Background())
	var err error
	if g.tracer, err = newTracing(cfg.Tracing, opts.Tracer); err != nil {
		if g.logs.out != nil {
			g.logs.out.Close()
		}
		return nil, err
	}
	g.startNotifications(cfg)
	g.Handler = &proxy.Handler{
		Logger:          g.Logger,
		RequestLog:      g.logs.request,
		Recorder:        g.Metrics,
		Spender:         g,
		Refusals:        g.Metrics,
		BodyReadTimeout: cfg.Server.ReadTimeout.D(),
		TraceHeader:     *cfg.Server.TraceHeader,
		Clock:           g.opts.Clock,
	}
	if cfg.Server.MetricsOnAPI {
		g.Handler.Metrics = g.Metrics.Handler()
	}
	if g.tracer.enabled {
		g.Handler.Tracer = g.tracer.tracer
	}
	g.Handler.Ready = g.Ready
	g.Handler.PoolHealth = g.PoolHealth
	if err := g.joinFleet(cfg); err != nil {
		g.Close(context.Background())
		return nil, err
	}
	if err := g.startTenancy(g.life.bg, cfg); err != nil {
		g.Close(context.Background())
		return nil, err
	}
	g.index = g.ownerIndex()
	st, err := g.build(cfg, nil)
	if err != nil {
		g.Close(context.Background())
		return nil, err
	}
	g.publish(st, "configuration loaded")
	g.fleet.run(g.life.bg)
	g.runTenancy()
	if opts.Path != "" {
		if data, err := os.ReadFile(opts.Path); err == nil {
			g.fileSum.Store(sum(data))
		}
	}
	return g, nil
}

// Config returns the configuration in force.
func (g *Gateway) Config() *config.Config { return g.state.Load().Config }

// Backend returns the backend named name in the configuration in force,
// or nil.
func (g *Gateway) Backend(name string) *route.Backend {
	if st := g.state.Load(); st != nil {
		return st.Backends[name]
	}
	return nil
}

// Pool returns the pool named name (not an alias), or nil.
func (g *Gateway) Pool(name string) *route.Pool { return g.state.Load().Pools[name] }

func (g *Gateway) now() time.Time {
	if g.opts.Clock != nil {
		return g.opts.Clock.Now()
	}
	return time.Now()
}

// onTransition logs, counts and forwards a breaker state change, and tells
// the notification tracker. Transitions may arrive out of order (breakers
// emit them outside their lock): every one is logged, recorded in the
// history and forwarded, since each happened, and the metrics order them
// by Seq themselves; one older than the last applied for its backend does
// not update the pools' active sets, so a stale cause never explains a
// change.
func (g *Gateway) onTransition(t breaker.Transition) {
	fresh := g.notes.seqs.Fresh(t)
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("backend", t.Name),
		slog.String("from", t.From.String()),
		slog.String("to", t.To.String()),
		slog.String("cause", t.Cause),
		slog.Uint64("seq", t.Seq),
	}
	if t.To == breaker.Open {
		level = slog.LevelWarn
		end, waits := t.Until, false
		if t.Adopted {
			end, waits = g.fleet.tripEnd(t.Name, t.Until)
		}
		attrs = append(attrs, slog.Time("until", end), slog.Duration("for", end.Sub(t.At)))
		if waits {
			// Past the end this replica waits for the prober's verdict;
			// it probes itself only if none has come by then.
			attrs = append(attrs, slog.Time("probes_itself_at", t.Until))
		}
	}
	if !fresh {
		attrs = append(attrs, slog.Bool("late", true))
	}
	g.Logger.LogAttrs(context.Background(), level, "breaker", attrs...)
	g.Metrics.Transition(t)
	ev := Event{At: t.At, Kind: "breaker", Backend: t.Name, Detail: t.From.String() + " -> " + t.To.String() + ": " + t.Cause}
	if t.To == breaker.Open {
		ev.Opened = t.Cause
	}
	g.addEvent(ev, !t.Adopted)
	if fresh {
		g.fleet.transition(t)
		g.updateActive(t.Name, reasonOf(t))
	}
	if g.opts.OnTransition != nil {
		g.opts.OnTransition(t)
	}
}

// observe handles engine events the gateway itself cares about: failovers
// (for the storm alert) and model versions.
func (g *Gateway) observe(e route.Event) {
	switch e.Kind {
	case route.EventFailover:
		if g.notes.tracker != nil {
			g.notes.tracker.Failover(e.Pool, g.now())
		}
		g.fleet.failover(e.Pool)
	case route.EventModel:
		g.observeModel(e)
	case route.EventMisconfigured:
		g.observeMisconfigured(e)
	case route.EventUnresponsive:
		g.Logger.Warn("backend unresponsive: benched, waiting calls failed over", "backend", e.Backend.Name, "pool", e.Pool, "detail", e.Err.Error())
		g.addEvent(Event{At: g.now(), Kind: "unresponsive", Pool: e.Pool, Backend: e.Backend.Name, Detail: e.Err.Error()}, true)
	case route.EventShort:
		g.wakeProbers(e.Pool)
	case route.EventOperationUnsupported:
		// A caller can ask for any operation: told in the log, once per
		// mark, never as a notification.
		g.Logger.Info("backend does not serve an operation: its calls go to other members", "backend", e.Backend.Name, "pool", e.Pool,
			"operation", string(e.Op), "status", e.Attempt.Status, "message", e.Attempt.Message, "for", route.UnsupportedHold)
	}
}

// logWarnings logs the configuration's warnings (see config.Warnings).
func (g *Gateway) logWarnings(cfg *config.Config) {
	for _, w := range cfg.Warnings() {
		g.Logger.Warn("configuration warning", "problem", w.String())
	}
}

// misconfiguredEvery is how often one backend's misconfiguration is told:
// it stays benched, and every probe or early try meets it again.
const misconfiguredEvery = 15 * time.Minute

// observeMisconfigured logs a backend's 401, 403 or 404 and sends a
// "backend misconfigured" notification, at most once per
// misconfiguredEvery for each backend.
func (g *Gateway) observeMisconfigured(e route.Event) {
	a := e.Attempt
	g.Logger.Error("backend misconfigured: benched, requests fail over", "backend", e.Backend.Name, "pool", e.Pool, "status", a.Status, "message", a.Message)
	now := g.now()
	if last, ok := g.notes.misconfigured.Load(e.Backend.Name); ok && now.Sub(last.(time.Time)) < misconfiguredEvery {
		return
	}
	g.notes.misconfigured.Store(e.Backend.Name, now)
	detail := fmt.Sprintf("backend %s answered %d: %s", e.Backend.Name, a.Status, a.Message)
	g.addEvent(Event{At: now, Kind: "misconfigured", Pool: e.Pool, Backend: e.Backend.Name, Detail: detail}, true)
	if g.notes.tracker != nil {
		g.notes.tracker.Send(notify.Notification{Kind: notify.KindMisconfigured, Pool: e.Pool, Reason: detail, At: now,
			Text: fmt.Sprintf("switchover: backend %s of pool %s is misconfigured: it answered %d (%s). Its key or deployment is wrong; it is benched and its requests go to the other members until it answers again (%s).",
				e.Backend.Name, e.Pool, a.Status, a.Message, now.UTC().Format(time.RFC3339))})
	}
}

// observeModel logs a backend's model version when it first answers or
// changes, and warns when members of one pool of the same provider type
// answer with different versions (the guide to client-side failover between Azure OpenAI resources: pin the version on every
// region, or the fallback answers differently from the primary).
func (g *Gateway) observeModel(e route.Event) {
	g.Logger.Info("backend model", "backend", e.Backend.Name, "model", e.Model)
	st := g.state.Load()
	if st == nil {
		return
	}
	for _, p := range st.Pools {
		in := false
		versions := map[string][]string{} // type -> "backend=model"
		for _, m := range p.Members {
			in = in || m.Backend == e.Backend
			if v := m.Backend.Model(); v != "" {
				t := st.BackendConfigs[m.Backend.Name].Type
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

var _ proxy.Refusals = (*metrics.Metrics)(nil)

type multiObserver []route.Observer

func (m multiObserver) Observe(e route.Event) {
	for _, o := range m {
		if o != nil {
			o.Observe(e)
		}
	}
}

// NewLogger returns a slog logger writing to w in format "text" or "json"
// at level "debug", "info", "warn" or "error".
func NewLogger(w io.Writer, format, level string) *slog.Logger {
	o := &slog.HandlerOptions{Level: logLevel(level)}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

// logLevel is the slog level named "debug", "info", "warn" or "error";
// info for anything else.
func logLevel(level string) slog.Level {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return slog.LevelInfo
	}
	return lv
}

// Server returns the http.Server for the gateway, with timeouts that resist
// slow clients without cutting long streams: headers must arrive within
// read_header_timeout, the body within read_timeout (set per request by
// the handler), and idle keep-alive connections close after idle_timeout
// (Serve closes them sooner under pressure). There is no write timeout: a
// stream may legitimately run for minutes, bounded by each backend's
// timeout. Its handler is the gateway's behind guardAPI: no-key mode's
// Host and Origin checks, the throttle of failed key checks. It speaks
// HTTP/1.1, HTTP/2 to TLS clients that offer it (unless server.http2 is
// false) and cleartext HTTP/2 with server.h2c; Serve adds server.tls.
func (g *Gateway) Server() *http.Server {
	s := g.Config().Server
	return &http.Server{
		Handler:           g.guardAPI(g.Handler, g.keyThrottle),
		Protocols:         apiProtocols(s),
		ReadHeaderTimeout: s.ReadHeaderTimeout.D(),
		IdleTimeout:       s.IdleTimeout.D(),
		MaxHeaderBytes:    1 << 20,
		// The server logs what goes wrong outside any handler (accept
		// errors such as "too many open files", a handler's panic with
		// its stack): errors, never hidden below the default level;
		// failed TLS handshakes (scanners, plain HTTP to the TLS port, a
		// client refused by mutual TLS) at debug.
		ErrorLog: serverErrorLog(g.Logger),
	}
}

// Serve serves the API on ln (and the admin API on admin, if not nil)
// until ctx ends, then shuts down gracefully:
//
//  1. For server.drain_delay, /readyz answers 503 while every request is
//     still served (keep-alive connections are closed after their
//     current request), so that load balancers and Kubernetes take the
//     replica out before it stops accepting.
//  2. The listeners close; requests and streams in flight may finish
//     within server.shutdown_grace.
//  3. What is left is halted (proxy.Handler.Halt): a stream ends with an
//     SSE error event saying the gateway is shutting down; then the
//     remaining connections are closed and the gateway is closed.
//
// With server.tls (admin.tls, server.metrics_tls), ln (the admin and
// metrics listeners) serve TLS: Serve wraps them. The waits run on
// Options.Clock.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener, admin ...net.Listener) error {
	srv := g.Server()
	s0 := g.Config().Server
	apiTLS, adminTLS, err := g.listenersTLS(srv.Protocols)
	if err != nil {
		g.Close(context.Background())
		return err
	}
	if cl := newConnLimits(s0.MaxConnections, s0.MaxConnectionsPerAddress, s0.MaxConnections*4/5,
		s0.IdleTimeoutUnderPressure.D(), g.opts.Clock, g.Logger); cl != nil {
		// Past the limit idle connections make room; when every one is
		// busy, a connection waits in the kernel's backlog instead of
		// taking a file descriptor.
		cl.tls = apiTLS != nil
		ln = cl.listener(ln)
		srv.ConnState = cl.connState
		g.conns.Store(cl)
	}
	ln = tlsListener(ln, apiTLS)
	g.logNoKeyMode()
	servers := []*http.Server{srv}
	ms, mln, err := g.metricsServer()
	if err != nil {
		g.Close(context.Background())
		return err
	}
	if ms != nil {
		ms.ErrorLog = srv.ErrorLog
		servers = append(servers, ms)
	}
	errc := make(chan error, 2+len(admin))
	go func() { errc <- srv.Serve(ln) }()
	if ms != nil {
		go func() { errc <- ms.Serve(mln) }()
	}
	for _, a := range admin {
		if a == nil {
			continue
		}
		as := g.adminServer()
		as.ErrorLog = srv.ErrorLog
		servers = append(servers, as)
		a = tlsListener(a, adminTLS)
		go func() { errc <- as.Serve(a) }()
	}
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	clk := clock.Or(g.opts.Clock)
	s := g.Config().Server
	g.life.draining.Store(true)
	if d := drainDelay(s); d > 0 && serveErr == nil {
		g.Logger.Info("draining: /readyz fails while requests are still served", "drain_delay", d)
		srv.SetKeepAlivesEnabled(false)
		wait(clk, d)
	}
	grace := s.ShutdownGrace.D()
	g.Logger.Info("shutting down: no new connections; waiting for requests in flight", "grace", grace)
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t := clk.AfterFunc(grace, cancel)
	defer t.Stop()
	halted := false
	for _, hs := range servers {
		if err := hs.Shutdown(sctx); err != nil && sctx.Err() != nil {
			if !halted {
				g.Logger.Warn("shutdown grace period over: ending the requests and streams still open")
				g.Handler.Halt()
				halted = true
			}
			// Halted handlers end at once; give them a moment to write
			// their last event, then cut what is left.
			hctx, hcancel := context.WithCancel(context.Background())
			ht := clk.AfterFunc(haltWait, hcancel)
			if hs.Shutdown(hctx) != nil {
				hs.Close()
			}
			ht.Stop()
			hcancel()
		}
	}
	for range len(servers) - boolInt(serveErr != nil) {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) && serveErr == nil {
			serveErr = err
		}
	}
	g.Close(sctx)
	if errors.Is(serveErr, http.ErrServerClosed) {
		return nil
	}
	return serveErr
}

// logNoKeyMode says, when no keys are required, what the API accepts:
// only same-origin and non-browser callers, by the names listed.
func (g *Gateway) logNoKeyMode() {
	if g.Handler.KeysRequired() {
		return
	}
	cfg := g.Config()
	var hosts []string
	if h, _, err := net.SplitHostPort(cfg.Listen); err == nil && h != "" {
		hosts = append(hosts, h)
	}
	for _, h := range append([]string{"localhost", "127.0.0.1", "[::1]", "the address a connection arrives at"}, cfg.AllowedHosts...) {
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	g.Logger.Warn("no keys are configured: the API accepts only same-origin and non-browser callers, by these host names (allowed_hosts adds more)",
		"hosts", strings.Join(hosts, ", "), "origins", strings.Join(append([]string{"its own"}, cfg.AllowedOrigins...), ", "))
}

// Start builds a gateway from cfg and serves it on ln in the background,
// for a harness that runs one in the process (the game day). stop ends
// it: queued notifications are delivered (for at most stopWait), then the
// server shuts down as Serve does, and stop returns once it has.
func Start(cfg *config.Config, ln net.Listener, opts Options) (stop func(), err error) {
	g, err := New(cfg, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln) }()
	return func() {
		cctx, ccancel := context.WithTimeout(context.Background(), stopWait)
		g.Close(cctx)
		ccancel()
		cancel()
		<-done
	}, nil
}

// stopWait bounds how long Start's stop waits for notifications.
const stopWait = 2 * time.Second

// drainDelay is s.DrainDelay; a configuration built without Load (nil)
// gets the default.
func drainDelay(s config.Server) time.Duration {
	if s.DrainDelay == nil {
		return config.DefaultDrainDelay
	}
	return s.DrainDelay.D()
}

// haltWait is how long halted requests get to write their last event.
const haltWait = 2 * time.Second

// wait blocks for d on clk.
func wait(clk clock.Clock, d time.Duration) {
	done := make(chan struct{})
	clk.AfterFunc(d, func() { close(done) })
	<-done
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Close stops the gateway's background work (probes, notifications,
// tracing), delivering queued notifications and spans until ctx ends, and
// writes out the buffered log.
// Later calls return the first call's result.
func (g *Gateway) Close(ctx context.Context) error {
	g.life.closeOnce.Do(func() { g.life.closeErr = g.close(ctx) })
	return g.life.closeErr
}

func (g *Gateway) close(ctx context.Context) error {
	g.life.cancel()
	g.mu.Lock()
	for name, p := range g.probes.byBackend {
		p.stop()
		delete(g.probes.byBackend, name)
		g.probes.wake.Delete(name)
	}
	// No breaker timer may log, count or notify after Close.
	if st := g.state.Load(); st != nil {
		st.Close()
	}
	g.mu.Unlock()
	var errs []error
	errs = append(errs, g.stopTenancy(ctx))
	g.fleet.stop()
	if g.notes.notifier != nil {
		errs = append(errs, g.notes.notifier.Close(ctx))
	}
	errs = append(errs, g.tracer.shutdown(ctx))
	if g.logs.out != nil {
		// Last, so that what the shutdown logged goes out; the logger
		// writes straight through from now on.
		errs = append(errs, g.logs.out.Close())
	}
	return errors.Join(errs...)
}

// Ready reports whether this replica can take traffic, for GET /readyz:
// its configuration is loaded (New succeeded) and it is not draining for
// a shutdown; that /readyz is answered at all shows its listener is up. It says nothing about pools: a
// pool with no usable member is benched on every replica alike, and a
// readiness failure for it would take every replica out of the load
// balancer at once (PoolHealth reports that).
func (g *Gateway) Ready() error {
	switch {
	case g.life.draining.Load():
		return errors.New("draining: the gateway is shutting down")
	case g.state.Load() == nil:
		return errors.New("no configuration loaded")
	}
	return nil
}

// PoolHealth reports whether every pool has a member that would take a
// call, for GET /healthz/pools; its error names the pools that have none.
func (g *Gateway) PoolHealth() error {
	return proxy.PoolsReady(g.state.Load().Pools, g.now())
}

// Listen opens the listeners the configuration names: the API's, and the
// admin API's when configured (nil otherwise).
func Listen(cfg *config.Config) (api, admin net.Listener, err error) {
	if api, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, nil, err
	}
	if cfg.Admin != nil {
		if admin, err = net.Listen("tcp", cfg.Admin.Listen); err != nil {
			api.Close()
			return nil, nil, fmt.Errorf("admin API: %w", err)
		}
	}
	return api, admin, nil
}

// price is what backend's tokens cost when it answers with model: its
// configured price, or the shipped list price of model on the backend's
// service (pricing.LookupService: a Bedrock or Vertex member prices as
// its model).
func (g *Gateway) price(backend, model string) (pricing.Price, bool) {
	service := ""
	if st := g.state.Load(); st != nil {
		if bc, ok := st.BackendConfigs[backend]; ok {
			if bc.Price != nil {
				return *bc.Price, true
			}
			if bc.Type == config.TypeVertex {
				return pricing.Vertex(model, bc.Location)
			}
			service = bc.Service()
		}
	}
	l, ok := pricing.LookupService(service, model)
	return l.Price, ok
}

// Spent implements proxy.Spender: the answer's tokens at the backend's
// configured price, or the shipped list price of the model it answered
// with, recorded in the metrics and (with a store) the usage ledger.
func (g *Gateway) Spent(s proxy.Spend) (float64, bool) {
	if s.Cache != "" {
		return g.spentCached(s) // cache.go
	}
	if s.Unanswered {
		g.record(s, 0) // for the request log; it costs nothing
		return 0, false
	}
	u := s.Usage
	cost, priced := 0.0, false
	if u.Known {
		var price pricing.Price
		if price, priced = g.price(s.Backend, u.Model); priced {
			cost = price.Cost(u.Prompt, u.Cached, u.Completion)
		}
		model := u.Model
		if model == "" {
			model = "unknown"
		}
		g.Metrics.Tokens(s.Pool, s.Backend, model, s.Key, u.Prompt, u.Completion, u.Cached, u.Reasoning, cost, priced)
	}
	g.record(s, cost)
	return cost, priced
}
