package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

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
	c.validateSSO(ps)
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

// SSO is the console's single sign-on with an OpenID Connect provider
// (Microsoft Entra ID, Okta, Google, Keycloak, Dex…): the login page
// offers "Sign in with Name", the provider authenticates the person, and
// the console gives the session the role its claims map to. admin.key
// stays the break-glass sign-in. Changes apply at a reload.
type SSO struct {
	// Name is the provider's name on the login page's button ("Sign in
	// with Name"). Default "single sign-on".
	Name string `yaml:"name"`
	// Issuer is the provider's issuer URL, where its discovery document
	// is (ISSUER/.well-known/openid-configuration); the ID token's iss
	// must equal it. For Entra ID:
	// https://login.microsoftonline.com/TENANT-ID/v2.0. Required; https,
	// or http on a loopback host only.
	Issuer string `yaml:"issuer"`
	// ClientID is the console's application (client) id at the
	// provider; the ID token's aud must hold it. Required.
	ClientID string `yaml:"client_id"`
	// ClientSecret authenticates the console to the provider's token
	// endpoint (write ${ENV_VAR}). Default none: a public client, with
	// PKCE only. Never logged or shown.
	ClientSecret Secret `yaml:"client_secret"`
	// RedirectURL is the console's callback as the browser reaches it:
	// https://HOST/console/sso/callback, registered at the provider.
	// Required; its host must be one the admin listener answers to
	// (admin.allowed_hosts).
	RedirectURL string `yaml:"redirect_url"`
	// Scopes asked for. Default openid, profile, email; openid is always
	// asked for.
	Scopes []string `yaml:"scopes"`
	// RolesClaim is the ID token's claim whose values (a list or one
	// string) are mapped to roles. Default groups (Entra ID puts group
	// object ids there; its app roles are in roles).
	RolesClaim string `yaml:"roles_claim"`
	// Admin, Operator and Viewer are the claim values that give each
	// role; a person whose values match several gets the strongest.
	Admin    []string `yaml:"admin"`
	Operator []string `yaml:"operator"`
	Viewer   []string `yaml:"viewer"`
	// DefaultRole is the role of a person whose claims match none:
	// viewer, operator, or none (the default: refused, with a page that
	// says why and an entry in the audit trail). Risk: viewer lets
	// everyone the provider authenticates for this client see the
	// console.
	DefaultRole string `yaml:"default_role"`
}

// validateSSO checks admin.sso: an issuer, a client id and a redirect
// URL the listener answers at, known roles, and someone who can sign in.
func (c *Config) validateSSO(ps *Problems) {
	a := c.Admin
	if a == nil || a.SSO == nil {
		return
	}
	s := a.SSO
	const p = "admin.sso"
	if s.Issuer == "" {
		ps.add(p+".issuer", "single sign-on needs the provider's issuer URL (for Entra ID https://login.microsoftonline.com/TENANT-ID/v2.0)")
	} else if u, err := url.Parse(s.Issuer); err != nil || u.Host == "" || u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) {
		ps.add(p+".issuer", "%q is not an https URL (http is allowed on a loopback host only)", s.Issuer)
	}
	if s.ClientID == "" {
		ps.add(p+".client_id", "single sign-on needs the console's client id at the provider")
	}
	if s.RedirectURL == "" {
		ps.add(p+".redirect_url", "single sign-on needs the console's callback URL, https://HOST/console/sso/callback, as registered at the provider")
	} else if u, err := url.Parse(s.RedirectURL); err != nil || u.Host == "" || u.Scheme != "https" && u.Scheme != "http" {
		ps.add(p+".redirect_url", "%q is not an http(s) URL", s.RedirectURL)
	} else if u.Path != "/console/sso/callback" || u.RawQuery != "" || u.Fragment != "" {
		ps.add(p+".redirect_url", "the path must be /console/sso/callback (the console's callback), not %q", u.Path)
	} else if !a.answersTo(u.Hostname()) {
		ps.add(p+".redirect_url", "the admin listener does not answer to %q: add it to admin.allowed_hosts", u.Hostname())
	}
	for i, sc := range s.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\r\n") {
			ps.add(fmt.Sprintf("%s.scopes[%d]", p, i), "a scope is one word")
		}
	}
	if strings.ContainsAny(s.RolesClaim, " \t\r\n") {
		ps.add(p+".roles_claim", "%q is not a claim's name", s.RolesClaim)
	}
	mapped := 0
	for _, l := range []struct {
		name string
		vals []string
	}{{"admin", s.Admin}, {"operator", s.Operator}, {"viewer", s.Viewer}} {
		for i, v := range l.vals {
			if strings.TrimSpace(v) == "" {
				ps.add(fmt.Sprintf("%s.%s[%d]", p, l.name, i), "an empty value would match nothing")
			}
			mapped++
		}
	}
	switch s.DefaultRole {
	case "", "none", RoleViewer, RoleOperator:
	case RoleAdmin:
		ps.add(p+".default_role", "admin cannot be the default role (everyone the provider signs in would manage keys); map the admins' groups in admin.sso.admin")
	default:
		ps.add(p+".default_role", "%q is not viewer, operator or none", s.DefaultRole)
	}
	if mapped == 0 && (s.DefaultRole == "" || s.DefaultRole == "none") {
		ps.add(p, "nobody could sign in: map a group or role to admin, operator or viewer, or set default_role")
	}
}

// answersTo reports whether the admin listener answers to host in the
// Host header: an IP address, localhost, its listen host or one of
// allowed_hosts.
func (a *Admin) answersTo(host string) bool {
	if host == "localhost" || net.ParseIP(host) != nil {
		return true
	}
	if h, _, err := net.SplitHostPort(a.Listen); err == nil && strings.EqualFold(h, host) {
		return true
	}
	for _, ah := range a.AllowedHosts {
		if h, _, err := net.SplitHostPort(ah); err == nil {
			ah = h
		}
		if strings.EqualFold(ah, host) {
			return true
		}
	}
	return false
}

// warnSSO warns of a single sign-on whose callback is plain http on a
// host other than loopback: the code, and then the console's session
// cookie, would cross the network in clear.
func (c *Config) warnSSO() Problems {
	if c.Admin == nil || c.Admin.SSO == nil {
		return nil
	}
	u, err := url.Parse(c.Admin.SSO.RedirectURL)
	if err != nil || u.Scheme != "http" || isLoopback(u.Hostname()) {
		return nil
	}
	return Problems{{Path: "admin.sso.redirect_url",
		Msg: "the callback is plain http on " + u.Hostname() + ": the provider's code and the console's session cookie cross the network in clear; serve the admin listener over TLS (admin.tls) or behind an https proxy, and write https here"}}
}
