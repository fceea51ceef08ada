package ledgerapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/switchover-gw/switchover/internal/quantity"
	"github.com/switchover-gw/switchover/ledger"
)

// parseKeyRequestLog reads a key body's request_log: an object
// {"bodies":true,"max_body_bytes":65536} (each optional; max_body_bytes
// a number of bytes or a size such as "64KiB", 1 to 1MiB), or null or
// "none" for none (the key follows its pools'). Errors name the field as
// param ("request_log.max_body_bytes").
func parseKeyRequestLog(raw json.RawMessage) (*ledger.KeyRequestLog, error) {
	raw = bytes.TrimSpace(raw)
	const want = `write an object such as {"bodies":true,"max_body_bytes":"64KiB"}, or null or "none" for the pools' setting`
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || !strings.EqualFold(strings.TrimSpace(s), "none") {
			return nil, badField("request_log", want)
		}
		return nil, nil
	}
	var m map[string]json.RawMessage
	if raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, badField("request_log", want)
	}
	l := &ledger.KeyRequestLog{}
	if v, ok := m["bodies"]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		var on bool
		if err := json.Unmarshal(v, &on); err != nil {
			return nil, badField("request_log.bodies", "write true or false")
		}
		l.Bodies = &on
	}
	if v, ok := m["max_body_bytes"]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		n, err := bodyBytes(v)
		if err != nil {
			return nil, badField("request_log.max_body_bytes", "%v", err)
		}
		l.MaxBodyBytes = n
	}
	delete(m, "bodies")
	delete(m, "max_body_bytes")
	for name := range m {
		return nil, badField("request_log."+name, "unknown setting (the settings are bodies and max_body_bytes)")
	}
	return l, nil
}

var errBodyBytes = errors.New("write a number of bytes from 1 to 1048576, or a size such as \"64KiB\" (at most 1MiB)")

// bodyBytes reads max_body_bytes: a whole number or a size, 1 to
// ledger.MaxKeyBodyBytes.
func bodyBytes(v json.RawMessage) (int64, error) {
	var n int64
	if err := json.Unmarshal(v, &n); err != nil {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return 0, errBodyBytes
		}
		if n, err = quantity.ParseSize(s); err != nil {
			return 0, errBodyBytes
		}
	}
	if n < 1 || n > ledger.MaxKeyBodyBytes {
		return 0, errBodyBytes
	}
	return n, nil
}
