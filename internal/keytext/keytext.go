// Package keytext reads and writes a stored key's settings in their short
// text forms, as the command line's flags (switchover keys) and the
// console's key forms take them: request log settings
// ("bodies=on,max_body_bytes=64KiB"), budgets of one pool each
// ("o3=5/day,gpt4o=10/1h") and metadata (NAME=VALUE, one a line). What
// it parses is the admin API's body for the field, which checks the
// bounds again; what it writes parses back to the same settings.
package keytext

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/internal/labels"
	"github.com/switchover-gw/switchover/internal/quantity"
	"github.com/switchover-gw/switchover/ledger"
)

// None reports whether v says "none": empty, or the word itself.
func None(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || strings.EqualFold(v, "none")
}

// List reads a comma-separated list (a key's pools, models or tags):
// each item trimmed, empty ones dropped; "" is the empty list, which on
// an update removes them (all pools and models, no tags).
func List(v string) []string {
	out := []string{}
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ParseRequestLog reads "bodies=on,max_body_bytes=64KiB" (each optional)
// as the admin API's request_log object, or "" and "none" as nil (the
// key's pools' settings), as RequestLog writes a key without its own.
func ParseRequestLog(v string) (map[string]any, error) {
	if None(v) {
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

// RequestLog writes l as ParseRequestLog reads it; "" when the key has
// none of its own.
func RequestLog(l *ledger.KeyRequestLog) string {
	if l == nil {
		return ""
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

// ParsePoolBudgets reads "o3=5/day,gpt4o=10/1h" as the admin API's
// budgets; "" and "none" are none (an empty list, which removes them).
func ParsePoolBudgets(v string) ([]map[string]string, error) {
	out := []map[string]string{}
	if None(v) {
		return out, nil
	}
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		pool, budget, ok := strings.Cut(item, "=")
		if !ok || strings.TrimSpace(pool) == "" {
			return nil, fmt.Errorf("%q is not POOL=BUDGET such as o3=5/day", item)
		}
		if _, err := config.ParseBudget(budget); err != nil {
			return nil, err
		}
		out = append(out, map[string]string{"pool": strings.TrimSpace(pool), "budget": strings.TrimSpace(budget)})
	}
	return out, nil
}

// PoolBudgets writes bs as ParsePoolBudgets reads them; "" for none.
func PoolBudgets(bs []ledger.ScopedBudget) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = b.Pool + "=" + strconv.FormatFloat(b.Budget, 'f', -1, 64) + "/" + b.Period
	}
	return strings.Join(parts, ",")
}

// ParseMetadata reads metadata written one NAME=VALUE a line (blank
// lines skipped; a value may hold "=" and ","), checked as the admin API
// checks it. No lines is no metadata (an empty map, which removes it).
func ParseMetadata(text string) (map[string]string, error) {
	m := map[string]string{}
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME=VALUE", line)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%s: given twice", name)
		}
		m[name] = strings.TrimSpace(value)
	}
	if err := labels.Metadata(m); err != nil {
		return nil, err
	}
	return m, nil
}

// Metadata writes m as ParseMetadata reads it, in name order.
func Metadata(m map[string]string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(name + "=" + m[name] + "\n")
	}
	return b.String()
}
