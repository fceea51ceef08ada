package cachepolicy

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func on(b bool) *bool { return &b }

// TestParseAndParseJSONAgree: the command line's form and the admin API's
// read the same policies, and write them back to the same.
func TestParseAndParseJSONAgree(t *testing.T) {
	tests := []struct {
		name, cli, json string
		want            *Policy
	}{
		{"none", "none", `null`, nil},
		{"none as a string", "", `"none"`, nil},
		{"everything", "ttl=10m,coalesce=on,max_wait=5s,max_entry=1MiB", `{"ttl":"10m","coalesce":true,"max_wait":"5s","max_entry":"1MiB"}`,
			&Policy{TTL: 10 * time.Minute, Coalesce: on(true), MaxWait: 5 * time.Second, MaxEntry: 1 << 20}},
		{"ttl alone", "ttl=30s", `{"ttl":"30s"}`, &Policy{TTL: 30 * time.Second}},
		{"off", "coalesce=off", `{"coalesce":false}`, &Policy{Coalesce: on(false)}},
		{"bytes", "ttl=1m, max_entry=65536", `{"ttl":"1m","max_entry":65536}`, &Policy{TTL: time.Minute, MaxEntry: 65536}},
		{"not shared", "ttl=1m,shared=off", `{"ttl":"1m","shared":false}`, &Policy{TTL: time.Minute}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.cli)
			if err != nil || !reflect.DeepEqual(c, tc.want) {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tc.cli, c, err, tc.want)
			}
			j, err := ParseJSON([]byte(tc.json))
			if err != nil || !reflect.DeepEqual(j, tc.want) {
				t.Fatalf("ParseJSON(%s) = %+v, %v; want %+v", tc.json, j, err, tc.want)
			}
			if tc.want == nil {
				return
			}
			back, err := Parse(c.String())
			if err != nil || back.Effective() == nil || *back.Effective() != *c.Effective() {
				t.Fatalf("Parse(String() = %q) = %+v, %v", c.String(), back, err)
			}
			raw, err := json.Marshal(j)
			if err != nil {
				t.Fatal(err)
			}
			var again Policy
			if err := json.Unmarshal(raw, &again); err != nil || *again.Effective() != *j.Effective() {
				t.Fatalf("the stored form %s reads back as %+v, %v", raw, again, err)
			}
		})
	}
}

// TestBadPolicies: each mistake is refused by both forms, naming its
// setting.
func TestBadPolicies(t *testing.T) {
	tests := []struct {
		name, cli, json, field string
	}{
		{"negative ttl", "ttl=-1s", `{"ttl":"-1s"}`, "ttl"},
		{"ttl without unit", "ttl=10", `{"ttl":"10"}`, "ttl"},
		{"negative max_wait", "max_wait=-5s", `{"max_wait":"-5s"}`, "max_wait"},
		{"max_entry words", "max_entry=big", `{"max_entry":"big"}`, "max_entry"},
		{"max_entry too large", "max_entry=2048GiB", `{"max_entry":"2048GiB"}`, "max_entry"},
		{"max_entry negative", "max_entry=-1", `{"max_entry":-1}`, "max_entry"},
		{"coalesce maybe", "coalesce=maybe", `{"coalesce":"maybe"}`, "coalesce"},
		{"shared on a key", "ttl=1m,shared=on", `{"ttl":"1m","shared":true}`, "shared"},
		{"unknown", "ttl=1m,temperature=0", `{"ttl":"1m","temperature":0}`, "temperature"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pr *Problem
			if p, err := Parse(tc.cli); !errors.As(err, &pr) || pr.Field != tc.field {
				t.Errorf("Parse(%q) = %+v, %v; want a problem of %s", tc.cli, p, err, tc.field)
			}
			if p, err := ParseJSON([]byte(tc.json)); !errors.As(err, &pr) || pr.Field != tc.field || !strings.HasPrefix(err.Error(), tc.field+": ") {
				t.Errorf("ParseJSON(%s) = %+v, %v; want a problem of %s", tc.json, p, err, tc.field)
			}
		})
	}
	for _, raw := range []string{`"always"`, `[1]`, `42`, `{"ttl":600}`, `{"ttl":"1m"`} {
		if p, err := ParseJSON([]byte(raw)); err == nil {
			t.Errorf("ParseJSON(%s) = %+v, want an error", raw, p)
		}
	}
	for _, s := range []string{"ttl", "ttl=1m,ttl=2m", "=5s"} {
		if p, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", s, p)
		}
	}
}

// TestCheckKeyAndPool: a key's policy may be off but not shared; a
// pool's may be shared but not off.
func TestCheckKeyAndPool(t *testing.T) {
	off := &Policy{Coalesce: on(false)}
	if ps := off.Check(true); ps != nil {
		t.Errorf("a key's cache that is off: %v", ps)
	}
	if ps := off.Check(false); len(ps) != 1 || ps[0].Field != "" {
		t.Errorf("a pool's cache that is off: %v", ps)
	}
	shared := &Policy{TTL: time.Minute, Shared: true}
	if ps := shared.Check(false); ps != nil {
		t.Errorf("a pool's shared cache: %v", ps)
	}
	if ps := shared.Check(true); len(ps) != 1 || ps[0].Field != "shared" {
		t.Errorf("a key's shared cache: %v", ps)
	}
}

// TestPick: a key's own policy wins whole over its pool's, even off; no
// policy of its own is the pool's.
func TestPick(t *testing.T) {
	pool := (&Policy{TTL: time.Minute, Shared: true}).Effective()
	key := (&Policy{TTL: time.Hour, Coalesce: on(false)}).Effective()
	off := (&Policy{Coalesce: on(false)}).Effective()
	if got := Pick(nil, pool); got != pool {
		t.Errorf("no key policy: %+v, want the pool's", got)
	}
	if got := Pick(key, pool); got != key || got.Shared {
		t.Errorf("a key policy: %+v, want the key's", got)
	}
	if got := Pick(off, pool); got != nil {
		t.Errorf("a key policy that is off: %+v, want none", got)
	}
	if got := Pick(nil, nil); got != nil {
		t.Errorf("neither: %+v", got)
	}
	if e := (&Policy{}).Effective(); e.MaxWait != DefaultMaxWait || e.MaxEntry != DefaultMaxEntry || !e.Coalesce {
		t.Errorf("the defaults: %+v", e)
	}
}
