// Package config is switchover's YAML configuration: the schema, ${VAR}
// expansion from the environment, defaults, and validation that names the
// line of every problem.
package config

import (
	"errors"
	"fmt"
	"github.com/switchover-gw/switchover/internal/quantity"
	"github.com/switchover-gw/switchover/pricing"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is a whole gateway configuration.
type Config struct {
	// Listen is the gateway's address. Default 127.0.0.1:8080. With no keys
	// configured, a non-loopback address is refused unless
	// AllowUnauthenticated is set.
	Listen string `yaml:"listen"`
	// AllowUnauthenticated lets a gateway without keys listen beyond
	// loopback. Default false. Risk: anyone who can reach the port spends
	// your quota.
	AllowUnauthenticated bool `yaml:"allow_unauthenticated"`
	// AllowedHosts are extra names the API answers to in the Host header
	// while no keys are configured (DNS rebinding): "name" (any port) or
	// "name:port". The listen host, localhost, 127.0.0.1, [::1] and the
	// IP address a connection arrived at always are. Unused once keys
	// are required.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowedOrigins are the browser origins (scheme://host[:port]) other
	// than the API's own that may call it while no keys are configured.
	// Default none: a cross-site browser request gets 403. Unused once
	// keys are required.
	AllowedOrigins []string `yaml:"allowed_origins"`
	Log            Log      `yaml:"log"`
	Server         Server   `yaml:"server"`
	// Keys are the gateway keys callers present (Authorization: Bearer or
	// api-key). Empty, and no store, means no authentication. Keys made
	// through the admin API (virtual keys, kept in the store) work beside
	// them.
	Keys []Key `yaml:"keys"`
	// Teams group keys under shared limits and budgets.
	Teams []Team `yaml:"teams"`
	// Orgs group teams under shared limits and budgets, which apply on
	// top of each team's (teams[].org).
	Orgs []Org `yaml:"orgs"`
	// ObjectIDs signs the owner into the ids of stored objects (see
	// docs/operations.md, "Stored objects and their owners").
	ObjectIDs ObjectIDs `yaml:"object_ids"`
	// Store keeps virtual keys, teams and usage: an embedded SQLite file
	// or PostgreSQL. Unset: keys come from this file only, and usage is
	// in metrics and the request log, not kept.
	Store *Store `yaml:"store"`
	// Cache is the response cache's storage (config/cache.go); the
	// cache is turned on by pools[].cache or keys[].cache.
	Cache CacheStore `yaml:"cache"`
	// BackendDefaults apply to every backend that does not set the field.
	BackendDefaults BackendDefaults `yaml:"backend_defaults"`
	Backends        []Backend       `yaml:"backends"`
	Pools           []Pool          `yaml:"pools"`
	// Pinned routes the paths of stored objects (files, batches …) to one
	// backend, or a pool without failover. None by default: those paths
	// get 404 until a route names where their objects live.
	Pinned []Pinned `yaml:"pinned"`
	// UnknownPaths, if set, names the backend for paths nothing else
	// routes, and which of them it takes. Unset means 404.
	UnknownPaths *UnknownPaths `yaml:"unknown_paths"`
	// Admin is the admin API. Off unless set.
	Admin *Admin `yaml:"admin"`
	// Reload configures reloading the file while running.
	Reload Reload `yaml:"reload"`
	// Notifications tell people when a pool's traffic moved.
	Notifications Notifications `yaml:"notifications"`
	// Tracing exports OpenTelemetry spans. Off unless an endpoint is set.
	Tracing Tracing `yaml:"tracing"`
	// State is what several replicas share. Unset: each keeps its own.
	State State `yaml:"state"`

	warnings Problems
}

// State configures the store replicas of one gateway share (breaker
// trips, quota figures, operator actions, notifications, events). With
// none, everything stays in the process.
type State struct {
	// Redis is a Redis or Valkey server.
	Redis *Redis `yaml:"redis"`
	// Replica names this replica in the fleet's status and events.
	// Default: the host name, the process id and a random suffix.
	Replica string `yaml:"replica"`
}

// Redis is the shared store's server, or Redis Cluster.
type Redis struct {
	// URL is redis://[user:password@]host:port[/db] or rediss:// for TLS.
	// With Cluster it names seed nodes, the first as the host and more
	// as addr parameters: redis://host1:6379?addr=host2:6379&addr=host3:6379
	// (no /db other than /0). A secret when it holds a password: write
	// ${REDIS_URL}. Required.
	URL Secret `yaml:"url"`
	// Cluster makes the store a Redis Cluster client, which learns the
	// nodes from the seeds in URL; one reachable seed is enough, more let
	// a replica start while one is down. Default false: URL is one server
	// (or a proxy), and addr parameters are an error.
	Cluster bool `yaml:"cluster"`
	// Prefix starts every key and the channel, so that one server can
	// hold several fleets. Default "switchover:".
	Prefix string `yaml:"prefix"`
	// Timeout bounds each call to the store; past it the replica carries
	// on with its own state. Default 100ms.
	Timeout Duration `yaml:"timeout"`
}

// Admin configures the admin API, on a listener of its own.
type Admin struct {
	// Listen is its address. Default 127.0.0.1:8081. A non-loopback
	// address needs a key.
	Listen string `yaml:"listen"`
	// Key is sent as "Authorization: Bearer". Required unless AllowNoKey
	// is set (on loopback only). Never logged.
	Key Secret `yaml:"key"`
	// AllowNoKey serves the admin API without a key. Default false; only
	// allowed when Listen is loopback. Risk: every local process and user
	// can drain backends and force breakers. Host and Origin checks still
	// keep web pages (cross-site requests, DNS rebinding) out.
	AllowNoKey bool `yaml:"allow_no_key"`
	// AllowedHosts are extra names the admin API answers to in the Host
	// header (a DNS name or a proxy's name for it, with or without port).
	// The listen host, localhost, 127.0.0.1 and [::1] are always allowed;
	// any other Host gets 421, which defeats DNS rebinding. Default none.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// Viewers are key logins of the web console (/console/ on this
	// listener) below the admin's: each signs in with its key as a viewer
	// (sees, takes no action) or an operator (acts on pools). Default
	// none: only admin.key signs in.
	Viewers []Viewer `yaml:"viewers"`
	// SSO is the console's single sign-on (OpenID Connect), roles mapped
	// from the identity's claims (config/console.go). Default none.
	SSO *SSO `yaml:"sso"`
	// TLS serves the admin API and console over TLS, as server.tls does
	// the API; with client_ca_file, only clients with a certificate of
	// its CAs reach it (admin.key still applies). Default none. Read at
	// start.
	TLS *TLS `yaml:"tls"`
}

// Reload configures configuration reloads. SIGHUP always reloads.
type Reload struct {
	// Watch reloads when the file's content changes. Default true.
	Watch *bool `yaml:"watch"`
	// Interval is how often the file is checked. Default 5s.
	Interval Duration `yaml:"interval"`
}

// Notifications configures notifications of active-backend changes.
type Notifications struct {
	// FlapWindow collapses changes back and forth within it
	// (A->B->A->B: the second return within the window) into one
	// "flapping" message; one round trip (an outage and its recovery) is
	// a failover and a failback. Default 2m.
	FlapWindow Duration `yaml:"flap_window"`
	// Storm is the default failover-storm threshold of every pool.
	Storm Storm `yaml:"storm"`
	// Timeout bounds one delivery attempt. Default 5s.
	Timeout Duration `yaml:"timeout"`
	// Attempts bounds deliveries of one notification to one sink.
	// Default 3.
	Attempts int           `yaml:"attempts"`
	Webhooks []WebhookSink `yaml:"webhooks"`
	Slack    []URLSink     `yaml:"slack"`
	Teams    []URLSink     `yaml:"teams"`
	Exec     []ExecSink    `yaml:"exec"`
}

// Storm is a failover-storm threshold: more than Failovers failovers in a
// pool within Window send one "storm" notification (the Azure OpenAI game day behind API Management pages the
// on-call at more than 50 in 5 minutes).
type Storm struct {
	// Failovers is the threshold. Default 50; 0 in a pool means the
	// default.
	Failovers int `yaml:"failovers"`
	// Window is the sliding window. Default 5m.
	Window Duration `yaml:"window"`
}

// WebhookSink posts notifications as JSON.
type WebhookSink struct {
	URL Secret `yaml:"url"`
	// Secret signs each body (X-Switchover-Signature: sha256=HMAC of
	// timestamp.body). Optional. Never logged.
	Secret  Secret            `yaml:"secret"`
	Headers map[string]string `yaml:"headers"`
}

// URLSink is an incoming-webhook URL (Slack, Microsoft Teams). The URL
// holds a token: it is never logged.
type URLSink struct {
	URL Secret `yaml:"url"`
}

// ExecSink runs a command per notification (argv, no shell).
type ExecSink struct {
	Command []string `yaml:"command"`
	// Timeout kills the command. Default 10s.
	Timeout Duration `yaml:"timeout"`
}

// Tracing configures OpenTelemetry tracing.
type Tracing struct {
	// Endpoint is the OTLP/HTTP traces endpoint, such as
	// http://127.0.0.1:4318 (the /v1/traces path is added). Empty turns
	// tracing off.
	Endpoint string `yaml:"endpoint"`
	// Headers are sent with every export (for example an API key).
	Headers map[string]Secret `yaml:"headers"`
	// SampleRatio is the share of new traces kept; a caller's sampled
	// trace is always followed. Default 1.
	SampleRatio *float64 `yaml:"sample_ratio"`
	// ServiceName is the service.name resource attribute. Default
	// switchover.
	ServiceName string `yaml:"service_name"`
}

// Log configures the log.
type Log struct {
	// Format is "text" (default) or "json".
	Format string `yaml:"format"`
	// Level is "debug", "info" (default), "warn" or "error". One line per
	// request is logged at info.
	Level string `yaml:"level"`
}

// Server configures the gateway's HTTP server.
type Server struct {
	// MaxBody bounds a request body; larger gets 413. Default 32MiB.
	MaxBody Size `yaml:"max_body"`
	// MaxBodyMemory bounds the bytes held by request bodies in flight
	// across all requests: a body reserves its Content-Length (or, sent
	// chunked, grows its share as it is read) until its response ends,
	// and a request that would go over gets 503 request_body_memory_full
	// with Retry-After: 1, its body unread. Default 256MiB (or max_body
	// if larger); at least max_body.
	MaxBodyMemory Size `yaml:"max_body_memory"`
	// MaxConnections bounds the client connections open at once: past it
	// a new connection waits in the kernel's backlog until one closes.
	// Default 10000; keep it under the process's file descriptor limit
	// (ulimit -n), less what backend connections need. Read at start: a
	// reload does not change it.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerAddress bounds the connections one client address
	// holds: past it the address's idlest idle connection is closed, or,
	// with none idle, the new one gets 503 too_many_connections. Default
	// max_connections / 2, which a NAT'd office never reaches; behind a
	// reverse proxy every caller shares its address, so set it to
	// max_connections there (that turns it off). Read at start.
	MaxConnectionsPerAddress int `yaml:"max_connections_per_address"`
	// MaxConcurrentRequests bounds the requests served at once: past it a
	// request gets 503 too_many_concurrent_requests with Retry-After: 1 at
	// once, its body unread. /healthz, /readyz and /metrics are exempt.
	// Default 2048.
	MaxConcurrentRequests int `yaml:"max_concurrent_requests"`
	// MaxConcurrentRequestsPerKey bounds the requests of one gateway key
	// served at once, its share of max_concurrent_requests, so that one
	// key cannot take every slot: past it the key's request gets 429
	// rate_limit_exceeded at once, its body unread (a key's own
	// max_concurrent may be lower). Default half of
	// max_concurrent_requests, or all of it when the configuration has
	// one key and no store (one key carries all the traffic). Without
	// keys it does not apply.
	MaxConcurrentRequestsPerKey int `yaml:"max_concurrent_requests_per_key"`
	// MaxBodyMemoryPerKey bounds the bytes held by one gateway key's
	// request bodies in flight, its share of max_body_memory, so that one
	// key's large or slow bodies cannot take all of it: past it the key's
	// request gets 429 rate_limit_exceeded, its body unread. Default half
	// of max_body_memory, or max_body if larger (all of it with one key
	// and no store, as above); at least max_body. Without keys it does not
	// apply.
	MaxBodyMemoryPerKey Size `yaml:"max_body_memory_per_key"`
	// ReadHeaderTimeout bounds reading request headers. Default 10s.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// ReadTimeout is how long a request body may take to arrive before
	// MinBodyRate applies, so a slow client cannot hold a connection, a
	// slot or body memory: a body that falls behind gets 408. Default 60s.
	ReadTimeout Duration `yaml:"read_timeout"`
	// MinBodyRate is the least average rate, in bytes a second counted
	// from the start of the body, at which a request body must keep
	// arriving once read_timeout has passed: a body of n bytes may take
	// read_timeout + n/min_body_rate. Default 4KiB (32 kbit/s, below any
	// real uplink: a 32MiB body may take 2 h 17 min); a body that falls
	// behind gets 408 and gives back its slot and memory at once.
	MinBodyRate Size `yaml:"min_body_rate"`
	// IdleTimeout closes idle keep-alive connections. Default 120s.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// IdleTimeoutUnderPressure replaces IdleTimeout while 80% of
	// max_connections are open: a connection idle for longer is closed
	// as the next one arrives. Default 10s (at most idle_timeout). At
	// max_connections the idlest idle connection is closed whatever its
	// idle time. Read at start.
	IdleTimeoutUnderPressure Duration `yaml:"idle_timeout_under_pressure"`
	// DrainDelay is how long, after SIGTERM, /readyz answers 503 while
	// the gateway still accepts and serves requests, so that a load
	// balancer or Kubernetes takes the replica out before its listener
	// closes. Default 5s; 0 disables (the listener closes at once). Set it
	// to at least the time your load balancer needs to notice a failing
	// readiness check (Kubernetes: periodSeconds × failureThreshold, or
	// the endpoint update delay), and keep terminationGracePeriodSeconds
	// above drain_delay + shutdown_grace.
	DrainDelay *Duration `yaml:"drain_delay"`
	// ShutdownGrace is how long in-flight requests and streams may run
	// once the listener has closed (after DrainDelay) before they are
	// ended: a stream still open then gets an SSE error event saying the
	// gateway is shutting down. Default 30s.
	ShutdownGrace Duration `yaml:"shutdown_grace"`
	// MetricsListen, if set, is a listener of its own (host:port) that
	// serves GET /metrics and nothing else, without a key: bind it where
	// only Prometheus reaches. The metrics name keys and teams and their
	// spend. Default none: /metrics is served on the admin listener,
	// behind its Host check and key. Read at start.
	MetricsListen string `yaml:"metrics_listen"`
	// MetricsOnAPI also serves GET /metrics on the API listener, without
	// a key, as it used to be: anyone who reaches the API reads the
	// keys' names and spend. Default false. Read at start.
	MetricsOnAPI bool `yaml:"metrics_on_api"`
	// TraceHeader lets a caller that sends X-Switchover-Trace get it back
	// listing each attempt (backend, status, reason, latency). Default
	// true; false never sends it.
	TraceHeader *bool `yaml:"trace_header"`
	// TLS serves the API over TLS (https, wss) from certificate and key
	// files, optionally asking clients for certificates (mutual TLS).
	// Default none: plain HTTP, for a TLS terminator in front. Read at
	// start; the files themselves are read again when they change.
	TLS *TLS `yaml:"tls"`
	// HTTP2 offers HTTP/2 to TLS clients (ALPN h2) beside HTTP/1.1.
	// Default true; false serves HTTP/1.1 only. WebSocket sessions
	// (Realtime) always use HTTP/1.1. Read at start.
	HTTP2 *bool `yaml:"http2"`
	// H2C serves cleartext HTTP/2 (prior knowledge, as a proxy that
	// speaks h2c to its upstreams sends) beside HTTP/1.1 on a listener
	// without tls. Default false. Only behind a proxy you run: h2c has no
	// encryption. Read at start.
	H2C bool `yaml:"h2c"`
	// MetricsTLS serves metrics_listen over TLS, as tls does the API
	// (with client_ca_file, only scrapers with a certificate of that CA
	// read the metrics). Default none. Read at start.
	MetricsTLS *TLS `yaml:"metrics_tls"`
}

// Client authentication modes of TLS.ClientAuth.
const (
	ClientAuthNone    = "none"
	ClientAuthRequest = "request"
	ClientAuthRequire = "require"
)

// TLS is a listener's TLS: its certificate, and whether clients must show
// one. The certificate and key files are checked at load (missing,
// unreadable, not PEM, not a pair are errors on their line) and read
// again, at most every reload.interval and on SIGHUP, when their content
// changes: the next handshake serves the new pair; a pair that does not
// load leaves the one in force serving, logged once and counted in
// switchover_tls_certificate_reloads_total{result="invalid"}.
type TLS struct {
	// CertFile is the certificate in PEM: the server's first, then the
	// intermediates a client needs to reach its root. Required. A path
	// relative to the working directory, as every path of this file.
	CertFile string `yaml:"cert_file"`
	// KeyFile is its private key in PEM (PKCS #8, PKCS #1 or SEC 1; not
	// encrypted). Required.
	KeyFile string `yaml:"key_file"`
	// ClientCAFile holds the certificates (PEM) of the CAs whose client
	// certificates are accepted. Default none. Read at start only.
	ClientCAFile string `yaml:"client_ca_file"`
	// ClientAuth is what a client must show: none (no certificate asked
	// for), request (one is asked for and, when given, must verify
	// against client_ca_file; a client without one still connects), or
	// require (a client without a certificate of client_ca_file's CAs is
	// refused in the handshake). Default require with client_ca_file,
	// else none. A client certificate does not replace a gateway key:
	// both apply.
	ClientAuth string `yaml:"client_auth"`
	// MinVersion is the lowest TLS version accepted: "1.2" or "1.3".
	// Default 1.2. Cipher suites are Go's defaults (TLS 1.3's are not
	// configurable).
	MinVersion string `yaml:"min_version"`
}

// Key is one gateway key.
type Key struct {
	// Name identifies the caller in logs; the key itself never is.
	Name string `yaml:"name"`
	Key  Secret `yaml:"key"`
	// Team names the team whose limits and budget apply on top of the
	// key's own (a team of teams, or one kept in the store).
	Team string `yaml:"team"`
	// Pools and Models the key may use: pool names, and the model names a
	// caller writes (aliases included). Empty means every one.
	Pools  []string `yaml:"pools"`
	Models []string `yaml:"models"`
	Limits `yaml:",inline"`
	// Budgets bound the key's spend on one pool each, on top of its own
	// budget. Default none.
	Budgets []PoolBudget `yaml:"budgets"`
	// Patience bounds how long this key's requests wait in a pool's
	// queue, under the pool's own patience. Default: the pool's.
	Patience Duration `yaml:"patience"`
	// Tags label the key's usage for spend by tag (at most 16 words of
	// ASCII letters, digits and - _ . : / = @); Metadata is free text
	// shown by keys list (at most 32 entries). Default none.
	Tags     []string          `yaml:"tags"`
	Metadata map[string]string `yaml:"metadata"`
	// Cache turns on the response cache and request coalescing for the
	// key's calls, in place of its pools' (config/cache.go). Unset: the
	// pools'.
	Cache *Cache `yaml:"cache"`
	// RequestLog keeps the key's requests' bodies, or not, whatever its
	// pools say (config/requestlog.go). Unset: the pools'.
	RequestLog *RequestLog `yaml:"request_log"`
}

// Backend types.
const (
	TypeOpenAI           = "openai"
	TypeOpenAICompatible = "openai_compatible"
	TypeAzure            = "azure"
	TypeAnthropic        = "anthropic"
	TypeGemini           = "gemini"
	TypeFoundry          = "foundry"
	TypeBedrock          = "bedrock"
)

// defaultURLs are the API roots of the hosted providers, used when a
// backend of that type gives no url.
var defaultURLs = map[string]string{
	TypeOpenAI:    "https://api.openai.com/v1",
	TypeAnthropic: "https://api.anthropic.com",
	TypeGemini:    "https://generativelanguage.googleapis.com",
}

// Timeouts are the per-backend time bounds.
type Timeouts struct {
	// ConnectTimeout bounds TCP connection set-up. Default 5s.
	ConnectTimeout Duration `yaml:"connect_timeout"`
	// FirstByteTimeout bounds the wait for response headers. For a
	// non-streaming call the headers come only after the whole answer is
	// generated, so set this above your longest expected completion.
	// Default 120s.
	FirstByteTimeout Duration `yaml:"first_byte_timeout"`
	// StreamFirstByteTimeout bounds the wait for a stream's headers and
	// first event, which come quickly from a healthy backend. Default 30s.
	StreamFirstByteTimeout Duration `yaml:"stream_first_byte_timeout"`
	// Timeout bounds a whole attempt, streaming included. Default 10m.
	Timeout Duration `yaml:"timeout"`
	// IdleTimeout bounds the gap between two chunks of a response body, so
	// a stalled stream ends with an error instead of hanging. Default 2m.
	IdleTimeout Duration `yaml:"idle_timeout"`
}

// BackendDefaults are the fields every backend inherits.
type BackendDefaults struct {
	Timeouts `yaml:",inline"`
	Breaker  Breaker `yaml:"breaker"`
	Probe    *Probe  `yaml:"probe"`
	// QuotaAware and QuotaSlice are every backend's unless it sets its
	// own.
	QuotaAware *bool    `yaml:"quota_aware"`
	QuotaSlice Duration `yaml:"quota_slice"`
}

// Probe is a backend's active health probe. Every backend has one by
// default, probing only while its breaker is open for a failure
// (recovery_interval), so failback comes within seconds of recovery and
// costs nothing while the backend is healthy; set interval to also probe a
// healthy backend, so a dead fallback is known before it is needed
// (as the article on notifying active-region changes recommends).
type Probe struct {
	// Interval between probes of a healthy backend. Default 0: none. When
	// set, at least 10s, so a probe costs at most 6 requests a minute.
	Interval Duration `yaml:"interval"`
	// RecoveryInterval between probes of a backend whose breaker is open
	// for a failure (5xx, timeouts, an unresponsive backend, a
	// misconfiguration). A passing probe ends the trip. Not used while a
	// backend is benched for quota (its Retry-After says when it returns)
	// or forced open by an operator. Default 5s; at least 1s.
	RecoveryInterval Duration `yaml:"recovery_interval"`
	// Timeout of one probe. Default: the backend's learned check timeout
	// (four times the 95th percentile of its recent answers to tiny calls,
	// between 2s and 10s); when set, it caps that. At most the interval.
	Timeout Duration `yaml:"timeout"`
	// Kind is "chat" (a one-token chat completion through the backend's
	// own format: the real path, a few tokens of quota each) or "models"
	// (list models: no quota, but it says less). Default chat.
	Kind string `yaml:"kind"`
	// Failures in a row of interval probes that mark the backend
	// unavailable (its breaker forced open) when MarkUnavailable.
	// Default 2.
	Failures int `yaml:"failures"`
	// MarkUnavailable opens the breaker after Failures failed interval
	// probes, so users never meet the dead backend. Default true.
	MarkUnavailable *bool `yaml:"mark_unavailable"`
	// EndTrip closes a breaker that traffic opened as soon as an interval
	// probe passes, instead of waiting for the trip to end. Default true.
	// (A breaker the probe itself opened always closes on a passing
	// probe; recovery probes always end the trip.)
	EndTrip *bool `yaml:"end_trip"`
	// Disabled turns the probe off for this backend (or, in
	// backend_defaults, for every backend that does not set its own).
	Disabled bool `yaml:"disabled"`
}

// Backend is one upstream deployment.
type Backend struct {
	// Name is unique; it appears in the x-switchover-backend header.
	Name string `yaml:"name"`
	// Price, if set, is what this backend's tokens cost in US dollars per
	// million (input, cached_input, output), instead of the shipped list
	// price of the model it answers with; {input: 0, output: 0} for a
	// provisioned deployment, which costs nothing per token.
	Price *pricing.Price `yaml:"price"`
	// Type is "openai" (OpenAI: Bearer key), "openai_compatible" (any
	// server of the OpenAI API: vLLM, Ollama, LM Studio, llama.cpp; key
	// optional), "azure" (api-key header or Entra ID token, deployment in
	// the path), "anthropic" (Messages API), "gemini" (Generative
	// Language API), "vertex" (Google Cloud Vertex AI: Gemini or Claude,
	// Google credentials; see Vertex) or "foundry" (Azure AI Foundry's model
	// inference API).
	Type string `yaml:"type"`
	// URL is the API root: for openai and openai_compatible the base URL
	// an SDK would use (https://api.openai.com/v1), for azure the resource
	// endpoint (https://NAME.openai.azure.com), for anthropic
	// https://api.anthropic.com, for gemini
	// https://generativelanguage.googleapis.com. Defaults to those for
	// openai, anthropic and gemini; required for the others.
	URL string `yaml:"url"`
	// APIKey is the backend's credential. Never logged or returned.
	APIKey Secret `yaml:"api_key"`
	// APIVersion is azure's api-version query value ("v1" for the
	// /openai/v1/ API; default 2024-10-21) or gemini's path version
	// (default v1beta).
	APIVersion string `yaml:"api_version"`
	// AnthropicVersion is the anthropic-version header. Default
	// 2023-06-01.
	AnthropicVersion string `yaml:"anthropic_version"`
	// Organization and Project are sent to an openai or openai-compatible
	// backend as OpenAI-Organization and OpenAI-Project: which of the key's
	// organizations and projects is billed. Optional; OpenAI then uses the
	// key's default. Callers can never set these headers themselves. For a
	// vertex backend, Project is the Google Cloud project ID (required).
	Organization string `yaml:"organization"`
	Project      string `yaml:"project"`
	// ResponsesAPI says whether an openai, openai_compatible or azure
	// backend serves OpenAI's Responses API (POST /responses; azure on its
	// /openai/v1/ API). Default true. False: Responses calls are
	// translated to chat completions for it (stateless: store and
	// previous_response_id then need a member that has the API).
	ResponsesAPI *bool `yaml:"responses_api"`
	// QuotaAware makes the gateway read the backend's rate-limit headers
	// (x-ratelimit-remaining-*, anthropic-ratelimit-*) and send it no call
	// they say it would refuse: the call goes to another member at once,
	// or, every member being spent, is answered 429 with the soonest reset
	// as Retry-After, and no refused call is spent finding out. Default
	// true (backend_defaults.quota_aware). Risk: a backend whose headers
	// overstate what it has left is trusted until its window resets.
	QuotaAware *bool `yaml:"quota_aware"`
	// QuotaSlice is how long a backend that says what it has left but not
	// when it refills (Azure OpenAI) is taken to need before its window
	// resets. Default 10s, the slice Azure enforces its per-minute limits
	// over. Shorter risks a refused call at the window's end; longer
	// leaves quota unused.
	QuotaSlice Duration `yaml:"quota_slice"`
	// HTTP2 lets calls to an https backend use HTTP/2 when it offers it
	// (ALPN h2): many calls share a connection, up to the backend's
	// limit of concurrent streams on one (SETTINGS_MAX_CONCURRENT_STREAMS,
	// often 100 to 250), past which another connection is opened; an idle
	// connection is pinged and closed when the backend stops answering.
	// Default true. False keeps every call on HTTP/1.1 connections of its
	// own (a proxy or server with a broken HTTP/2). WebSocket sessions
	// (Realtime) always use HTTP/1.1; http:// backends always do.
	HTTP2 *bool `yaml:"http2"`
	// HTTP1Transport chooses the client of HTTP/1.1 calls to an http://
	// backend: "switchover" (default) makes each call on the goroutine
	// that asked for it, its answer read by net/http's ReadResponse
	// (package internal/h1); "net/http" uses net/http's
	// Transport, whose connections each keep a read and a write goroutine
	// and hand every call between them: more CPU, allocations and memory
	// a stream. For a backend or proxy the default client does not get on
	// with; https backends, proxied hosts and WebSocket sessions always
	// use net/http's.
	HTTP1Transport string `yaml:"http1_transport"`
	// CAFile is a PEM file of the certificate authorities an https
	// backend's certificate must chain to, instead of the system's (a
	// self-hosted server, a simulator, a proxy with a private CA).
	// Default none: the system's roots. Read when the engine is built
	// (start and reload). Risk: a CA that signs more than the backend lets
	// whoever holds its key stand in for it.
	CAFile string `yaml:"ca_file"`
	// Entra authenticates an azure backend with Microsoft Entra ID tokens
	// instead of api_key.
	Entra *Entra `yaml:"entra"`
	// Vertex holds a vertex backend's location, publisher and
	// credentials_file (config/vertex.go).
	Vertex `yaml:",inline"`
	// AWS is a bedrock backend's credentials and API (config/bedrock.go).
	AWS *AWS `yaml:"aws"`
	// Region is reported in the x-switchover-region header.
	Region string `yaml:"region"`
	// Headers are added to every request to this backend.
	Headers  map[string]string `yaml:"headers"`
	Timeouts `yaml:",inline"`
	Breaker  Breaker `yaml:"breaker"`
	// Probe is the backend's health probe; default backend_defaults.probe,
	// else recovery probes only (see Probe).
	Probe *Probe `yaml:"probe"`
	// ExtraParameters is a foundry backend's extra-parameters header:
	// what Azure AI Foundry does with body fields its model inference API
	// does not define (a caller's vendor-specific options):
	// "pass-through" sends them to the model, "drop" removes them, "error"
	// refuses the call with a 400. Unset sends no header, which the
	// service takes as "error". Risk: pass-through lets a caller reach
	// options of the model that the API does not vouch for.
	ExtraParameters string `yaml:"extra_parameters"`
	// Preset names a known service of the OpenAI API (mistral, groq,
	// together, fireworks, deepseek, openrouter, xai, perplexity, vllm,
	// ollama; config/presets.go): it fills type (openai_compatible), url,
	// unsupported and responses_api where the backend leaves them unset.
	// Default none.
	Preset string `yaml:"preset"`
	// Unsupported lists the operations an openai or openai_compatible
	// backend does not serve (completions, embeddings, responses, audio,
	// images, moderations, realtime): its members are skipped for them
	// with the reason unsupported instead of being asked, and Responses
	// calls are translated to chat. Default: the preset's, else none
	// ([] says none over a preset's). Risk: an operation listed that the
	// backend does serve is never sent there.
	Unsupported []string `yaml:"unsupported"`

	line int
}

// Equal reports whether b and o configure the same backend in every field.
func (b Backend) Equal(o Backend) bool {
	b.line, o.line = 0, 0
	return reflect.DeepEqual(b, o)
}

// SameIdentity reports whether b and o are the same deployment with the
// same credentials: its breaker state still says something about it, even
// if timeouts or breaker settings changed.
func (b Backend) SameIdentity(o Backend) bool {
	return b.Name == o.Name && b.Type == o.Type && b.URL == o.URL && b.APIKey == o.APIKey &&
		b.APIVersion == o.APIVersion && b.Organization == o.Organization && b.Project == o.Project &&
		reflect.DeepEqual(b.Entra, o.Entra) && b.Vertex == o.Vertex && reflect.DeepEqual(b.AWS, o.AWS) && b.Region == o.Region
}

// Entra is a Microsoft Entra ID identity for azure backends. Give exactly
// one of client_secret, federated_token_file and managed_identity. Every
// backend with the same identity and scope shares one cached token,
// refreshed before it expires.
type Entra struct {
	TenantID string `yaml:"tenant_id"`
	// ClientID is the app registration, or with managed_identity a
	// user-assigned identity (empty: the system-assigned one).
	ClientID string `yaml:"client_id"`
	// ClientSecret uses the client-credentials flow. Never logged.
	ClientSecret Secret `yaml:"client_secret"`
	// FederatedTokenFile uses workload identity federation: the file holds
	// the federated token (AKS writes it).
	FederatedTokenFile string `yaml:"federated_token_file"`
	// ManagedIdentity uses the host's managed identity.
	ManagedIdentity bool `yaml:"managed_identity"`
	// Scope is the token audience. Default
	// https://cognitiveservices.azure.com/.default.
	Scope string `yaml:"scope"`
	// AuthorityHost is the Entra endpoint for sovereign clouds. Default
	// the public cloud.
	AuthorityHost string `yaml:"authority_host"`
}

// Breaker configures a backend's circuit breaker. Unset fields come from
// backend_defaults, then from the built-in defaults.
type Breaker struct {
	// Failures within Window open the breaker. Default 5.
	Failures int `yaml:"failures"`
	// Window is the sliding window failures are counted in. Default 30s.
	Window Duration `yaml:"window"`
	// Statuses that count as failures, as codes or "lo-hi" ranges.
	// Default [429, "500-599"]. Connection errors and timeouts always count.
	Statuses StatusList `yaml:"statuses"`
	// Trip is how long an open breaker benches the backend the first
	// time. Default 60s. A backend benched again after it came back is
	// benched Trip times the number of times in a row (up to MaxTrip);
	// each Trip it then stays closed forgives one.
	Trip Duration `yaml:"trip"`
	// MaxTrip caps the trip of a backend benched again and again (Envoy's
	// max_ejection_time). Default 5m; at least Trip. MaxTrip = Trip gives
	// API Management's fixed trip.
	MaxTrip Duration `yaml:"max_trip"`
	// SlowStart is how long a backend back from a brownout's trip, or
	// from a trip that was not its first in a row, takes to get its whole
	// share of traffic again (from a tenth), during which one failure
	// benches it again. Default 30s; 0s turns it off.
	SlowStart *Duration `yaml:"slow_start"`
	// AcceptRetryAfter keeps the breaker open for the longer of Trip and
	// the backend's Retry-After. Default true.
	AcceptRetryAfter *bool `yaml:"accept_retry_after"`
	// FollowRetryAfter benches a backend for exactly the Retry-After of
	// the failure that opened the breaker (shorter or longer than Trip),
	// when it sent one, and then gives it traffic again without a
	// half-open probe: a quota 429's Retry-After says when the quota
	// returns. Trip and the probe still apply to failures without one.
	// Default true; false gives API Management's semantics (with
	// AcceptRetryAfter: the longer of Trip and Retry-After, then a probe).
	FollowRetryAfter *bool `yaml:"follow_retry_after"`
	// MaxRetryAfter caps a Retry-After so an absurd value cannot bench a
	// backend for a day. Default 5m.
	MaxRetryAfter Duration `yaml:"max_retry_after"`
	// Disabled turns the breaker off: the backend is never benched.
	Disabled bool `yaml:"disabled"`
}

// Pool is a named group of backends that callers address by model.
type Pool struct {
	// Name is the model name callers use (the "model" field, or the
	// deployment in an Azure-style path).
	Name string `yaml:"name"`
	// Aliases are further model names that select this pool.
	Aliases []string `yaml:"aliases"`
	Members []Member `yaml:"members"`
	Retry   Retry    `yaml:"retry"`
	// Storm overrides notifications.storm for this pool.
	Storm Storm `yaml:"storm"`
	// Strategy picks each attempt's member within the best priority tier:
	// priority (smooth weighted round-robin, the default), least_busy,
	// latency, affinity or headroom. See docs/config.md.
	Strategy string `yaml:"strategy"`
	// RetryBudget caps the pool's retries as a share of its requests.
	RetryBudget RetryBudget `yaml:"retry_budget"`
	// Fallback is the pool a request goes on to when every member of this
	// one failed or was out; ContextFallback the one for a request a
	// member refused as longer than its context window. Never on a
	// content-filter refusal. Optional.
	Fallback        string `yaml:"fallback"`
	ContextFallback string `yaml:"context_fallback"`
	// Queue holds patient requests while every member is out of quota.
	Queue Queue `yaml:"queue"`
	// Hedge, when set, sends a second attempt to the next choice when a
	// request's first is slow to its first byte. Off by default.
	Hedge *Hedge `yaml:"hedge"`
	// Cache turns on the response cache and request coalescing for the
	// pool's calls (config/cache.go). Unset: off.
	Cache *Cache `yaml:"cache"`
	// RequestLog keeps the pool's requests' bodies in the request log
	// (config/requestlog.go). Unset: no bodies.
	RequestLog *RequestLog `yaml:"request_log"`
}

// Hedge hedges a pool's slow requests: when the first attempt has no
// first byte after `after`, a second goes to the next member; the first
// to answer is passed on and the other cancelled (not counted against its
// backend, though the backend may bill the work it did). Only calls
// without side effects are hedged (chat, completions, embeddings,
// messages, moderations, token counts), never a Responses call, media or
// a call on stored state.
type Hedge struct {
	// After is a fixed wait ("800ms") or a quantile of the first backend's
	// own recent times to first byte ("p90", p50 to p99). Default: the
	// quantile 1 - Share (p90 at the default share), the earliest the
	// share lets every slow request be hedged.
	After HedgeAfter `yaml:"after"`
	// Share bounds hedges to this share of the pool's requests, counted
	// over its last 50/Share requests that may be hedged (in (0, 1]).
	// Default 0.1.
	Share float64 `yaml:"share"`
}

// HedgeAfter is a hedge's delay: a duration, or a quantile written p50
// to p99.
type HedgeAfter struct {
	Delay    time.Duration
	Quantile float64
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (h *HedgeAfter) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeErr(n.Line, "expected a duration such as 800ms or a quantile such as p90")
	}
	if q, ok := strings.CutPrefix(n.Value, "p"); ok {
		v, err := strconv.Atoi(q)
		if err != nil || v < 50 || v > 99 {
			return typeErr(n.Line, "%q is not a quantile from p50 to p99", n.Value)
		}
		*h = HedgeAfter{Quantile: float64(v) / 100}
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v <= 0 {
		return typeErr(n.Line, "%q is neither a quantile (p50 to p99) nor a positive duration (800ms)", n.Value)
	}
	*h = HedgeAfter{Delay: v}
	return nil
}

// Queue is a pool's queue of requests waiting for quota: a request that
// may wait (the x-switchover-max-wait header, or max_wait for every
// request) is held while every member is out of quota, and released, first
// come first served, as windows refill, no more than quota admits.
type Queue struct {
	// MaxWait is how long a request that does not say waits. Default 0:
	// only requests that ask wait.
	MaxWait Duration `yaml:"max_wait"`
	// MaxWaitLimit caps any request's wait. Default 5m.
	MaxWaitLimit Duration `yaml:"max_wait_limit"`
	// MaxLength bounds the requests waiting; past it a request gets its
	// 429 at once. Default 1000.
	MaxLength int `yaml:"max_length"`
}

// RetryBudget caps a pool's retries (Finagle's and Envoy's retry
// budgets): over a sliding window, retries may be at most ratio of the
// requests, plus min_per_second whatever the traffic, so that when every
// backend fails the gateway adds that much load, not attempts times it.
// A retry past the budget is not made: the request gets its last failure
// at once. On by default.
type RetryBudget struct {
	// Ratio of retries to requests. Default 0.2.
	Ratio float64 `yaml:"ratio"`
	// MinPerSecond retries are always allowed. Default 3.
	MinPerSecond float64 `yaml:"min_per_second"`
	// Window is the sliding window. Default 10s.
	Window Duration `yaml:"window"`
	// Disabled turns the budget off: every retry attempts allows is made.
	Disabled bool `yaml:"disabled"`
}

// Member places a backend in a pool.
type Member struct {
	Backend string `yaml:"backend"`
	// Priority tier: 1 first. Default 1.
	Priority int `yaml:"priority"`
	// Weight within the tier. Default 1.
	Weight int `yaml:"weight"`
	// Model is the backend's model or deployment name for this pool.
	// Default: the name the caller used.
	Model string `yaml:"model"`
	// MaxTokens is sent as max_tokens to a backend that requires one
	// (anthropic) when a request sets none. Default 4096.
	MaxTokens int `yaml:"max_tokens"`
}

// Retry configures a pool's retries.
type Retry struct {
	// Attempts bounds the upstream calls per request, the first included;
	// each backend is tried at most once. Default 3.
	Attempts int `yaml:"attempts"`
	// On lists the statuses retried on another backend. Default [429, 500,
	// 502, 503, 504, 529] (529 is Anthropic's "overloaded"). 400, 413 and
	// 422 are refused: they are the caller's own errors. 401, 403 and 404
	// are always failed over (they say the backend's key or deployment is
	// wrong: the caller's credentials never go upstream). Connection
	// errors and timeouts always retry.
	On StatusList `yaml:"on"`
	// Budget bounds retries in time (Caddy's try_duration): no retry
	// starts once the request has spent this long, and a retry's wait for
	// its first byte ends with it. The first attempt always gets its full
	// first-byte timeout; an answer already flowing is never cut.
	// Default 90s.
	Budget Duration `yaml:"budget"`
}

// Duration is a time.Duration written as "30s", "1m30s" or "250ms".
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeErr(n.Line, "expected a duration such as 30s")
	}
	v, err := quantity.ParseDuration(n.Value)
	switch {
	case errors.Is(err, quantity.ErrNegative):
		return typeErr(n.Line, "duration %q is negative", n.Value)
	case err != nil:
		return typeErr(n.Line, "%q is not a duration (use a unit: 500ms, 30s, 2m)", n.Value)
	}
	*d = Duration(v)
	return nil
}

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// Size is a byte count written as 1048576, "512KiB", "32MiB" or "1GB",
// at most MaxSize.
type Size int64

// MaxSize bounds every size in the configuration: larger values are
// refused as mistakes, never wrapped around or replaced by a default.
const MaxSize = quantity.MaxSize // 1TiB

// errSizeTooLarge is parseSize's error for a value over MaxSize,
// including one that would overflow int64.
var errSizeTooLarge = quantity.ErrSizeTooLarge

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeErr(n.Line, "%q is not a size (use 1048576, 512KiB, 32MiB)", n.Value)
	}
	v, err := parseSize(n.Value)
	switch {
	case errors.Is(err, errSizeTooLarge):
		return typeErr(n.Line, "%q is too large a size (at most 1TiB)", n.Value)
	case err != nil:
		return typeErr(n.Line, "%q is not a size (use 1048576, 512KiB, 32MiB)", n.Value)
	}
	*s = Size(v)
	return nil
}

// parseSize reads a size as the admin API and the command line do
// (quantity.ParseSize).
func parseSize(s string) (int64, error) { return quantity.ParseSize(s) }

// StatusList is a list of HTTP status codes and "lo-hi" ranges.
type StatusList []StatusRange

// StatusRange is an inclusive range of status codes; a single code has
// Lo == Hi.
type StatusRange struct{ Lo, Hi int }

// UnmarshalYAML implements yaml.Unmarshaler.
func (l *StatusList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return typeErr(n.Line, "expected a list of status codes, such as [429, \"500-599\"]")
	}
	out := StatusList{}
	var bad []string
	for _, item := range n.Content {
		r, err := parseStatusRange(item.Value)
		if err != nil || item.Kind != yaml.ScalarNode {
			bad = append(bad, fmt.Sprintf("line %d: %q is not a status code (100-599) or range such as \"500-599\"", item.Line, item.Value))
			continue
		}
		out = append(out, r)
	}
	if bad != nil {
		return &yaml.TypeError{Errors: bad}
	}
	*l = out
	return nil
}

func parseStatusRange(s string) (StatusRange, error) {
	lo, hi, isRange := strings.Cut(strings.TrimSpace(s), "-")
	a, err := strconv.Atoi(strings.TrimSpace(lo))
	if err != nil {
		return StatusRange{}, err
	}
	b := a
	if isRange {
		if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
			return StatusRange{}, err
		}
	}
	if a < 100 || b > 599 || a > b {
		return StatusRange{}, fmt.Errorf("out of range")
	}
	return StatusRange{a, b}, nil
}

// Has reports whether code is in the list.
func (l StatusList) Has(code int) bool {
	for _, r := range l {
		if code >= r.Lo && code <= r.Hi {
			return true
		}
	}
	return false
}

// Secret is a credential. It prints as [redacted] in every format, so a
// config dumped to a log or an API never shows it.
type Secret string

// Value returns the secret itself, for the one place that sends it.
func (s Secret) Value() string { return string(s) }

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString implements fmt.GoStringer, so %#v does not print it either.
func (s Secret) GoString() string { return `"` + s.String() + `"` }

// MarshalYAML implements yaml.Marshaler.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// MarshalText implements encoding.TextMarshaler (JSON, slog).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// typeErr is a decoding error that lets the decoder go on and collect the
// rest, so that one run reports every problem.
func typeErr(line int, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", line) + fmt.Sprintf(format, args...)}}
}
