package gateway_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/internal/upstreamtest"
)

// Regression (issue 23, Low): 3,000 wrong gateway keys in 49s met no
// slowdown. After 20 failures an address gets 429 with Retry-After
// before its keys are checked, one more check a second; a key that
// passed from that address is never slowed. Both with keys in the file
// and with a key store.
func TestWrongKeysFromOneAddressAreThrottled(t *testing.T) {
	for _, store := range []bool{false, true} {
		t.Run(fmt.Sprintf("store=%v", store), func(t *testing.T) {
			steps := []upstreamtest.Step{answer("weu"), answer("weu"), answer("weu")}
			h := start(t, steps, nil, "", func(y string) string {
				if store {
					y += fmt.Sprintf("store: {sqlite: %q}\n", filepath.Join(t.TempDir(), "switchover.db"))
				}
				return y
			})
			good := []string{"Content-Type", "application/json", "Authorization", "Bearer " + appKey}
			if code, _, body := call(t, h.url, "POST", "/v1/chat/completions", chat, good...); code != 200 {
				t.Fatalf("the valid key: %d %s", code, body)
			}
			for i := range 20 {
				code, _, body := call(t, h.url, "POST", "/v1/chat/completions", chat,
					"Content-Type", "application/json", "Authorization", fmt.Sprintf("Bearer wrong-key-%04d-0123456789abcdef", i))
				if code != 401 {
					t.Fatalf("wrong key %d: %d %s", i, code, body)
				}
			}
			code, hdr, body := call(t, h.url, "POST", "/v1/chat/completions", chat,
				"Content-Type", "application/json", "Authorization", "Bearer wrong-key-9999-0123456789abcdef")
			if code != 429 || hdr.Get("Retry-After") != "1" || !strings.Contains(body, `"code":"too_many_failed_key_checks"`) {
				t.Fatalf("the 21st wrong key: %d %q %s", code, hdr.Get("Retry-After"), body)
			}
			code, hdr, body = call(t, h.url, "POST", "/v1/messages", `{"model":"chat-prod","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
				"Content-Type", "application/json", "X-Api-Key", "wrong-key-anthropic-0123456789abcdef", "Anthropic-Version", "2023-06-01")
			if code != 429 || hdr.Get("Retry-After") == "" || !strings.Contains(body, `"rate_limit_error"`) {
				t.Fatalf("a wrong key on /v1/messages: %d %s", code, body)
			}
			if code, _, body := call(t, h.url, "POST", "/v1/chat/completions", chat, good...); code != 200 {
				t.Fatalf("the valid key from the throttled address: %d %s", code, body)
			}
			h.clock.Advance(time.Second)
			if code, _, body := call(t, h.url, "POST", "/v1/chat/completions", chat,
				"Content-Type", "application/json", "Authorization", "Bearer wrong-key-8888-0123456789abcdef"); code != 401 {
				t.Fatalf("a wrong key a second later: %d %s", code, body)
			}
			if code, _, _ := call(t, h.url, "POST", "/v1/chat/completions", chat,
				"Content-Type", "application/json", "Authorization", "Bearer wrong-key-7777-0123456789abcdef"); code != 429 {
				t.Fatalf("a second wrong key a second later: %d, want 429", code)
			}
			if code, _, body := call(t, h.url, "POST", "/v1/chat/completions", chat, "Content-Type", "application/json"); code != 401 {
				t.Fatalf("no key at all: %d %s (a missing key is not throttled)", code, body)
			}
		})
	}

}
