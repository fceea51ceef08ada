package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gateway"
	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/ledger"
	"github.com/switchover-gw/switchover/sim"
)

// startClockedStoreGateway serves a gateway with the store YAML store and
// an admin API, on clk, in front of one simulated deployment without
// quota; it returns the API's and the admin API's base URLs.
func startClockedStoreGateway(t *testing.T, clk *fakeclock.Clock, store string) (api, admin string, g *gateway.Gateway) {
	t.Helper()
	s, err := sim.Start(t.Context(), sim.Config{Seed: 1, Slice: 10 * time.Second, Deployments: []sim.Deployment{
		{Name: "uksouth", Flavour: sim.Azure, Deployment: "chat-prod"},
	}}, sim.WithClock(clk), sim.WithWaiter(instant{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	y := fmt.Sprintf("log: {level: error}\nserver: {drain_delay: 0s}\nadmin: {listen: 127.0.0.1:0, key: %s}\n%sbackends:\n  - {name: uksouth, type: azure, url: %q, probe: {disabled: true}}\npools:\n  - name: chat-prod\n    members: [{backend: uksouth}]\n",
		adminKey, store, s.Deployments()[0].URL)
	cfg, err := config.Parse("lapse.yaml", []byte(y), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	g, err = gateway.New(cfg, gateway.Options{Clock: clk, Logger: gateway.NewLogger(io.Discard, "text", "error")})
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	aln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, ln, aln) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String(), "http://" + aln.Addr().String(), g
}

// TestKeyExpiryAndRotationGraceLapse: through the gateway's listener, on
// the injected clock and on both stores, a key with an expiry answers
// 200 until it and 401 from it; a key rotated through the admin API with
// {"grace":"10m"} answers 200 to its old and new secrets until the grace
// ends, then 401 to the old one and 200 to the new. Issue 24.
func TestKeyExpiryAndRotationGraceLapse(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			clk := fakeclock.New()
			api, admin, g := startClockedStoreGateway(t, clk, st.yaml(t))
			store := g.Ledger()
			chat := func(secret string) int {
				t.Helper()
				code, _, _ := post(t, api, secret, chatBody)
				return code
			}

			exp, expSecret, err := ledger.NewKey(t.Context(), store, ledger.Key{Name: "temp", Expires: clk.Now().Add(time.Hour)}, clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			rot, oldSecret, err := ledger.NewKey(t.Context(), store, ledger.Key{Name: "rotated"}, clk.Now())
			if err != nil {
				t.Fatal(err)
			}
			g.KeysChanged()
			if c := chat(expSecret); c != http.StatusOK {
				t.Fatalf("key %s before its expiry: %d, want 200", exp.ID, c)
			}

			req, _ := http.NewRequest(http.MethodPost, admin+"/admin/keys/"+rot.ID+"/rotate", strings.NewReader(`{"grace":"10m"}`))
			req.Header.Set("Authorization", "Bearer "+adminKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := testClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var a struct {
				Key struct {
					PreviousUntil time.Time `json:"previous_until"`
				}
				Secret string
			}
			json.NewDecoder(resp.Body).Decode(&a)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || a.Secret == "" || !a.Key.PreviousUntil.Equal(clk.Now().Add(10*time.Minute)) {
				t.Fatalf("rotate with grace: %d %+v", resp.StatusCode, a)
			}
			for name, secret := range map[string]string{"old": oldSecret, "new": a.Secret} {
				if c := chat(secret); c != http.StatusOK {
					t.Errorf("the %s secret in the grace: %d, want 200", name, c)
				}
			}

			clk.Advance(10 * time.Minute)
			if c := chat(oldSecret); c != http.StatusUnauthorized {
				t.Errorf("the old secret once the grace ended: %d, want 401", c)
			}
			if c := chat(a.Secret); c != http.StatusOK {
				t.Errorf("the new secret once the grace ended: %d, want 200", c)
			}
			if c := chat(expSecret); c != http.StatusOK {
				t.Errorf("key %s 10 minutes before its expiry: %d, want 200", exp.ID, c)
			}
			clk.Advance(50 * time.Minute)
			if code, _, b := post(t, api, expSecret, chatBody); code != http.StatusUnauthorized || !strings.Contains(string(b), "expired") {
				t.Errorf("key %s at its expiry: %d %s, want 401 saying expired", exp.ID, code, b)
			}
		})
	}
}
