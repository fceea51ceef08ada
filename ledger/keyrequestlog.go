package ledger

import (
	"encoding/json"
	"fmt"
)

// KeyRequestLog is a stored key's own request log settings, as a
// configuration file's keys[].request_log: whether its calls keep their
// bodies, and how much of each. Its fields, where set, win over its
// pools' request_log (see docs/operations.md, "The request log").
type KeyRequestLog struct {
	// Bodies keeps (true) or does not keep (false) the key's calls'
	// bodies, whatever its pools say; nil: its pools'.
	Bodies *bool `json:"bodies,omitempty"`
	// MaxBodyBytes bounds each body kept, in bytes, 1 to
	// MaxKeyBodyBytes; 0: its pools' (16KiB by default).
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
}

// MaxKeyBodyBytes is the most a key may keep of a body, as the
// configuration's request_log.max_body_bytes (1MiB).
const MaxKeyBodyBytes = 1 << 20

// Check returns what is wrong with l ("" when nothing; a nil l is fine).
func (l *KeyRequestLog) Check() string {
	if l == nil {
		return ""
	}
	if l.MaxBodyBytes < 0 || l.MaxBodyBytes > MaxKeyBodyBytes {
		return fmt.Sprintf("max_body_bytes %d is out of range: 1 to %d (1MiB)", l.MaxBodyBytes, MaxKeyBodyBytes)
	}
	return ""
}

// requestLogText stores a key's request log settings as their JSON (""
// for none).
func requestLogText(l *KeyRequestLog) string {
	if l == nil {
		return ""
	}
	b, _ := json.Marshal(l) // a KeyRequestLog always marshals
	return string(b)
}

// parseRequestLog reads what requestLogText stored.
func parseRequestLog(s string) (*KeyRequestLog, error) {
	if s == "" {
		return nil, nil
	}
	var l KeyRequestLog
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// BodiesOn reports whether l keeps bodies (false for a nil l or an unset
// Bodies).
func (l *KeyRequestLog) BodiesOn() bool { return l != nil && l.Bodies != nil && *l.Bodies }
