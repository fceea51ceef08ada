package config

import "fmt"

// Viewer is a key of the admin listener's web console below the admin's:
// with the role viewer (the default) it signs in to see the pools, events
// and config and can take no action; with the role operator it also acts
// on the pools (drain, restore, breakers, priorities and weights), but
// manages no keys or teams, reloads nothing and sees no end users. The
// key is never logged.
type Viewer struct {
	// Name is who signed in, as the console shows it. Required, unique.
	Name string `yaml:"name"`
	// Key is entered on the console's login page. At least 16
	// characters, distinct from admin.key and from every other viewer's.
	Key Secret `yaml:"key"`
	// Role is viewer or operator. Default viewer. Risk: an operator can
	// drain every backend of a pool.
	Role string `yaml:"role"`
}

// Console roles, weakest first: what admin.viewers[].role and the
// single sign-on's mapping give.
const (
	RoleViewer   = "viewer"
	RoleOperator = "operator"
	RoleAdmin    = "admin"
)

// validateConsole checks admin.viewers: each has a name, a long key and
// a known role, and no two names or keys (admin.key included) are the
// same.
func (c *Config) validateConsole(ps *Problems) {
	a := c.Admin
	if a == nil {
		return
	}
	names := map[string]bool{}
	keys := map[Secret]string{}
	if a.Key != "" {
		keys[a.Key] = "admin.key"
	}
	for i, v := range a.Viewers {
		p := fmt.Sprintf("admin.viewers[%d]", i)
		switch {
		case v.Name == "":
			ps.add(p+".name", "a viewer needs a name (it is shown as who signed in)")
		case v.Name == "admin":
			ps.add(p+".name", "the name admin is the admin key's; choose another")
		case names[v.Name]:
			ps.add(p+".name", "viewer name %q is used twice", v.Name)
		}
		names[v.Name] = true
		if v.Role != "" && v.Role != RoleViewer && v.Role != RoleOperator {
			ps.add(p+".role", "role %q is not viewer or operator (the admin role is admin.key's)", v.Role)
		}
		switch {
		case v.Key == "":
			ps.add(p+".key", "a viewer needs a key")
		case len(v.Key) < 16:
			ps.add(p+".key", "key is shorter than 16 characters; use a long random value")
		case keys[v.Key] != "":
			// Never the key itself: say which other entry it repeats.
			ps.add(p+".key", "key is the same as %s; give every viewer a key of its own", keys[v.Key])
		default:
			keys[v.Key] = p + ".key"
		}
	}
}
