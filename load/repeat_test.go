package load

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestPromptOfSpreadsRepeatsEvenly(t *testing.T) {
	for _, share := range []float64{0.1, 0.3, 0.5, 0.9} {
		repeats, distinct := 0, 0
		for n := range 1000 {
			p := promptOf(n, share)
			switch {
			case p == distinct: // a new prompt, numbered in order
				distinct++
			case p >= 0 && p < distinct:
				repeats++
			default:
				t.Fatalf("share %g: request %d sends prompt %d with %d distinct before it", share, n, p, distinct)
			}
			// Of the first n+1 requests exactly floor((n+1)·share) repeat.
			if want := int(float64(n+1) * share); repeats != want {
				t.Fatalf("share %g: %d repeats in the first %d requests, want %d", share, repeats, n+1, want)
			}
		}
		if promptOf(0, share) != 0 {
			t.Errorf("share %g: the first request repeats", share)
		}
	}
	for n := range 5 {
		if p := promptOf(n, 0); p != n {
			t.Errorf("share 0: request %d sends prompt %d", n, p)
		}
	}
}

func TestNthBodyRepeatsEarlierBodiesExactly(t *testing.T) {
	r := Request{Model: "m", MaxTokens: 5, Repeat: 0.3}
	seen := map[string]bool{}
	repeats := 0
	for n := range 100 {
		b := r.NthBody(n)
		var body struct {
			Model    string
			Messages []struct{ Content string }
		}
		if err := json.Unmarshal(b, &body); err != nil || body.Model != "m" || len(body.Messages) != 1 {
			t.Fatalf("request %d: body %s (%v)", n, b, err)
		}
		if seen[string(b)] {
			repeats++
		}
		seen[string(b)] = true
	}
	if repeats != 30 || len(seen) != 70 {
		t.Fatalf("%d repeats and %d distinct bodies, want 30 and 70", repeats, len(seen))
	}
	if !bytes.Equal(r.NthBody(17), r.NthBody(17)) {
		t.Error("the same request number gave two bodies")
	}
	plain := Request{Model: "m"}
	if !bytes.Equal(plain.NthBody(3), plain.Body()) {
		t.Error("without Repeat every request should send Body()")
	}
}

func TestHTTPCallerSendsRepeatsAndCountsCacheAnswers(t *testing.T) {
	// A stand-in for a caching gateway: a body seen before is a hit.
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[string(b)]++
		result := "miss"
		if seen[string(b)] > 1 {
			result = "hit"
		}
		mu.Unlock()
		w.Header().Set("X-Switchover-Cache", result)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	c := &HTTPCaller{URL: srv.URL, Client: srv.Client(), Request: Request{Repeat: 0.25}}
	res, err := Run(t.Context(), Options{Concurrency: 3, Total: 40}, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 30 || res.Summary.Succeeded != 40 {
		t.Fatalf("%d distinct bodies of %d answered requests, want 30 of 40", len(seen), res.Summary.Succeeded)
	}
	if res.Summary.FromCache != 10 {
		t.Fatalf("%d answers from the cache, want the 10 repeats", res.Summary.FromCache)
	}
	var out strings.Builder
	WriteSummary(&out, res.Summary, false)
	if !strings.Contains(out.String(), "from cache   10 answered with no model call") {
		t.Errorf("summary without the answers from the cache:\n%s", out.String())
	}
	out.Reset()
	WriteSummary(&out, Summary{Requests: 1, Succeeded: 1}, false)
	if strings.Contains(out.String(), "from cache") {
		t.Errorf("a from-cache line with no answer from a cache:\n%s", out.String())
	}
}

// TestSummarizeCountsNoFailoverForCacheAnswers: an answer from the cache
// replays the x-switchover-failover of the answer it repeats; it counts
// as from the cache, not as a failover.
func TestSummarizeCountsNoFailoverForCacheAnswers(t *testing.T) {
	s := Summarize([]Sample{
		{OK: true, Failover: true, Cache: "miss"},
		{OK: true, Failover: true, Cache: "hit"},
		{OK: true, Failover: true, Cache: "coalesced"},
		{OK: true, Cache: "bypass"},
		{OK: true},
	}, 0)
	if s.Failovers != 1 || s.FromCache != 2 {
		t.Fatalf("failovers %d, from cache %d; want 1 and 2", s.Failovers, s.FromCache)
	}
}
