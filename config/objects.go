package config

import (
	"crypto/sha256"
	"fmt"
	"sort"
)

// ObjectIDs configures how the gateway signs the owner into the ids of
// stored objects (responses, files, batches …) it gives callers: the key
// (or the team, with teams[].share_objects) that made the object, and the
// backend that holds it. Every replica that serves the same callers must
// sign with the same secret.
//
//	object_ids:
//	  secret: ${SWITCHOVER_OBJECT_SECRET}
//	  previous_secrets: [${SWITCHOVER_OBJECT_SECRET_OLD}]
type ObjectIDs struct {
	// Secret signs new ids and checks them. At least 16 characters; a
	// secret. Default: one derived from the backends' credentials
	// (api_key, entra.client_secret) and admin.key, or, when the file
	// has none of those, from the keys' secrets and store.postgres. Every
	// replica with the same file agrees on it, but it changes when one of
	// them is rotated (or, in the second case, a key is added): every id
	// signed before is then refused (404). Set it when keys are in use.
	Secret Secret `yaml:"secret"`
	// PreviousSecrets still check ids (they sign none): list the old
	// secret here when rotating, for as long as objects made before
	// should be reached. Default none. Requires secret.
	PreviousSecrets []Secret `yaml:"previous_secrets"`
}

// minObjectSecret is the shortest object_ids secret accepted.
const minObjectSecret = 16

// validate checks the object ids' secrets.
func (o ObjectIDs) validate(ps *Problems) {
	if o.Secret != "" && len(o.Secret) < minObjectSecret {
		ps.add("object_ids.secret", "is %d characters; use at least %d (a random string: openssl rand -hex 32)", len(o.Secret), minObjectSecret)
	}
	if o.Secret == "" && len(o.PreviousSecrets) > 0 {
		ps.add("object_ids.previous_secrets", "set object_ids.secret too: previous secrets only check ids, the secret signs new ones")
	}
	for i, s := range o.PreviousSecrets {
		if len(s) < minObjectSecret {
			ps.add(fmt.Sprintf("object_ids.previous_secrets[%d]", i), "is %d characters; use at least %d", len(s), minObjectSecret)
		}
	}
}

// ObjectSecrets returns the secrets that sign and check the owner tags of
// stored objects' ids: the signing one first (object_ids.secret, or one
// derived from the file's credentials), then object_ids.previous_secrets.
// Nil when there is nothing to sign with: no secret set and no credential
// to derive one from.
func (c *Config) ObjectSecrets() [][]byte {
	if c.ObjectIDs.Secret != "" {
		out := [][]byte{[]byte(c.ObjectIDs.Secret)}
		for _, s := range c.ObjectIDs.PreviousSecrets {
			out = append(out, []byte(s))
		}
		return out
	}
	if d := c.derivedObjectSecret(); d != nil {
		return [][]byte{d}
	}
	return nil
}

// derivedObjectSecret is a secret made of the file's credentials, nil
// when it has none.
func (c *Config) derivedObjectSecret() []byte {
	var parts []string
	for _, b := range c.Backends {
		if b.APIKey != "" {
			parts = append(parts, "backend "+b.Name+" api_key "+b.APIKey.Value())
		}
		if b.Entra != nil && b.Entra.ClientSecret != "" {
			parts = append(parts, "backend "+b.Name+" client_secret "+b.Entra.ClientSecret.Value())
		}
	}
	if c.Admin != nil && c.Admin.Key != "" {
		parts = append(parts, "admin key "+c.Admin.Key.Value())
	}
	if len(parts) == 0 { // no credential upstream: the gateway's own
		for _, k := range c.Keys {
			parts = append(parts, "key "+k.Name+" "+k.Key.Value())
		}
		if c.Store != nil && c.Store.Postgres != "" {
			parts = append(parts, "store postgres "+c.Store.Postgres.Value())
		}
	}
	if len(parts) == 0 {
		return nil
	}
	sort.Strings(parts)
	h := sha256.New()
	h.Write([]byte("switchover object ids\x00"))
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// validateObjectOwners checks that a gateway with keys has a secret to
// sign its objects' ids with.
func (c *Config) validateObjectOwners(ps *Problems) {
	c.ObjectIDs.validate(ps)
	if (len(c.Keys) > 0 || c.Store.Enabled()) && c.ObjectSecrets() == nil {
		ps.add("object_ids.secret", "keys are in use and no credential in this file can sign the ids of stored objects: set object_ids.secret")
	}
}
