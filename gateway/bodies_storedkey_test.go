package gateway_test

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchover-gw/switchover/ledger"
)

// bodiesOf posts a chat as the key secret and returns the bodies the
// store kept of it (ledger.ErrNotFound when none).
func (h *harness) bodiesOf(secret, body string) (ledger.Bodies, error) {
	h.t.Helper()
	resp, b := h.post("/v1/chat/completions", body, "Authorization", "Bearer "+secret)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("chat as a stored key: %d %s", resp.StatusCode, b)
	}
	return h.recorded(resp.Header.Get("X-Request-Id"))
}

// TestRequestBodiesStoredKeyOwnSetting: a key made through the admin API
// with request_log.bodies true keeps its calls' bodies, up to its own
// max_body_bytes, on a pool (and in a configuration) that keeps none; a
// stored key without the setting keeps none there.
func TestRequestBodiesStoredKeyOwnSetting(t *testing.T) {
	h := startAnswering(t, withStoredKeys(t))
	_, own := h.storedKey(`{"name":"own","request_log":{"bodies":true,"max_body_bytes":"1KiB"}}`)
	_, plain := h.storedKey(`{"name":"plain"}`)
	long := `{"model":"chat-prod","messages":[{"role":"user","content":"the stored key's prompt ` + strings.Repeat("x", 2000) + `"}]}`
	got, err := h.bodiesOf(own, long)
	if err != nil || !strings.Contains(string(got.Request), "the stored key's prompt") || !strings.Contains(string(got.Response), "hello from") {
		t.Fatalf("the key's own bodies: %+v, %v", got, err)
	}
	if !got.RequestTruncated || got.RequestSize != int64(len(long)) || len(got.Request) > 1024 {
		t.Errorf("the request kept as %d bytes of %d (truncated %v), want at most the key's 1KiB", len(got.Request), got.RequestSize, got.RequestTruncated)
	}
	if got, err := h.bodiesOf(plain, chat); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a stored key without request_log on a pool without: kept %+v, %v", got, err)
	}
}

// TestRequestBodiesStoredKeySaysNo: on a pool with request_log.bodies, a
// stored key's bodies: false keeps none, while a stored key that says
// nothing keeps them as its pool does; a configuration key's own
// request_log shows in the admin API's list.
func TestRequestBodiesStoredKeySaysNo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "switchover.db")
	h := startAnswering(t, withBodies(db, "{bodies: true}"), func(y string) string {
		return strings.Replace(y, "    key: ${TEST_APP_KEY}\n", "    key: ${TEST_APP_KEY}\n    request_log: {max_body_bytes: 2KiB}\n", 1)
	})
	_, no := h.storedKey(`{"name":"no","request_log":{"bodies":false}}`)
	_, follows := h.storedKey(`{"name":"follows"}`)
	if got, err := h.bodiesOf(no, chat); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a stored key with bodies false on a pool with: kept %+v, %v", got, err)
	}
	if got, err := h.bodiesOf(follows, chat); err != nil || !strings.Contains(string(got.Response), "hello from") {
		t.Errorf("a stored key following its pool: %+v, %v; want its bodies", got, err)
	}
	st, b := h.adminCall(http.MethodGet, "/admin/keys", "", adminKey)
	if st != http.StatusOK || !strings.Contains(string(b), `"max_body_bytes": 2048`) || !strings.Contains(string(b), `"bodies": false`) {
		t.Errorf("GET /admin/keys: %d %s; want the configuration key's request_log and the stored key's", st, b)
	}
}

// TestRequestBodiesStoredKeySettingNeedsTheAdmin: a stored key's
// request_log is changed only with the admin key: without a key, with a
// wrong one, with the key's own secret or another key's, with the
// configuration's API key, with a console viewer's key, from another
// origin, by another Host and as a form, the change is refused and the
// key keeps no bodies; with the admin key it takes effect.
func TestRequestBodiesStoredKeySettingNeedsTheAdmin(t *testing.T) {
	h := startAnswering(t, withStoredKeys(t))
	id, secret := h.storedKey(`{"name":"target"}`)
	_, other := h.storedKey(`{"name":"other"}`)
	path, body := "/admin/keys/"+id, `{"request_log":{"bodies":true}}`
	h.refusedButToTheAdmin(http.MethodPatch, path, body, secret, other)
	if st, b := h.adminCall(http.MethodPost, "/admin/keys", `{"name":"mallory","request_log":{"bodies":true}}`, secret); st != http.StatusUnauthorized {
		t.Errorf("a key with bodies made with a stored key's secret: %d %s", st, b)
	}
	if ks, err := h.gw.Ledger().Keys(t.Context()); err != nil || len(ks) != 2 || ks[0].RequestLog != nil || ks[1].RequestLog != nil {
		t.Fatalf("after the refusals the store has %+v (%v); want the two keys, without request_log", ks, err)
	}
	if got, err := h.bodiesOf(secret, chat); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("after the refusals: kept %+v, %v", got, err)
	}
	if st, b := h.adminCall(http.MethodPatch, path, body, adminKey); st != http.StatusOK || !strings.Contains(string(b), `"bodies": true`) {
		t.Fatalf("with the admin key: %d %s", st, b)
	}
	if got, err := h.bodiesOf(secret, chat); err != nil || !strings.Contains(string(got.Response), "hello from") {
		t.Fatalf("after the admin's change: %+v, %v; want the bodies kept", got, err)
	}
}
