package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestComposeText(t *testing.T) {
	cases := []struct {
		name string
		n    Notification
		want []string
	}{
		{"multi-member sets", Notification{Kind: KindFailover, Pool: "p", From: []string{"e1", "e2"}, To: []string{"w1", "w2"}, At: t0},
			[]string{"e1 + e2 → w1 + w2", "Reason: not given.", "Check the quota and the model version of w1 + w2."}},
		{"admin", Notification{Kind: KindAdmin, Pool: "p", Reason: "breaker of w1 forced open by bob", At: t0.In(time.FixedZone("X", -7200))},
			[]string{"Operator action on pool p: breaker of w1 forced open by bob. At 2026-11-30T12:00:00Z."}},
		{"unknown kind", Notification{Kind: "custom", Pool: "p", Reason: "r", At: t0},
			[]string{"Notification (custom) on pool p: r."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := composeText(tc.n)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
		})
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		2 * time.Minute:  "2m",
		time.Hour:        "1h",
		90 * time.Second: "1m30s",
		time.Second:      "1s",
		90 * time.Minute: "1h30m",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestNotificationJSONRoundTrip(t *testing.T) {
	n := sample()
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	var back Notification
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Kind != n.Kind || back.Pool != n.Pool || back.Text != n.Text || !back.At.Equal(n.At) ||
		back.At.Location() != time.UTC || back.Details[DetailPrimary] != "eastus" {
		t.Fatalf("round trip %+v", back)
	}
}
