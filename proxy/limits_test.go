package proxy

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/route"
)

// gate is an upstream that answers each request once the test lets it,
// so that a test holds requests (and their bodies) in flight.
type gate struct {
	arrived chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{arrived: make(chan struct{}, 16), release: make(chan struct{})} }

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	g.arrived <- struct{}{}
	<-g.release
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"1","object":"chat.completion","choices":[]}`)
}

// limitedGateway serves h over loopback with one pool, chat-prod, whose
// one backend is upstream, and routes adjusted by limits. ended receives
// the raw query of each request whose handler has returned (a client can
// have its whole answer a moment before that), so a test can name a
// request "?held" and wait for its end.
func limitedGateway(t testing.TB, h *Handler, upstream http.Handler, limits ...func(*Routes)) (u string, ended <-chan string) {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	base, _ := url.Parse(up.URL + "/v1")
	b := &route.Backend{Name: "up", Provider: &route.OpenAI{BaseURL: base},
		Breaker: breaker.New("up", breaker.Settings{Failures: 100, Trip: time.Minute})}
	pool := &route.Pool{Name: "chat-prod", Members: []*route.Member{{Backend: b, Priority: 1}}}
	h.Logger = discardLogger()
	rt := &Routes{Pools: map[string]*route.Pool{"chat-prod": pool}, MaxBody: 1 << 20}
	for _, l := range limits {
		l(rt)
	}
	h.Update(rt)
	end := make(chan string, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		select {
		case end <- r.URL.RawQuery:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, end
}

// waitEnded waits until the handler of the request with raw query q has
// returned.
func waitEnded(t *testing.T, ended <-chan string, q string) {
	t.Helper()
	for {
		select {
		case got := <-ended:
			if got == q {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the handler of ?%s never returned", q)
		}
	}
}

// refusals records the codes of refused requests.
type refusals struct {
	mu    sync.Mutex
	codes []string
}

func (r *refusals) Refused(code string) {
	r.mu.Lock()
	r.codes = append(r.codes, code)
	r.mu.Unlock()
}

func (r *refusals) KeyRefused(key, code, limit string) {}

func (r *refusals) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.codes)
}

var _ Refusals = (*refusals)(nil)

const chatBody = `{"model":"chat-prod","messages":[{"role":"user","content":"hello"}]}`

type errorBody struct {
	Type  string `json:"type"` // Anthropic's "error"
	Error struct {
		Type string `json:"type"`
		Code string `json:"code"`
	} `json:"error"`
}

func send(t *testing.T, client *http.Client, method, u, body string, chunked bool) (*http.Response, errorBody) {
	t.Helper()
	var rd io.Reader = strings.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // hides the length: sent chunked
	}
	req, _ := http.NewRequest(method, u, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb errorBody
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &eb)
	return resp, eb
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
