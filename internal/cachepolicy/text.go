package cachepolicy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/internal/quantity"
)

// The written forms of a policy: the command line's
// "ttl=10m,coalesce=on,max_wait=5s,max_entry=1MiB" (Parse, String) and
// the admin API's and the ledger's JSON object
// {"ttl":"10m","coalesce":true,"max_wait":"5s","max_entry":"1MiB"}
// (ParseJSON, MarshalJSON). "none" (or JSON null) in either is no policy
// of the key's own: it follows its pools'. Both check the policy as a
// key's (Check(true)).

// None is the written form of no policy.
const None = "none"

// Parse reads the command line's form of a key's policy: settings
// NAME=VALUE separated by commas, each at most once, of ttl, max_wait
// (durations: 10m, 5s), coalesce (on, off, true, false) and max_entry (a
// size: 1MiB, 65536). "none" or "" is nil: the key follows its pools'.
// The policy is checked as a key's; an error is a *Problem naming the
// setting.
func Parse(s string) (*Policy, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, None) {
		return nil, nil
	}
	p := &Policy{}
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		if !ok || name == "" {
			return nil, &Problem{"", fmt.Sprintf("%q is not NAME=VALUE (ttl=10m,coalesce=on,max_wait=5s,max_entry=1MiB, or none)", item)}
		}
		if seen[name] {
			return nil, &Problem{name, "given twice"}
		}
		seen[name] = true
		if err := p.set(name, value); err != nil {
			return nil, err
		}
	}
	if err := first(p.Check(true)); err != nil {
		return nil, err
	}
	return p, nil
}

// set sets p's setting name from its text.
func (p *Policy) set(name, value string) error {
	var err error
	switch name {
	case "ttl":
		p.TTL, err = duration(name, value)
	case "max_wait":
		p.MaxWait, err = duration(name, value)
	case "max_entry":
		p.MaxEntry, err = size(value)
	case "coalesce", "shared":
		var on bool
		switch strings.ToLower(value) {
		case "on", "true", "yes":
			on = true
		case "off", "false", "no":
		default:
			return &Problem{name, fmt.Sprintf("%q is not on or off", value)}
		}
		if name == "shared" {
			p.Shared = on // Check refuses it on a key
		} else {
			p.Coalesce = &on
		}
	default:
		return &Problem{name, "unknown setting (the settings are ttl, coalesce, max_wait and max_entry)"}
	}
	return err
}

func duration(name, s string) (time.Duration, error) {
	d, err := quantity.ParseDuration(s)
	switch {
	case errors.Is(err, quantity.ErrNegative):
		return 0, &Problem{name, msgNegative}
	case err != nil:
		return 0, &Problem{name, fmt.Sprintf("%q is not a duration (use a unit: 500ms, 30s, 10m)", s)}
	}
	return d, nil
}

func size(s string) (int64, error) {
	n, err := quantity.ParseSize(s)
	switch {
	case errors.Is(err, quantity.ErrSizeTooLarge):
		return 0, &Problem{"max_entry", fmt.Sprintf("%q is too large a size (at most 1TiB)", s)}
	case err != nil:
		return 0, &Problem{"max_entry", fmt.Sprintf("%q is not a size (use 65536, 512KiB, 1MiB)", s)}
	}
	return n, nil
}

// first is the first of ps as an error, or nil.
func first(ps []Problem) error {
	if len(ps) == 0 {
		return nil
	}
	return &ps[0]
}

// String writes p in the command line's form, which Parse reads back to
// the same policy: "none" for nil, else ttl and coalesce, then max_wait
// and max_entry when set.
func (p *Policy) String() string {
	if p == nil {
		return None
	}
	var b strings.Builder
	b.WriteString("ttl=" + p.TTL.String())
	if p.CoalesceOn() {
		b.WriteString(",coalesce=on")
	} else {
		b.WriteString(",coalesce=off")
	}
	if p.MaxWait > 0 {
		b.WriteString(",max_wait=" + p.MaxWait.String())
	}
	if p.MaxEntry > 0 {
		b.WriteString(",max_entry=" + quantity.FormatSize(p.MaxEntry))
	}
	return b.String()
}

// jsonPolicy is the JSON form's object as written out.
type jsonPolicy struct {
	TTL      string `json:"ttl"`
	Coalesce bool   `json:"coalesce"`
	MaxWait  string `json:"max_wait,omitempty"`
	MaxEntry string `json:"max_entry,omitempty"`
}

// MarshalJSON writes p as the admin API shows it and the ledger keeps
// it: {"ttl":"10m0s","coalesce":true,"max_wait":"5s","max_entry":"1MiB"}
// (max_wait and max_entry only when set; Shared, never a key's, is not
// written).
func (p Policy) MarshalJSON() ([]byte, error) {
	j := jsonPolicy{TTL: p.TTL.String(), Coalesce: p.CoalesceOn()}
	if p.MaxWait > 0 {
		j.MaxWait = p.MaxWait.String()
	}
	if p.MaxEntry > 0 {
		j.MaxEntry = quantity.FormatSize(p.MaxEntry)
	}
	return json.Marshal(j)
}

// ParseJSON reads the admin API's form of a key's policy: null or "none"
// is nil (the key follows its pools'); an object takes ttl and max_wait
// (strings: "10m", "5s"), coalesce (true or false) and max_entry (a
// string such as "1MiB", or a number of bytes), each optional, and no
// other member. The policy is checked as a key's; an error is a
// *Problem naming the setting.
func ParseJSON(raw []byte) (*Policy, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || !strings.EqualFold(strings.TrimSpace(s), None) {
			return nil, &Problem{"", `write an object such as {"ttl":"10m","coalesce":true}, or null or "none" for the pools' cache`}
		}
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &Problem{"", `write an object such as {"ttl":"10m","coalesce":true,"max_wait":"5s","max_entry":"1MiB"}, or null or "none"`}
	}
	p := &Policy{}
	for _, name := range []string{"ttl", "coalesce", "max_wait", "max_entry", "shared"} {
		v, ok := m[name]
		if !ok {
			continue
		}
		delete(m, name)
		if err := p.setJSON(name, v); err != nil {
			return nil, err
		}
	}
	for name := range m {
		return nil, &Problem{name, "unknown setting (the settings are ttl, coalesce, max_wait and max_entry)"}
	}
	if err := first(p.Check(true)); err != nil {
		return nil, err
	}
	return p, nil
}

// setJSON sets p's setting name from its JSON value v.
func (p *Policy) setJSON(name string, v json.RawMessage) error {
	var s string
	isString := json.Unmarshal(v, &s) == nil
	switch name {
	case "ttl", "max_wait":
		if !isString {
			return &Problem{name, fmt.Sprintf("write a duration as a string such as \"10m\", not %s", truncate(v))}
		}
		return p.set(name, s)
	case "max_entry":
		if !isString {
			var n json.Number
			if json.Unmarshal(v, &n) != nil {
				return &Problem{name, fmt.Sprintf("write a size such as \"1MiB\" or a number of bytes, not %s", truncate(v))}
			}
			s = n.String()
		}
		return p.set(name, s)
	case "coalesce", "shared":
		var on bool
		if json.Unmarshal(v, &on) != nil {
			return &Problem{name, fmt.Sprintf("write true or false, not %s", truncate(v))}
		}
		if name == "shared" {
			p.Shared = on // Check refuses it on a key
		} else {
			p.Coalesce = &on
		}
	}
	return nil
}

// truncate is v for an error message, at most 40 bytes of it, quoted.
func truncate(v json.RawMessage) string {
	s := string(v)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strconv.Quote(s)
}

// UnmarshalJSON reads what MarshalJSON wrote (ParseJSON's object); null
// leaves p as it is.
func (p *Policy) UnmarshalJSON(raw []byte) error {
	q, err := ParseJSON(raw)
	if err != nil {
		return err
	}
	if q != nil {
		*p = *q
	}
	return nil
}
