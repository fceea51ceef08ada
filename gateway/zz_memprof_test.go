//go:build !race

package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
)

func TestZZStreamHeap(t *testing.T) {
	runtime.MemProfileRate = 1
	const streams = 300
	done := make(chan struct{})
	url := streamGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	defer close(done)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams}}
	body := `{"model":"chat","stream":true,"messages":[{"role":"user","content":"hello"}]}`
	var resps []*http.Response
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range streams {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+streamKey)
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			bufio.NewReader(resp.Body).ReadString('\n')
			mu.Lock()
			resps = append(resps, resp)
			mu.Unlock()
		})
	}
	wg.Wait()
	runtime.GC()
	runtime.GC()
	f, _ := os.Create("/tmp/streamheap.out")
	pprof.Lookup("heap").WriteTo(f, 0)
	f.Close()
	f, _ = os.Create("/tmp/goroutines.txt")
	pprof.Lookup("goroutine").WriteTo(f, 1)
	f.Close()
	for _, r := range resps {
		r.Body.Close()
	}
}
