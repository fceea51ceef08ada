package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/switchover-gw/switchover/internal/quantity"
	"github.com/switchover-gw/switchover/ledger"
)

// parseRequestLogFlag reads --request-log: "bodies=on,max_body_bytes=64KiB"
// (each optional) as the admin API's request_log object, or "none" as
// nil (the key's pools' setting). The gateway checks the bounds.
func parseRequestLogFlag(v string) (map[string]any, error) {
	if strings.EqualFold(v, "none") {
		return nil, nil
	}
	out := map[string]any{}
	for part := range strings.SplitSeq(v, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok {
			return nil, fmt.Errorf("%q: write bodies=on,max_body_bytes=64KiB, or none", part)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s: given twice", name)
		}
		switch name {
		case "bodies":
			switch strings.ToLower(val) {
			case "on", "true", "yes":
				out[name] = true
			case "off", "false", "no":
				out[name] = false
			default:
				return nil, fmt.Errorf("bodies: %q is not on or off", val)
			}
		case "max_body_bytes":
			n, err := quantity.ParseSize(val)
			if err != nil {
				return nil, fmt.Errorf("max_body_bytes: %q is not a size (such as 65536 or 64KiB)", val)
			}
			out[name] = n
		default:
			return nil, errors.New(name + ": unknown setting (the settings are bodies and max_body_bytes)")
		}
	}
	return out, nil
}

// requestLogText prints a key's request log settings as --request-log
// takes them, or "- (its pools')".
func requestLogText(l *ledger.KeyRequestLog) string {
	if l == nil || (l.Bodies == nil && l.MaxBodyBytes == 0) {
		return "- (its pools')"
	}
	var parts []string
	if l.Bodies != nil {
		parts = append(parts, map[bool]string{true: "bodies=on", false: "bodies=off"}[*l.Bodies])
	}
	if l.MaxBodyBytes > 0 {
		parts = append(parts, "max_body_bytes="+quantity.FormatSize(l.MaxBodyBytes))
	}
	return strings.Join(parts, ",")
}
