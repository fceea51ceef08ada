package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// streamSample is one stream read through a target.
type streamSample struct {
	// FirstToken runs from sending the request to the first content chunk.
	FirstToken time.Duration
	// Arrivals are when each read that carried content arrived, from the
	// request, and Chunks how many content chunks each carried.
	Arrivals []time.Duration
	Chunks   []int
}

var contentMark = []byte(`"delta":{"content"`)

// readStream sends a streamed chat completion and times its chunks.
func readStream(ctx context.Context, client *http.Client, url string) (streamSample, error) {
	var s streamSample
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := chatRequest(url, true).httpRequest(ctx)
	if err != nil {
		return s, err
	}
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return s, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	buf := make([]byte, 32<<10)
	done := false
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			at := time.Since(began)
			if k := bytes.Count(buf[:n], contentMark); k > 0 {
				if len(s.Arrivals) == 0 {
					s.FirstToken = at
				}
				s.Arrivals = append(s.Arrivals, at)
				s.Chunks = append(s.Chunks, k)
			}
			done = done || bytes.Contains(buf[:n], []byte("[DONE]"))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, err
		}
	}
	if !done || len(s.Arrivals) == 0 {
		return s, fmt.Errorf("stream ended without content or [DONE]")
	}
	return s, nil
}

// flushedApart reports whether every content chunk of s arrived on its
// own (one per read) and no sooner than half the upstream's interval after
// the one before: the target passed each chunk on as the upstream sent it,
// rather than collecting them.
func flushedApart(s streamSample, chunks int, interval time.Duration) bool {
	if len(s.Arrivals) != chunks {
		return false
	}
	for i, k := range s.Chunks {
		if k != 1 {
			return false
		}
		if i > 0 && s.Arrivals[i]-s.Arrivals[i-1] < interval/2 {
			return false
		}
	}
	return true
}

// openStreams opens n streams through url, rate a second, each held open
// by the upstream once its first chunks are through. It returns when all
// have been started; wait waits for them to end (after the upstream's
// release) and says how many failed before their first chunk.
func openStreams(ctx context.Context, url string, n int, rate float64) (wait func() (failed int64, firstErr error)) {
	client := newClient(n)
	var wg sync.WaitGroup
	var failed atomic.Int64
	var errOnce sync.Once
	var first error
	fail := func(err error) {
		failed.Add(1)
		errOnce.Do(func() { first = err })
	}
	interval := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		next = next.Add(interval)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := chatRequest(url, true).httpRequest(ctx)
			if err != nil {
				fail(err)
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				fail(err)
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			switch {
			case err != nil:
				fail(err)
			case resp.StatusCode != http.StatusOK:
				fail(fmt.Errorf("status %d: %.200s", resp.StatusCode, b))
			case !bytes.Contains(b, []byte("[DONE]")):
				fail(fmt.Errorf("stream ended without [DONE] after %d bytes", len(b)))
			}
		}()
	}
	return func() (int64, error) {
		wg.Wait()
		client.CloseIdleConnections()
		return failed.Load(), first
	}
}
