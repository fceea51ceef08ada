package keytext

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
)

func TestRequestLogRoundTrips(t *testing.T) {
	on, off := true, false
	for _, l := range []*ledger.KeyRequestLog{
		{Bodies: &on},
		{Bodies: &off},
		{MaxBodyBytes: 64 << 10},
		{Bodies: &on, MaxBodyBytes: 1000},
	} {
		text := RequestLog(l)
		body, err := ParseRequestLog(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		// Through the admin API's JSON, as the gateway reads it.
		b, _ := json.Marshal(body)
		var back ledger.KeyRequestLog
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&back, l) {
			t.Errorf("%+v written %q reads back as %+v", *l, text, back)
		}
	}
	if RequestLog(nil) != "" {
		t.Error("no settings of the key's own should write as nothing")
	}
	if l, err := ParseRequestLog(" None "); err != nil || l != nil {
		t.Errorf("none: %v, %v; want nil (the pools')", l, err)
	}
}

// Regression: RequestLog writes a key without settings of its own as "",
// which ParseRequestLog refused ("write bodies=on,..."), where the other
// readers of the package and cachepolicy.Parse read "" as none.
func TestParseRequestLogReadsEmptyAsNone(t *testing.T) {
	for _, in := range []string{RequestLog(nil), "", "  "} {
		if l, err := ParseRequestLog(in); err != nil || l != nil {
			t.Errorf("%q: %v, %v; want nil (the pools')", in, l, err)
		}
	}
}

func TestParseRequestLogRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"bodies":                     "write bodies=on",
		"bodies=maybe":               "not on or off",
		"bodies=on,bodies=off":       "given twice",
		"max_body_bytes=lots":        "not a size",
		"keep=all":                   "unknown setting",
		"bodies=on,,max_body_bytes=": "write bodies=on",
	} {
		if _, err := ParseRequestLog(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", in, err, want)
		}
	}
}

func TestPoolBudgetsRoundTrip(t *testing.T) {
	bs := []ledger.ScopedBudget{{Pool: "o3", Budget: 5, Period: "day"}, {Pool: "gpt4o", Budget: 10.5, Period: "1h"}}
	text := PoolBudgets(bs)
	if text != "o3=5/day,gpt4o=10.5/1h" {
		t.Errorf("written as %q", text)
	}
	got, err := ParsePoolBudgets(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{{"pool": "o3", "budget": "5/day"}, {"pool": "gpt4o", "budget": "10.5/1h"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back as %v, want %v", got, want)
	}
	for _, none := range []string{"", " none "} {
		if got, err := ParsePoolBudgets(none); err != nil || got == nil || len(got) != 0 {
			t.Errorf("%q: %v, %v; want an empty list (removes them)", none, got, err)
		}
	}
	for _, bad := range []string{"o3", "=5/day", "o3=lots"} {
		if _, err := ParsePoolBudgets(bad); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
}

func TestMetadataRoundTrips(t *testing.T) {
	m := map[string]string{"owner": "search team", "cost-centre": "a=b, c", "ticket": ""}
	text := Metadata(m)
	if text != "cost-centre=a=b, c\nowner=search team\nticket=\n" {
		t.Errorf("written as %q", text)
	}
	got, err := ParseMetadata(strings.ReplaceAll(text, "\n", "\r\n") + "\n  \n")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, m) {
		t.Errorf("read back as %v, want %v", got, m)
	}
	if got, err := ParseMetadata(" \n"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("no lines: %v, %v; want an empty map (removes it)", got, err)
	}
	for in, want := range map[string]string{
		"owner":       "not NAME=VALUE",
		"=x":          "not NAME=VALUE",
		"a=1\na=2":    "given twice",
		"bad name!=x": "metadata name",
		"owner=\x01":  "control characters",
	} {
		if _, err := ParseMetadata(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", in, err, want)
		}
	}
}

func TestList(t *testing.T) {
	for in, want := range map[string][]string{
		" chat, embed,,": {"chat", "embed"},
		"":               {},
		" , ":            {},
	} {
		if got := List(in); got == nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %#v, want %#v (never nil: [] removes)", in, got, want)
		}
	}
}
