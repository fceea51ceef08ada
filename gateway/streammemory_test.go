//go:build !race

package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TestStreamStackStaysSmall opens streams through the whole gateway (the
// API guard, a key, the pipeline, usage and redaction on the stream) to a
// loopback upstream whose streams send one event and then wait, and
// checks what the open streams cost the process: no goroutine of the
// gateway's own beside net/http's server's two per stream, and stacks that stay
// small while the streams wait. A stream's request goroutine waits under
// net/http's frames and the gateway's; once ours grew past about 0.9 KiB
// the runtime kept its stack at 16 KiB rather than 8 (proxy/relay.go), 8
// KiB a stream more. Under -race stacks are larger: the test is skipped.
func TestStreamStackStaysSmall(t *testing.T) {
	const streams = 100
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
	defer client.CloseIdleConnections()
	body := `{"model":"chat","stream":true,"messages":[{"role":"user","content":"hello"}]}`

	open := func(ctx context.Context, n int) []*http.Response {
		resps := make([]*http.Response, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+streamKey)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d", resp.StatusCode)
				}
				if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
					t.Error(err)
				}
				resps[i] = resp
			})
		}
		wg.Wait()
		return resps
	}

	// A first stream, closed, so that what every stream shares is there
	// before the count.
	ctx, cancel := context.WithCancel(context.Background())
	for _, r := range open(ctx, 1) {
		if r != nil {
			r.Body.Close()
		}
	}
	cancel()
	client.CloseIdleConnections()
	goroutines, stack := settled()

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	resps := open(ctx, streams)
	defer func() {
		for _, r := range resps {
			if r != nil {
				r.Body.Close()
			}
		}
	}()
	if t.Failed() {
		return
	}
	g2, s2 := settled()
	perStream := float64(g2-goroutines) / streams
	stackPerStream := float64(s2-stack) / streams / 1024
	t.Logf("per open stream: %.2f goroutines, %.1f KiB of stack (the client's, gateway's and upstream's)", perStream, stackPerStream)
	// The client's transport 2 (readLoop, writeLoop), the gateway's
	// server 2 (the request, its background read), the upstream's server
	// 2; the gateway's upstream call has none (internal/h1 reads on the
	// request's goroutine).
	if perStream > 6.1 {
		t.Errorf("%.2f goroutines per open stream, want at most 6 (net/http's): a goroutine of the gateway's own per stream?", perStream)
	}
	if stackPerStream > maxStackPerStream {
		t.Errorf("%.1f KiB of stack per open stream, want at most %d: does a stream's request goroutine wait on a 16 KiB stack again? (frames under relay's copy)", stackPerStream, maxStackPerStream)
	}
}

// maxStackPerStream bounds the stack, in KiB, that an open stream costs
// the whole test process (see TestStreamStackStaysSmall): 29–31 with the
// request goroutine on 8 KiB (since the upstream call has no goroutines
// of its own: internal/h1; about 40 before), 8 more with it on 16.
const maxStackPerStream = 36

// settled returns the goroutine count and the stack in use once the
// collector has run (a collection shrinks the stacks of waiting
// goroutines).
func settled() (goroutines int, stack uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.StackInuse
}
