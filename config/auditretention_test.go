package config

import (
	"strings"
	"testing"
	"time"
)

// TestStoreAuditRetention: store.audit_retention defaults to 400 days,
// takes days or a duration, 0 is forever, and less than a day or a
// non-time is refused at its line; the audit spool sits beside the usage
// spool.
func TestStoreAuditRetention(t *testing.T) {
	base := "backends:\n  - {name: a, type: openai, api_key: sk-00000000000000000000000000000000}\npools:\n  - {name: chat, members: [{backend: a}]}\n"
	env := func(string) (string, bool) { return "", false }
	for v, want := range map[string]time.Duration{"": DefaultAuditRetention, "0": 0, "730d": 730 * 24 * time.Hour, "24h": 24 * time.Hour} {
		y := "store:\n  sqlite: a.db\n  audit_retention: \"" + v + "\"\n" + base
		cfg, err := Parse("r.yaml", []byte(y), env)
		if err != nil {
			t.Fatalf("audit_retention %q: %v", v, err)
		}
		if got := cfg.Store.AuditRetentionAge(); got != want {
			t.Errorf("audit_retention %q = %v, want %v", v, got, want)
		}
		if got := cfg.Store.AuditSpoolPath(); got != "a.db.spool.audit" {
			t.Errorf("audit spool %q, want a.db.spool.audit", got)
		}
	}
	if DefaultAuditRetention != 400*24*time.Hour {
		t.Errorf("DefaultAuditRetention = %v", DefaultAuditRetention)
	}
	for _, v := range []string{"23h", "soon", "-5d", "1 year"} {
		y := "store:\n  sqlite: a.db\n  audit_retention: \"" + v + "\"\n" + base
		if _, err := Parse("r.yaml", []byte(y), env); err == nil || !strings.Contains(err.Error(), "r.yaml:3") || !strings.Contains(err.Error(), "store.audit_retention:") {
			t.Errorf("audit_retention %q: %v, want a problem at r.yaml:3, store.audit_retention", v, err)
		}
	}
	var none *Store
	if none.AuditRetentionAge() != 0 || none.AuditSpoolPath() != "" {
		t.Error("without a store block: an audit retention or spool")
	}
	off := &Store{SQLite: "a.db", Spool: "off"}
	if off.AuditSpoolPath() != "" {
		t.Error("store.spool off: the audit trail still has a spool")
	}
}
