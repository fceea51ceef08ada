package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/internal/poll"
	"github.com/switchover-gw/switchover/route"
)

// TestTranslatedBodyHoldsItsDecodingInBodyMemory: a call translated for
// an Anthropic member holds, while in flight, its body and what decoding
// it costs (route.Request.DecodeMemory) in Routes.MaxBodyMemory, and gives
// all of it back when it ends; a call passed through holds its body only.
func TestTranslatedBodyHoldsItsDecodingInBodyMemory(t *testing.T) {
	g := newGate()
	up := httptest.NewServer(g)
	t.Cleanup(up.Close)
	base, _ := url.Parse(up.URL + "/v1")
	member := func(name string, p route.Provider) *route.Member {
		return &route.Member{Priority: 1, Backend: &route.Backend{Name: name, Provider: p,
			Breaker: breaker.New(name, breaker.Settings{Failures: 100, Trip: time.Minute})}}
	}
	pools := map[string]*route.Pool{
		"claude":    {Name: "claude", Members: []*route.Member{member("an", &route.Anthropic{BaseURL: base})}},
		"chat-prod": {Name: "chat-prod", Members: []*route.Member{member("oa", &route.OpenAI{BaseURL: base})}},
	}
	h := &Handler{Logger: discardLogger()}
	h.Update(&Routes{Pools: pools, MaxBody: 1 << 20, MaxBodyMemory: 1 << 30})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		pool       string
		translated bool
	}{{"claude", true}, {"chat-prod", false}} {
		t.Run(tc.pool, func(t *testing.T) {
			body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hello"}]}`, tc.pool)
			req, _ := route.NewRequest(route.ChatCompletions, []byte(body), nil)
			want := int64(len(body))
			if tc.translated {
				want += req.DecodeMemory()
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			<-g.arrived
			if got := h.bodies.inUse(); got != want {
				t.Errorf("in flight, body memory holds %d bytes, want %d", got, want)
			}
			g.release <- struct{}{}
			<-done
			poll.Until(t, 10*time.Second, func() bool { return h.bodies.inUse() == 0 },
				func() string { return fmt.Sprintf("%d bytes still held after the call", h.bodies.inUse()) })
		})
	}
}
