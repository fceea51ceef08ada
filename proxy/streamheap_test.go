package proxy

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"net/http/httptest"
	"net/url"

	"github.com/switchover-gw/switchover/breaker"
	"github.com/switchover-gw/switchover/route"
)

// openStreams is an upstream whose streams send one event and then stay
// open until the test ends them.
type openStreams struct{ done chan struct{} }

func (o *openStreams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "data: {\"id\":\"1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
	w.(http.Flusher).Flush()
	select {
	case <-o.done:
	case <-r.Context().Done():
	}
}

// BenchmarkHeapPerOpenStream opens streams through the handler on
// loopback, each of which has sent its first event and stays open, and
// reports the live heap per open stream (B/stream). Each round starts a
// fresh upstream, gateway and client, so that no connection or buffer is
// left over from the one before. The figure covers the whole process:
// the client's and the upstream's connections as well as the gateway's
// two; compare it across changes, it is not asserted.
func BenchmarkHeapPerOpenStream(b *testing.B) {
	const streams = 1000
	body := `{"model":"chat-prod","stream":true,"messages":[{"role":"user","content":"hello"}]}`
	b.ReportAllocs()
	var total float64
	for range b.N {
		b.StopTimer()
		up := &openStreams{done: make(chan struct{})}
		upstream := httptest.NewServer(up)
		base, _ := url.Parse(upstream.URL + "/v1")
		tr := route.NewTransport(route.TransportSettings{})
		be := &route.Backend{Name: "up", Provider: &route.OpenAI{BaseURL: base}, Transport: tr,
			Breaker: breaker.New("up", breaker.Settings{Failures: 100, Trip: time.Minute})}
		h := &Handler{Logger: discardLogger()}
		h.Update(&Routes{Pools: map[string]*route.Pool{"chat-prod": {Name: "chat-prod", Members: []*route.Member{{Backend: be, Priority: 1}}}}})
		gw := httptest.NewServer(h)
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		before := liveHeap()
		b.StartTimer()

		ctx, cancel := context.WithCancel(context.Background())
		var opened sync.WaitGroup
		resps := make([]*http.Response, streams)
		for i := range streams {
			opened.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.URL+"/v1/chat/completions", strings.NewReader(body))
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
					b.Error(err)
				}
				resps[i] = resp
			})
		}
		opened.Wait()
		b.StopTimer()
		total += float64(liveHeap()-before) / streams
		cancel()
		for _, r := range resps {
			if r != nil {
				r.Body.Close()
			}
		}
		close(up.done)
		gw.Close()
		upstream.Close()
		tr.CloseIdleConnections()
		b.StartTimer()
	}
	b.ReportMetric(total/float64(b.N), "B/stream")
}

// liveHeap is the heap in use once garbage, and sync.Pool contents (two
// collections), are gone.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
