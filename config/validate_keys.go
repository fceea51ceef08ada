package config

import (
	"fmt"

	"github.com/switchover-gw/switchover/internal/labels"
)

// MinKeyLen is the shortest gateway key the file may give: long enough
// that guessing is hopeless even unthrottled.
const MinKeyLen = 32

// validateKeys checks the gateway keys of the file: each has a name and a
// long key, and no two names or keys are the same. Their limits are
// validateTenancy's.
func (c *Config) validateKeys(ps *Problems) {
	names := map[string]bool{}
	values := map[Secret]string{}
	for i, k := range c.Keys {
		p := fmt.Sprintf("keys[%d]", i)
		if k.Name == "" {
			ps.add(p+".name", "a key needs a name (it identifies the caller in logs)")
		} else if names[k.Name] {
			ps.add(p+".name", "key name %q is used twice", k.Name)
		}
		names[k.Name] = true
		if k.Key == "" {
			ps.add(p+".key", "empty key")
		} else if len(k.Key) < MinKeyLen {
			ps.add(p+".key", "key is shorter than %d characters; use a long random value (openssl rand -hex 32)", MinKeyLen)
		} else if other, dup := values[k.Key]; dup {
			ps.add(p+".key", "same key as %q", other)
		}
		values[k.Key] = k.Name
		if _, err := labels.Tags(k.Tags); err != nil {
			ps.add(p+".tags", "%v", err)
		}
		if err := labels.Metadata(k.Metadata); err != nil {
			ps.add(p+".metadata", "%v", err)
		}
	}
}
