package ledgertest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchover-gw/switchover/ledger"
)

// testAudit: the trail keeps what was recorded, newest first, filtered by
// range, actor and action, at most the limit; a detail that is not a
// JSON object or too long is kept bounded; bad input is ErrInvalid.
func testAudit(t *testing.T, s ledger.Store) {
	ctx := t.Context()
	w, ok := s.(ledger.AuditWriter)
	r, ok2 := s.(ledger.AuditReader)
	if !ok || !ok2 {
		t.Fatal("the store does not keep an audit trail")
	}
	entries := []ledger.AuditEntry{
		{At: t0, Actor: "alice", Action: "admin:drain", Target: "uksouth", Detail: json.RawMessage(`{"text":"drained backend uksouth"}`)},
		{At: t0.Add(time.Minute), Actor: "bob", Action: "signin"},
		{At: t0.Add(2 * time.Minute), Actor: "alice", Action: "admin:key:create", Detail: json.RawMessage(`not json`)},
		{At: t0.Add(3 * time.Minute), Actor: "alice", Action: "admin:drain", Target: "sweden", Detail: json.RawMessage(`{"text":"` + strings.Repeat("x", 10000) + `"}`)},
		{At: t0.Add(time.Hour), Actor: "alice", Action: "admin:restore", Target: "uksouth"},
	}
	for _, e := range entries {
		if err := w.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	all, err := r.Audit(ctx, ledger.AuditQuery{From: t0, To: t0.Add(time.Hour), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range all {
		got = append(got, e.At.Sub(t0).String()+" "+e.Actor+" "+e.Action+" "+e.Target)
		if e.ID == "" || len(e.Detail) > ledger.MaxAuditDetail || !json.Valid(e.Detail) {
			t.Errorf("entry %+v: want an id and a valid bounded detail", e)
		}
	}
	want := []string{"3m0s alice admin:drain sweden", "2m0s alice admin:key:create ", "1m0s bob signin ", "0s alice admin:drain uksouth"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("trail of the hour:\n got %q\nwant %q", got, want)
	}
	if string(all[3].Detail) != `{"text":"drained backend uksouth"}` || string(all[1].Detail) != `{"text":"not json"}` {
		t.Errorf("details: %s, %s", all[3].Detail, all[1].Detail)
	}
	if string(all[2].Detail) != `{}` {
		t.Errorf("an empty detail is stored as %s, want {}", all[2].Detail)
	}
	if !strings.HasPrefix(string(all[0].Detail), `{"text":"{\"text\":\"xxx`) {
		t.Errorf("a long detail is stored as %.40s…, want its text cut", all[0].Detail)
	}
	one, err := r.Audit(ctx, ledger.AuditQuery{From: t0, To: t0.Add(2 * time.Hour), Actor: "alice", Action: "admin:drain", Limit: 1})
	if err != nil || len(one) != 1 || one[0].Target != "sweden" {
		t.Fatalf("alice's newest drain: %+v, %v", one, err)
	}
	for _, q := range []ledger.AuditQuery{{From: t0, To: t0.Add(time.Hour)}, {From: t0, To: t0, Limit: 1}, {From: t0, To: t0.Add(time.Hour), Limit: ledger.MaxAuditLimit + 1}} {
		if _, err := r.Audit(ctx, q); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("Audit(%+v) = %v, want ErrInvalid", q, err)
		}
	}
	if err := w.RecordAudit(ctx, ledger.AuditEntry{Actor: "x", Action: "signin"}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("an entry without a time: %v, want ErrInvalid", err)
	}
}
