package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/internal/fakeclock"
)

func TestWebhookBodyAndSignature(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	clk := fakeclock.New()
	secret := "s3cret-key"
	wh := &Webhook{URL: rcv.URL + "/hook?token=abc", Secret: secret, Clock: clk,
		Headers: map[string]string{"Authorization": "Bearer xyz", "Content-Type": "text/plain"}}
	if err := wh.Send(context.Background(), sample()); err != nil {
		t.Fatal(err)
	}
	body, h, path := rcv.request(0)
	if path != "/hook?token=abc" {
		t.Errorf("path %q", path)
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if h.Get("Authorization") != "Bearer xyz" {
		t.Errorf("extra header missing")
	}
	// The shape: exactly these keys, with from/to arrays and at in UTC.
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"kind", "pool", "from", "to", "reason", "at", "text", "details"} {
		if _, ok := m[k]; !ok {
			t.Errorf("body lacks %q: %s", k, body)
		}
	}
	if len(m) != 8 {
		t.Errorf("body has %d keys: %s", len(m), body)
	}
	if m["kind"] != "failover" || m["pool"] != "chat-prod" || m["at"] != "2026-11-30T13:00:05Z" ||
		fmt.Sprint(m["from"]) != "[eastus]" || fmt.Sprint(m["to"]) != "[westeurope]" ||
		!strings.Contains(m["text"].(string), "eastus → westeurope") {
		t.Errorf("body %s", body)
	}
	// The signature, computed here independently.
	ts := h.Get("X-Switchover-Timestamp")
	if ts != fmt.Sprint(clk.Now().Unix()) {
		t.Errorf("timestamp %q", ts)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if got := h.Get("X-Switchover-Signature"); got != want {
		t.Errorf("signature %q, want %q", got, want)
	}
	if Sign(secret, ts, body) != want {
		t.Errorf("Sign disagrees")
	}
}

func TestWebhookUnsignedAndEmptySets(t *testing.T) {
	rcv := newReceiver(t, http.StatusNoContent)
	wh := &Webhook{URL: rcv.URL}
	n := Notification{Kind: KindAdmin, Pool: "p", At: t0}
	if err := wh.Send(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	body, h, _ := rcv.request(0)
	if h.Get(SignatureHeader) != "" || h.Get(TimestampHeader) != "" {
		t.Errorf("unsigned webhook sent signature headers")
	}
	if !strings.Contains(string(body), `"from":[]`) || !strings.Contains(string(body), `"to":[]`) ||
		!strings.Contains(string(body), `"details":{}`) {
		t.Errorf("body %s", body)
	}
	var back Notification
	if err := json.Unmarshal(body, &back); err != nil || back.Kind != KindAdmin || !back.At.Equal(t0) {
		t.Errorf("round trip %+v %v", back, err)
	}
}
