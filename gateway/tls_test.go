package gateway_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/internal/testpki"
	"github.com/switchover-gw/switchover/internal/upstreamtest"
	"github.com/switchover-gw/switchover/sim"
)

const (
	tlsAppKey   = "app-key-tls-0123456789abcdef0123456789"
	tlsAdminKey = "admin-key-tls-0123456789"
)

// tlsEnv is a gateway serving TLS with a certificate of a CA made for
// the test, in front of simulated OpenAI and Anthropic deployments:
// pool chat-prod (OpenAI, which also serves Realtime) and pool claude
// (Anthropic, alias claude-sonnet-4-5).
type tlsEnv struct {
	ca                *testpki.CA
	dir               string
	certFile, keyFile string
	clock             *fakeclock.Clock
	gw                *gateway.Gateway
	logs              *syncBuffer
	api, admin        string // host:port
}

// startTLS starts the gateway with server's and admin's YAML (flow
// mappings' contents; "" for none): $CERT, $KEY and $CA name the
// certificate, key and CA files.
func startTLS(t *testing.T, server, admin string) *tlsEnv {
	t.Helper()
	e := &tlsEnv{ca: testpki.NewCA(t, "switchover test CA"), dir: t.TempDir(), clock: fakeclock.New(), logs: &syncBuffer{}}
	certPEM, keyPEM := e.ca.Server(t, "gateway one", "127.0.0.1", "localhost")
	e.certFile = testpki.Write(t, e.dir, "tls.crt", certPEM)
	e.keyFile = testpki.Write(t, e.dir, "tls.key", keyPEM)
	caFile := testpki.Write(t, e.dir, "ca.crt", e.ca.PEM)
	files := strings.NewReplacer("$CERT", e.certFile, "$KEY", e.keyFile, "$CA", caFile)

	deps := []sim.Deployment{simProviders[1], simProviders[2]} // openai, claude
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: deps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var y strings.Builder
	fmt.Fprintf(&y, "listen: 127.0.0.1:0\nlog: {format: json, level: info}\nserver: {drain_delay: 0s, %s}\nkeys:\n  - {name: app, key: %s}\n", files.Replace(server), tlsAppKey)
	if admin != "" {
		fmt.Fprintf(&y, "admin: {listen: 127.0.0.1:0, key: %s, %s}\n", tlsAdminKey, files.Replace(admin))
	}
	y.WriteString("backends:\n")
	for i, ep := range s.Deployments() {
		y.WriteString(backendYAML(deps[i], ep.URL))
	}
	y.WriteString("pools:\n  - name: chat-prod\n    members: [{backend: openai, model: gpt-4o-2024-08-06}]\n" +
		"  - name: claude\n    aliases: [claude-sonnet-4-5]\n    members: [{backend: claude, model: claude-sonnet-4-5}]\n")
	cfg, err := config.Parse("tls.yaml", []byte(y.String()), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%v\n%s", err, y.String())
	}
	e.gw, err = gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(e.logs, "json", "info"), Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	ln, adminLn, err := gateway.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.api = ln.Addr().String()
	if adminLn != nil {
		e.admin = adminLn.Addr().String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.gw.Serve(ctx, ln, adminLn) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if strings.Contains(e.logs.String(), tlsAppKey) {
			t.Error("the gateway key is in the log")
		}
	})
	return e
}

// client is an HTTP client trusting the test CA, offering HTTP/2 and
// HTTP/1.1, showing cert (if not nil).
func (e *tlsEnv) client(t *testing.T, cert *tls.Certificate) *http.Client {
	tc := &tls.Config{RootCAs: e.ca.Pool()}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func (e *tlsEnv) openai(t *testing.T) openai.Client {
	return openai.NewClient(option.WithBaseURL("https://"+e.api+"/v1/"), option.WithAPIKey(tlsAppKey),
		option.WithMaxRetries(0), option.WithHTTPClient(e.client(t, nil)))
}

func (e *tlsEnv) anthropic(t *testing.T) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL("https://"+e.api), aoption.WithAPIKey(tlsAppKey),
		aoption.WithMaxRetries(0), aoption.WithHTTPClient(e.client(t, nil)))
}

var chatParams = openai.ChatCompletionNewParams{
	Model:    "chat-prod",
	Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")},
}

// TestOfficialSDKsOverTLS: the official OpenAI and Anthropic Go SDKs,
// trusting the test CA, call the gateway over https: a chat and a
// streamed chat each, over HTTP/2 (negotiated by ALPN).
func TestOfficialSDKsOverTLS(t *testing.T) {
	e := startTLS(t, "tls: {cert_file: $CERT, key_file: $KEY}", "")
	ctx := t.Context()

	oc := e.openai(t)
	var raw *http.Response
	resp, err := oc.Chat.Completions.New(ctx, chatParams, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) == 0 || resp.Choices[0].Message.Content == "" {
		t.Fatalf("chat %+v", resp)
	}
	if raw.ProtoMajor != 2 || raw.TLS == nil || raw.TLS.NegotiatedProtocol != "h2" {
		t.Fatalf("chat answered over %s (ALPN %q), want HTTP/2", raw.Proto, raw.TLS.NegotiatedProtocol)
	}
	stream := oc.Chat.Completions.NewStreaming(ctx, chatParams, option.WithResponseInto(&raw))
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 2 || acc.Choices[0].Message.Content == "" || raw.ProtoMajor != 2 {
		t.Fatalf("stream: %d chunks, content %q, over %s", chunks, acc.Choices[0].Message.Content, raw.Proto)
	}

	ac := e.anthropic(t)
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 16,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}
	msg, err := ac.Messages.New(ctx, params, aoption.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) == 0 || msg.Content[0].Text == "" || raw.ProtoMajor != 2 {
		t.Fatalf("message %+v over %s", msg, raw.Proto)
	}
	ms := ac.Messages.NewStreaming(ctx, params, aoption.WithResponseInto(&raw))
	var am anthropic.Message
	for ms.Next() {
		if err := am.Accumulate(ms.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms.Err(); err != nil {
		t.Fatal(err)
	}
	if len(am.Content) == 0 || am.Content[0].Text == "" || am.StopReason == "" || raw.ProtoMajor != 2 {
		t.Fatalf("streamed message %+v over %s", am, raw.Proto)
	}
}

// TestRealtimeOverWSS: a Realtime session over wss:// (as the OpenAI
// SDKs' Realtime clients dial) is an HTTP/1.1 upgrade on the TLS
// listener that offers h2: a client offering http/1.1 only gets its
// session. A request for it over HTTP/2 (a client that negotiated h2
// for it) is answered 426 websocket_required, as the gateway does not
// take WebSockets over HTTP/2 (RFC 8441).
func TestRealtimeOverWSS(t *testing.T) {
	e := startTLS(t, "tls: {cert_file: $CERT, key_file: $KEY}", "")
	ctx := t.Context()
	c, resp, err := websocket.Dial(ctx, "wss://"+e.api+"/v1/realtime?model=chat-prod", &websocket.DialOptions{
		HTTPClient: e.client(t, nil),
		HTTPHeader: http.Header{"Authorization": {"Bearer " + tlsAppKey}},
	})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	defer c.CloseNow()
	upstreamtest.RealtimeTurn(t, ctx, c)
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatalf("close: %v", err)
	}

	// The same path over HTTP/2: no upgrade is possible there.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+e.api+"/v1/realtime?model=chat-prod", nil)
	req.Header.Set("Authorization", "Bearer "+tlsAppKey)
	hr, err := e.client(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(hr.Body)
	hr.Body.Close()
	if hr.ProtoMajor != 2 || hr.StatusCode != http.StatusUpgradeRequired || !strings.Contains(string(body), "websocket_required") {
		t.Fatalf("over %s: %d %s, want 426 websocket_required over HTTP/2", hr.Proto, hr.StatusCode, body)
	}
}

// TestH2C: with server.h2c, a client speaking cleartext HTTP/2 (prior
// knowledge, as a proxy's h2c upstream does) is served over HTTP/2, and
// HTTP/1.1 still is; without it, the same client gets no answer and
// HTTP/1.1 clients are served as ever.
func TestH2C(t *testing.T) {
	for _, tc := range []struct {
		name   string
		server string
		h2c    bool
	}{
		{"on", "h2c: true", true},
		{"off", "h2c: false", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startTLS(t, tc.server, "")
			h2c := new(http.Protocols)
			h2c.SetUnencryptedHTTP2(true)
			tr := &http.Transport{Protocols: h2c}
			t.Cleanup(tr.CloseIdleConnections)
			req, _ := http.NewRequest(http.MethodGet, "http://"+e.api+"/v1/models", nil)
			req.Header.Set("Authorization", "Bearer "+tlsAppKey)
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if tc.h2c {
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
					t.Fatalf("h2c: %d over %s, want 200 over HTTP/2", resp.StatusCode, resp.Proto)
				}
			} else if err == nil {
				resp.Body.Close()
				t.Fatalf("h2c off: %d over %s, want no HTTP/2 answer", resp.StatusCode, resp.Proto)
			}
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.ProtoMajor != 1 || resp.StatusCode != 200 {
				t.Fatalf("HTTP/1.1: %d over %s", resp.StatusCode, resp.Proto)
			}
		})
	}
}

// TestHTTP2OffServesHTTP1OverTLS: server.http2: false offers no h2.
func TestHTTP2OffServesHTTP1OverTLS(t *testing.T) {
	e := startTLS(t, "http2: false, tls: {cert_file: $CERT, key_file: $KEY}", "")
	req, _ := http.NewRequest(http.MethodGet, "https://"+e.api+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+tlsAppKey)
	resp, err := e.client(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 1 || resp.StatusCode != 200 {
		t.Fatalf("%d over %s, want 200 over HTTP/1.1", resp.StatusCode, resp.Proto)
	}
}

// TestMutualTLS: with client_ca_file, the API and the admin API refuse
// a client without a certificate, or with one of another CA, in the
// handshake, and serve one with a certificate of the CA; the keys still
// apply. With client_auth: request, a client without one is served too.
func TestMutualTLS(t *testing.T) {
	e := startTLS(t, "tls: {cert_file: $CERT, key_file: $KEY, client_ca_file: $CA}",
		"tls: {cert_file: $CERT, key_file: $KEY, client_ca_file: $CA}")
	good := e.ca.Client(t, "app")
	other := testpki.NewCA(t, "another CA").Client(t, "intruder")
	for _, l := range []struct{ name, addr, path, key string }{
		{"api", e.api, "/v1/models", tlsAppKey},
		{"admin", e.admin, "/admin/status", tlsAdminKey},
	} {
		for _, tc := range []struct {
			name   string
			cert   *tls.Certificate
			key    string
			status int // 0: refused in the handshake
		}{
			{"no certificate", nil, l.key, 0},
			{"certificate of another CA", &other, l.key, 0},
			{"certificate of the CA", &good, l.key, 200},
			{"certificate of the CA without a key", &good, "", 401},
		} {
			t.Run(l.name+"/"+tc.name, func(t *testing.T) {
				req, _ := http.NewRequest(http.MethodGet, "https://"+l.addr+l.path, nil)
				if tc.key != "" {
					req.Header.Set("Authorization", "Bearer "+tc.key)
				}
				resp, err := e.client(t, tc.cert).Do(req)
				if tc.status == 0 {
					if err == nil {
						resp.Body.Close()
						t.Fatalf("served %d, want the handshake refused", resp.StatusCode)
					}
					refusedInHandshake(t, l.addr, e.ca, tc.cert)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
				}
			})
		}
	}

	// Refused handshakes are any client's doing: logged at debug, not
	// as the server's errors.
	if strings.Contains(e.logs.String(), `"level":"ERROR"`) {
		t.Errorf("refused handshakes logged as errors:\n%s", e.logs.String())
	}

	t.Run("request", func(t *testing.T) {
		e := startTLS(t, "tls: {cert_file: $CERT, key_file: $KEY, client_ca_file: $CA, client_auth: request}", "")
		good := e.ca.Client(t, "app")
		for _, cert := range []*tls.Certificate{nil, &good} {
			req, _ := http.NewRequest(http.MethodGet, "https://"+e.api+"/v1/models", nil)
			req.Header.Set("Authorization", "Bearer "+tlsAppKey)
			resp, err := e.client(t, cert).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("certificate %v: status %d", cert != nil, resp.StatusCode)
			}
		}
		// A certificate shown must verify (Go's client would not show one
		// of a CA the server does not list; refusedInHandshake does).
		refusedInHandshake(t, e.api, e.ca, &other)
	})
}

// refusedInHandshake checks that a TLS client showing cert (nil: none)
// to addr is refused by the server's alert, before any HTTP: with TLS
// 1.3 the client learns it at its first read.
func refusedInHandshake(t *testing.T, addr string, ca *testpki.CA, cert *tls.Certificate) {
	t.Helper()
	tc := &tls.Config{RootCAs: ca.Pool(), NextProtos: []string{"http/1.1"}}
	if cert != nil { // shown whatever CAs the server lists
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	c, err := tls.Dial("tcp", addr, tc)
	if err == nil {
		defer c.Close()
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		_, err = c.Read(make([]byte, 1))
	}
	// The alert: certificate_required (TLS 1.3: none sent), or
	// unknown_ca or bad_certificate (another CA's certificate sent).
	if err == nil || !(strings.Contains(err.Error(), "certificate required") || strings.Contains(err.Error(), "unknown certificate authority") ||
		strings.Contains(err.Error(), "bad certificate")) {
		t.Fatalf("error %v, want the server's alert refusing the certificate", err)
	}
}

// served is the common name of the certificate a new connection to addr
// is served.
func (e *tlsEnv) served(t *testing.T, addr string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: e.ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestCertificateReloadedWithoutRestart: a new pair written to the files
// is served from the first handshake after reload.interval (5s, on the
// gateway's clock), without a restart; a pair that does not load leaves
// the one in force serving, logged once and counted; SIGHUP's reload
// reads the files at once.
func TestCertificateReloadedWithoutRestart(t *testing.T) {
	e := startTLS(t, "tls: {cert_file: $CERT, key_file: $KEY}", "tls: {cert_file: $CERT, key_file: $KEY}")
	if got := e.served(t, e.api); got != "gateway one" {
		t.Fatalf("served %q", got)
	}
	certPEM, keyPEM := e.ca.Server(t, "gateway two", "127.0.0.1")
	testpki.Write(t, e.dir, "tls.crt", certPEM)
	testpki.Write(t, e.dir, "tls.key", keyPEM)
	if got := e.served(t, e.api); got != "gateway one" {
		t.Fatalf("served %q before reload.interval passed", got)
	}
	e.clock.Advance(5 * time.Second)
	for _, addr := range []string{e.api, e.admin} {
		if got := e.served(t, addr); got != "gateway two" {
			t.Fatalf("%s served %q after the files changed, want gateway two", addr, got)
		}
	}
	if n := metric(t, e.gw, "switchover_tls_certificate_reloads_total", "listener", "api", "result", "ok"); n != 1 {
		t.Fatalf("%v reloads counted ok, want 1", n)
	}

	// A key of another certificate: the pair in force stays.
	_, otherKey := e.ca.Server(t, "gateway three", "127.0.0.1")
	testpki.Write(t, e.dir, "tls.key", otherKey)
	for range 3 {
		e.clock.Advance(5 * time.Second)
		if got := e.served(t, e.api); got != "gateway two" {
			t.Fatalf("served %q after a bad pair, want gateway two still", got)
		}
	}
	if n := strings.Count(e.logs.String(), `keeps serving","listener":"api"`); n != 1 {
		t.Fatalf("the bad pair logged %d times for the API, want once:\n%s", n, e.logs.String())
	}
	if n := metric(t, e.gw, "switchover_tls_certificate_reloads_total", "listener", "api", "result", "invalid"); n != 1 {
		t.Fatalf("%v reloads counted invalid, want 1", n)
	}
	if exp := metric(t, e.gw, "switchover_tls_certificate_expiry_timestamp_seconds", "listener", "api"); exp != float64(e.gw.TLSCertificate("api").Leaf.NotAfter.Unix()) {
		t.Fatalf("expiry %v, want the served certificate's", exp)
	}

	// SIGHUP's reload (ReloadFile) reads them at once.
	certPEM, keyPEM = e.ca.Server(t, "gateway four", "127.0.0.1")
	testpki.Write(t, e.dir, "tls.crt", certPEM)
	testpki.Write(t, e.dir, "tls.key", keyPEM)
	e.gw.ReloadFile() // no configuration file: only the certificates
	if got := e.served(t, e.api); got != "gateway four" {
		t.Fatalf("served %q after SIGHUP, want gateway four", got)
	}
}

// TestMetricsListenerOverTLS: server.metrics_tls serves metrics_listen
// over TLS, to scrapers with a certificate of its client CA only.
func TestMetricsListenerOverTLS(t *testing.T) {
	e := startTLS(t, "metrics_listen: 127.0.0.1:0, metrics_tls: {cert_file: $CERT, key_file: $KEY, client_ca_file: $CA}", "")
	poll.Until(t, 10*time.Second, func() bool { return e.gw.MetricsAddr() != nil }, func() string { return "the metrics listener" })
	addr := e.gw.MetricsAddr().String()
	scraper := e.ca.Client(t, "prometheus")
	resp, err := e.client(t, &scraper).Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `switchover_tls_certificate_expiry_timestamp_seconds{listener="metrics"}`) {
		t.Fatalf("status %d, body without the metrics listener's certificate expiry", resp.StatusCode)
	}
	refusedInHandshake(t, addr, e.ca, nil)
}

// Regression: behind server.tls the server's connection states name the
// *tls.Conn, not the connection the limits track, so a busy TLS
// connection stayed in the idle list (to be closed for the next one,
// mid-request). Busy TLS connections leave it; idle ones join it.
func TestTLSConnectionsTrackedByTheConnectionLimits(t *testing.T) {
	e := startTLS(t, "max_connections: 50, tls: {cert_file: $CERT, key_file: $KEY}", "")
	c, err := tls.Dial("tcp", e.api, &tls.Config{RootCAs: e.ca.Pool(), NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tlsAppKey+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("a busy connection: %v, %v", resp, err)
	}
	poll.Until(t, 10*time.Second, func() bool { return e.gw.IdleConnections() == 0 },
		func() string {
			return fmt.Sprintf("%d idle connections, want none: the busy TLS one is not idle", e.gw.IdleConnections())
		})
	req, _ := http.NewRequest(http.MethodGet, "https://"+e.api+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+tlsAppKey)
	resp, err := e.client(t, nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	poll.Until(t, 10*time.Second, func() bool { return e.gw.IdleConnections() == 1 },
		func() string {
			return fmt.Sprintf("%d idle connections, want the HTTP/2 one answered", e.gw.IdleConnections())
		})
}

// TestClientCAsReloadedWithoutRestart: a client_ca_file rewritten with
// another CA is trusted from the first handshake after reload.interval
// (on the gateway's clock), the old CA's clients refused from then on,
// without a restart; a file that does not load leaves the authorities in
// force, logged once; SIGHUP's reload reads it at once. (Regression: the
// file was read only at start.)
func TestClientCAsReloadedWithoutRestart(t *testing.T) {
	e := startTLS(t, "tls: {cert_file: $CERT, key_file: $KEY, client_ca_file: $CA}", "")
	caFile := filepath.Join(e.dir, "ca.crt")
	first := e.ca.Client(t, "app")
	second := testpki.NewCA(t, "second client CA")
	newcomer := second.Client(t, "newcomer")
	accepted := func(what string, cert *tls.Certificate) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "https://"+e.api+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+tlsAppKey)
		resp, err := e.client(t, cert).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", what, resp.StatusCode)
		}
	}
	accepted("the first CA's client", &first)
	refusedInHandshake(t, e.api, e.ca, &newcomer)

	testpki.Write(t, e.dir, "ca.crt", second.PEM)
	accepted("the first CA's client before reload.interval", &first)
	e.clock.Advance(5 * time.Second)
	accepted("the second CA's client after the file changed", &newcomer)
	refusedInHandshake(t, e.api, e.ca, &first)

	// Not a certificate: the authorities in force stay.
	if err := os.WriteFile(caFile, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.clock.Advance(5 * time.Second)
		accepted("the second CA's client after a bad file", &newcomer)
	}
	if n := strings.Count(e.logs.String(), `client_ca_file changed but does not load`); n != 1 {
		t.Fatalf("the bad file logged %d times, want once:\n%s", n, e.logs.String())
	}

	// SIGHUP's reload (ReloadFile) reads it at once.
	testpki.Write(t, e.dir, "ca.crt", e.ca.PEM)
	e.gw.ReloadFile() // no configuration file: only the TLS files
	accepted("the first CA's client after SIGHUP", &first)
	refusedInHandshake(t, e.api, e.ca, &newcomer)
}
