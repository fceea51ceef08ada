package sim

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ErrUnknownDeployment is returned for a deployment name the sim does not
// have.
var ErrUnknownDeployment = errors.New("sim: unknown deployment")

// Endpoint is what a client needs to reach one simulated deployment.
type Endpoint struct {
	Name    string  `json:"name"`
	Region  string  `json:"region"`
	Flavour Flavour `json:"flavour"`
	// Deployment is the Azure deployment name, or the OpenAI, Anthropic or
	// Gemini model.
	Deployment string `json:"deployment"`
	// URL is the base URL a client configures: for azure the resource
	// endpoint ("http://127.0.0.1:port", to which clients add
	// /openai/deployments/...), for openai the API base
	// ("http://127.0.0.1:port/v1"), for anthropic and gemini the host
	// ("http://127.0.0.1:port", to which the SDKs add /v1/messages and
	// /v1beta/models/...). On a shared listener all carry the /{name}
	// prefix.
	URL string `json:"url"`
	// Key is the required API key, "" when none.
	Key string `json:"key,omitempty"`
}

// Sim is a running simulation. It is safe for concurrent use.
type Sim struct {
	cfg      Config // with defaults
	seed     int64
	clock    Clock
	waiter   Waiter
	log      *slog.Logger
	tls      *tls.Config // WithTLS; nil: plain HTTP
	start    time.Time
	deps     []*deployment
	byName   map[string]*deployment
	registry *prometheus.Registry
	coll     *collector

	ctx    context.Context // cancelled by Close; parent of every request
	cancel context.CancelFunc

	stopMu  sync.Mutex
	stopCtx func() bool // unregisters the close-on-ctx-done hook

	servers    []*http.Server
	serving    sync.WaitGroup
	active     tracker
	endpoints  []Endpoint
	controlURL string

	closeOnce sync.Once
	closeErr  error
}

// Start validates cfg, opens the listeners (127.0.0.1 on a free port unless
// an address is configured) and serves until [Sim.Close] is called or ctx is
// done.
func Start(ctx context.Context, cfg Config, opts ...Option) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := buildOptions(opts)
	cfg = cfg.withDefaults()
	s := &Sim{
		cfg:      cfg,
		seed:     cfg.Seed,
		clock:    o.clock,
		waiter:   o.waiter,
		log:      o.logger,
		tls:      o.tls,
		byName:   map[string]*deployment{},
		registry: prometheus.NewRegistry(),
	}
	for s.seed == 0 {
		s.seed = rand.Int64()
	}
	s.start = s.clock.Now()
	for _, dc := range cfg.Deployments {
		d := newDeployment(s, dc, s.seed)
		s.deps = append(s.deps, d)
		s.byName[dc.Name] = d
	}
	s.coll = newCollector(s)
	s.registry.MustRegister(s.coll)
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))

	if err := s.listen(); err != nil {
		s.cancel()
		s.shutdown()
		return nil, err
	}
	s.stopMu.Lock()
	s.stopCtx = context.AfterFunc(ctx, func() { _ = s.Close() })
	s.stopMu.Unlock()
	return s, nil
}

// listen opens every listener and starts serving.
func (s *Sim) listen() error {
	control := s.controlHandler()
	var shared []*deployment
	for _, d := range s.deps {
		switch {
		case d.cfg.Listen != "":
			if err := s.serveOn(d.cfg.Listen, s.dedicatedMux(control, d), false, d); err != nil {
				return err
			}
		case s.cfg.Listen != "":
			shared = append(shared, d)
		default:
			if err := s.serveOn("127.0.0.1:0", s.dedicatedMux(control, d), false, d); err != nil {
				return err
			}
		}
	}
	if len(shared) > 0 {
		if err := s.serveOn(s.cfg.Listen, s.sharedMux(control, shared), true, shared...); err != nil {
			return err
		}
	}
	if s.cfg.Control != "" {
		mux := http.NewServeMux()
		mux.Handle("/_sim/", control)
		mux.Handle("/", http.HandlerFunc(notFound))
		ln, err := net.Listen("tcp", s.cfg.Control)
		if err != nil {
			return fmt.Errorf("sim: control listener: %w", err)
		}
		s.controlURL = s.baseURL(ln.Addr()) + "/_sim"
		s.serve(ln, mux)
	}
	// Report endpoints in config order.
	byName := map[string]Endpoint{}
	for _, e := range s.endpoints {
		byName[e.Name] = e
	}
	s.endpoints = s.endpoints[:0]
	for _, d := range s.deps {
		s.endpoints = append(s.endpoints, byName[d.cfg.Name])
	}
	return nil
}

func (s *Sim) dedicatedMux(control http.Handler, d *deployment) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/_sim/", control)
	mux.Handle("/", d)
	return mux
}

func (s *Sim) sharedMux(control http.Handler, deps []*deployment) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/_sim/", control)
	for _, d := range deps {
		prefix := "/" + d.cfg.Name
		mux.Handle(prefix+"/", http.StripPrefix(prefix, d))
	}
	mux.Handle("/", http.HandlerFunc(notFound))
	return mux
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	_ = writeJSON(w, http.StatusNotFound, azureErrorBody{Error: azureError{Code: "404", Message: "Resource not found"}})
}

// serveOn listens on addr and serves h; deps are the deployments reached
// there (their endpoints are recorded), under /{name} when shared.
func (s *Sim) serveOn(addr string, h http.Handler, shared bool, deps ...*deployment) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sim: listen %s: %w", addr, err)
	}
	base := s.baseURL(ln.Addr())
	if s.controlURL == "" {
		s.controlURL = base + "/_sim"
	}
	for _, d := range deps {
		u := base
		if shared {
			u += "/" + d.cfg.Name
		}
		if d.cfg.Flavour == OpenAI {
			u += "/v1"
		}
		s.endpoints = append(s.endpoints, Endpoint{
			Name: d.cfg.Name, Region: d.cfg.Region, Flavour: d.flavour(),
			Deployment: d.cfg.Deployment, URL: u, Key: d.cfg.Key,
		})
	}
	s.serve(ln, h)
	return nil
}

func (s *Sim) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{
		Handler:           s.track(h),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	serve := srv.Serve
	if s.tls != nil {
		srv.TLSConfig = s.tls.Clone()
		serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
	}
	s.servers = append(s.servers, srv)
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("sim: serve", "addr", ln.Addr().String(), "err", err)
		}
	}()
}

// track counts running handlers so Close can wait for them.
func (s *Sim) track(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.active.enter() {
			w.Header().Set("Connection", "close")
			notFound(w, r)
			return
		}
		defer s.active.leave()
		h.ServeHTTP(w, r)
	})
}

// baseURL is http://host:port for a listener (https:// with WithTLS),
// with an unspecified host shown as 127.0.0.1.
func (s *Sim) baseURL(a net.Addr) string {
	scheme := "http://"
	if s.tls != nil {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return scheme + a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return scheme + net.JoinHostPort(host, port)
}

// Deployments lists the deployments in config order with their URLs.
func (s *Sim) Deployments() []Endpoint {
	return append([]Endpoint(nil), s.endpoints...)
}

// ControlURL is the base of the control API, e.g.
// "http://127.0.0.1:port/_sim": on the Control listener if one is
// configured, else on the first deployment listener.
func (s *Sim) ControlURL() string { return s.controlURL }

// Seed is the seed in use (Config.Seed, or the one picked when it was 0).
func (s *Sim) Seed() int64 { return s.seed }

// Started is the instant the sim started on its clock; schedules count
// from it.
func (s *Sim) Started() time.Time { return s.start }

func (s *Sim) lookup(name string) (*deployment, error) {
	d, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownDeployment, name)
	}
	return d, nil
}

// SetFault sets the fault of a deployment, replacing any set before; the
// zero Fault (or mode none) clears it and lets the schedule apply again. A
// fault set here takes precedence over the schedule. It returns
// ErrUnknownDeployment or a *FieldError for an invalid fault.
func (s *Sim) SetFault(name string, f Fault) error {
	d, err := s.lookup(name)
	if err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	f = f.withDefaults()
	d.setFault(f)
	s.log.Info("sim: fault set", "deployment", name, "mode", string(f.Mode))
	return nil
}

// Fault reports the set, scheduled and effective fault of a deployment now.
func (s *Sim) Fault(name string) (FaultState, error) {
	d, err := s.lookup(name)
	if err != nil {
		return FaultState{}, err
	}
	return d.faultState(s.clock.Now()), nil
}

// Stats returns every deployment's counters, by name.
func (s *Sim) Stats() map[string]Stats {
	now := s.clock.Now()
	out := make(map[string]Stats, len(s.deps))
	for _, d := range s.deps {
		st := d.counters.snapshot()
		st.Region = d.cfg.Region
		st.Fault = d.faultAt(now).Mode
		out[d.cfg.Name] = st
	}
	return out
}

// ResetStats zeroes every deployment's counters (not quota usage, faults or
// the in-flight count).
func (s *Sim) ResetStats() {
	for _, d := range s.deps {
		d.counters.reset()
	}
	s.log.Info("sim: stats reset")
}

// Collector exports the sim's metrics, for registering in another
// registry (the sim also serves them on /_sim/metrics from its own).
func (s *Sim) Collector() prometheus.Collector { return s.coll }

// Close stops every listener, unblocks blackholed and stalled requests and
// waits for every handler and server goroutine to return. It is safe to
// call more than once; later calls return the first result.
func (s *Sim) Close() error {
	s.closeOnce.Do(func() {
		s.stopMu.Lock()
		if s.stopCtx != nil {
			s.stopCtx()
		}
		s.stopMu.Unlock()
		s.cancel()
		s.closeErr = s.shutdown()
	})
	return s.closeErr
}

// shutdown closes the servers and waits for their goroutines and handlers.
func (s *Sim) shutdown() error {
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.serving.Wait()
	s.active.closeAndWait()
	return errors.Join(errs...)
}

// tracker counts running handlers. It is safe for concurrent use.
type tracker struct {
	mu     sync.Mutex
	cond   *sync.Cond
	n      int
	closed bool
}

func (t *tracker) init() {
	if t.cond == nil {
		t.cond = sync.NewCond(&t.mu)
	}
}

// enter registers a handler; false once closed.
func (t *tracker) enter() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	if t.closed {
		return false
	}
	t.n++
	return true
}

func (t *tracker) leave() {
	t.mu.Lock()
	t.init()
	t.n--
	if t.n == 0 {
		t.cond.Broadcast()
	}
	t.mu.Unlock()
}

// closeAndWait refuses new handlers and waits for running ones to return.
func (t *tracker) closeAndWait() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.init()
	t.closed = true
	for t.n > 0 {
		t.cond.Wait()
	}
}
