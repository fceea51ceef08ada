package route

import (
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/translate"
)

func TestForwardHeaders(t *testing.T) {
	tests := []struct {
		name   string
		format translate.Format
		key    string
		want   bool
	}{
		{"request id", translate.OpenAI, "X-Request-Id", true},
		{"traceparent", translate.Gemini, "Traceparent", true},
		{"anthropic-beta to anthropic", translate.Anthropic, "Anthropic-Beta", true},
		{"anthropic-beta to openai", translate.OpenAI, "Anthropic-Beta", false},
		{"anthropic-version", translate.Anthropic, "Anthropic-Version", false},
		{"organization", translate.OpenAI, "Openai-Organization", false},
		{"project", translate.OpenAI, "Openai-Project", false},
		{"cookie", translate.OpenAI, "Cookie", false},
		{"forwarded for", translate.OpenAI, "X-Forwarded-For", false},
		{"authorization", translate.OpenAI, "Authorization", false},
		{"sdk telemetry", translate.OpenAI, "X-Stainless-Os", false},
		{"baggage", translate.OpenAI, "Baggage", false},
		{"junk", translate.Anthropic, "X-Junk", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := forwardHeaders(tc.format, http.Header{tc.key: {"v"}})
			if (len(got[tc.key]) > 0) != tc.want {
				t.Fatalf("forwardHeaders(%s, %s) = %v, want forwarded %v", tc.format, tc.key, got, tc.want)
			}
		})
	}
}

func TestForwardHeadersBounded(t *testing.T) {
	many := make([]string, 1000)
	for i := range many {
		many[i] = "prompt-caching"
	}
	got := forwardHeaders(translate.Anthropic, http.Header{"Anthropic-Beta": many, "Traceparent": {strings.Repeat("x", 100<<10)}})
	if n := len(got["Anthropic-Beta"]); n > maxForwardedValues {
		t.Errorf("%d anthropic-beta values forwarded", n)
	}
	size := 0
	for k, vv := range got {
		for _, v := range vv {
			size += len(k) + len(v)
		}
	}
	if size > maxForwardedBytes {
		t.Errorf("%d bytes of headers forwarded", size)
	}
}

func TestRelayHeader(t *testing.T) {
	b := &Backend{Name: "b", Provider: &OpenAI{APIKey: "sk-secret-key-1234"}}
	upstream := func() http.Header {
		return http.Header{
			"Set-Cookie":                     {"s=1"},
			"Openai-Organization":            {"org-operator"},
			"Location":                       {"http://10.0.0.1/"},
			"X-Debug-Key":                    {"sk-secret-key-1234"},
			"X-Ratelimit-Remaining-Requests": {"59"},
			"Retry-After":                    {"3"},
			"X-Request-Id":                   {"id sk-secret-key-1234"},
			"Openai-Processing-Ms":           {"12"},
			"Content-Type":                   {"application/json"},
		}
	}
	tests := []struct {
		name, key, want string
	}{
		{"set-cookie dropped", "Set-Cookie", ""},
		{"organization dropped", "Openai-Organization", ""},
		{"location dropped", "Location", ""},
		{"unknown dropped", "X-Debug-Key", ""},
		{"rate limit kept", "X-Ratelimit-Remaining-Requests", "59"},
		{"retry-after kept", "Retry-After", "3"},
		{"request id kept, key redacted", "X-Request-Id", "id [redacted]"},
		{"processing time kept", "Openai-Processing-Ms", "12"},
		{"content type kept", "Content-Type", "application/json"},
	}
	// The served response's header is filtered in place (relayHeaderInPlace),
	// a failure's copied (relayHeader): the same headers either way.
	ways := []struct {
		name  string
		relay func(http.Header) http.Header
	}{
		{"copied", b.relayHeader},
		{"in place", func(h http.Header) http.Header {
			hb := b.relayHeaderInPlace(h, make([]string, 0, 2))
			hb.set(HeaderBackend, "b")
			hb.set(HeaderAttempts, "1")
			return hb.h
		}},
	}
	for _, way := range ways {
		got := way.relay(upstream())
		for _, tc := range tests {
			t.Run(way.name+"/"+tc.name, func(t *testing.T) {
				if v := got.Get(tc.key); v != tc.want {
					t.Fatalf("%s = %q, want %q", tc.key, v, tc.want)
				}
			})
		}
		if way.name == "in place" && (len(got) != 7 || got.Get(HeaderBackend) != "b" || got.Get(HeaderAttempts) != "1") {
			t.Errorf("in place: %v, want the 5 relayed headers and the 2 set", got)
		}
	}
}

// TestForwardHeadersLeaveTheCallersAlone: the forwarded values are the
// caller's own slices, capped, so that adding to them copies instead of
// writing into the caller's.
func TestForwardHeadersLeaveTheCallersAlone(t *testing.T) {
	ids := make([]string, 1, 4)
	ids[0] = "req-1"
	src := http.Header{"X-Request-Id": ids, "Cookie": {"c=1"}}
	got := forwardHeaders(translate.OpenAI, src)
	if len(got) != 1 || len(got["X-Request-Id"]) != 1 || got["X-Request-Id"][0] != "req-1" {
		t.Fatalf("forwardHeaders = %v, want X-Request-Id alone", got)
	}
	got["X-Request-Id"] = append(got["X-Request-Id"], "added")
	if ids[:2][1] != "" || len(src["X-Request-Id"]) != 1 {
		t.Fatalf("appending to the forwarded header wrote %q into the caller's", ids[:2][1])
	}
}

// TestRemoveHopHeaders: hop-by-hop headers, and those Connection names,
// are not passed on; the rest are.
func TestRemoveHopHeaders(t *testing.T) {
	h := http.Header{
		"Connection":        {"close, X-Hop"},
		"X-Hop":             {"1"},
		"Keep-Alive":        {"timeout=5"},
		"Transfer-Encoding": {"chunked"},
		"Upgrade":           {"websocket"},
		"Content-Type":      {"application/json"},
		"X-Request-Id":      {"req-1"},
	}
	RemoveHopHeaders(h)
	want := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req-1"}}
	if len(h) != len(want) || h.Get("Content-Type") != "application/json" || h.Get("X-Request-Id") != "req-1" {
		t.Errorf("after RemoveHopHeaders: %v, want %v", h, want)
	}
}

// TestForwardedHeadersStraightFromTheCaller: this package's providers
// copy the caller's forwarded headers straight into the upstream request
// (Outgoing.fwd) instead of through forwardHeaders' map; the request
// must carry what it carried through the map, for each format, with the
// caps kept.
func TestForwardedHeadersStraightFromTheCaller(t *testing.T) {
	caller := http.Header{
		"X-Request-Id": {"req-1"}, "Traceparent": {"00-abc-def-01"}, "Anthropic-Beta": {"b1", "b2"},
		"Authorization": {"Bearer gw-key"}, "Cookie": {"c=1"}, "User-Agent": {"sdk/1.0"}, "Api-Key": {"k"},
	}
	huge := http.Header{"X-Request-Id": {"req-2"}, "Traceparent": {strings.Repeat("x", 100<<10)}}
	providers := []Provider{
		&OpenAI{BaseURL: parseURL(t, "https://api.example.com/v1"), APIKey: "sk-test"},
		&Azure{Endpoint: parseURL(t, "https://r.example.com"), APIKey: "az-test", APIVersion: "2024-10-21"},
		&Anthropic{BaseURL: parseURL(t, "https://anthropic.example.com"), APIKey: "ant-test"},
	}
	for _, p := range providers {
		for _, h := range []http.Header{caller, huge} {
			r, err := NewRequest(ChatCompletions, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), h)
			if err != nil {
				t.Fatal(err)
			}
			o := new(Outgoing)
			if err := prepareInto(r, &Member{Backend: &Backend{Name: "b", Provider: p}, Deployment: "m"}, o); err != nil {
				t.Fatal(err)
			}
			if o.Header != nil || o.fwd == nil {
				t.Fatalf("%T: Header %v, fwd %v: want the caller's header passed on, no map", p, o.Header, o.fwd)
			}
			viaMap := *o
			viaMap.Header, viaMap.fwd = forwardHeaders(p.Format(), h), nil
			got, want := sent(t, p, o).Header, sent(t, p, &viaMap).Header
			if len(got["Traceparent"]) > 0 && len(got["Traceparent"][0]) > maxForwardedBytes {
				t.Errorf("%T: a Traceparent of %d bytes went upstream", p, len(got["Traceparent"][0]))
			}
			if h["Traceparent"][0] != caller["Traceparent"][0] {
				continue // past the cap, which headers go depends on the map's order, both ways
			}
			if len(got) != len(want) {
				t.Errorf("%T: %v, want %v", p, got, want)
			}
			for k, vv := range want {
				if strings.Join(got[k], ",") != strings.Join(vv, ",") {
					t.Errorf("%T: %s = %q, want %q", p, k, got[k], vv)
				}
			}
			for _, k := range []string{"Authorization", "Cookie", "User-Agent", "Api-Key"} {
				for _, v := range got[k] {
					if v == h.Get(k) {
						t.Errorf("%T: the caller's %s went upstream", p, k)
					}
				}
			}
		}
	}
}
