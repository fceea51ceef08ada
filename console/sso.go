package console

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/switchover-gw/switchover/config"
)

// Single sign-on (admin.sso): the authorization-code flow of OpenID
// Connect with PKCE. GET /console/sso/start makes a state, a nonce and a
// PKCE verifier, keeps them on the server under a random token set in a
// short-lived cookie of its own (SameSite=Lax: the provider's redirect
// back is a cross-site navigation), and sends the browser to the
// provider. GET /console/sso/callback takes the pending sign-in of that
// cookie (once), checks the state, trades the code with the verifier,
// verifies the ID token (signature, issuer, audience, expiry) and its
// nonce, and maps the claims to a role. Tokens are never logged, kept or
// shown; only the person's identity is.

// ssoCookie is the pending sign-in's cookie; its path is the callback's.
const ssoCookie = "switchover_sso"

// Pending sign-ins: each lasts ssoPendingLife, at most maxPending are
// kept, and at most maxPendingPerAddr of one remote address (the oldest
// dropped first in each case), so that a loop of starts from one address
// cannot push out everyone else's sign-ins.
const (
	ssoPendingLife    = 10 * time.Minute
	maxPending        = 10000
	maxPendingPerAddr = 20
	// ssoTimeout bounds each call to the provider (discovery, keys,
	// token).
	ssoTimeout = 10 * time.Second
)

// Defaults of admin.sso.
const (
	defaultSSOName    = "single sign-on"
	defaultRolesClaim = "groups"
)

// pendingSSO is a sign-in sent to the provider, waiting for its return.
type pendingSSO struct {
	state, nonce, verifier string
	addr                   string // the remote address that started it
	at                     time.Time
}

// ssoState is the console's single sign-on: the provider of the
// configuration in force (discovered at the first sign-in, again when
// admin.sso changes) and the pending sign-ins. It is safe for concurrent
// use.
type ssoState struct {
	client *http.Client

	mu      sync.Mutex
	cfg     config.SSO // what prov was made for
	prov    *oidc.Provider
	pending map[[sha256.Size]byte]pendingSSO
}

// ssoConfig is admin.sso in force, or nil.
func (c *Console) ssoConfig() *config.SSO {
	a := c.gw.Config().Admin
	if a == nil {
		return nil
	}
	return a.SSO
}

// ssoName is the provider's name on the login page.
func ssoName(s *config.SSO) string {
	if s.Name != "" {
		return s.Name
	}
	return defaultSSOName
}

// provider returns the OpenID provider of s, discovering it the first
// time and whenever s changes; a failed discovery is not kept.
func (st *ssoState) provider(ctx context.Context, s *config.SSO) (*oidc.Provider, error) {
	st.mu.Lock()
	if st.prov != nil && reflect.DeepEqual(st.cfg, *s) {
		p := st.prov
		st.mu.Unlock()
		return p, nil
	}
	st.mu.Unlock()
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, st.client), ssoTimeout)
	defer cancel()
	p, err := oidc.NewProvider(ctx, s.Issuer)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	st.cfg, st.prov = *s, p
	st.mu.Unlock()
	return p, nil
}

// oauth2Config is the client of s at p.
func oauth2Config(s *config.SSO, p *oidc.Provider) *oauth2.Config {
	scopes := s.Scopes
	if len(scopes) == 0 {
		scopes = []string{oidc.ScopeOpenID, "profile", "email"}
	}
	if !slices.Contains(scopes, oidc.ScopeOpenID) {
		scopes = append([]string{oidc.ScopeOpenID}, scopes...)
	}
	return &oauth2.Config{ClientID: s.ClientID, ClientSecret: s.ClientSecret.Value(), RedirectURL: s.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: scopes}
}

// keep stores a pending sign-in under the cookie token tok.
func (st *ssoState) keep(tok string, p pendingSSO) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.pending == nil {
		st.pending = map[[sha256.Size]byte]pendingSSO{}
	}
	n := 0 // p.addr's
	for k, v := range st.pending {
		switch {
		case p.at.Sub(v.at) >= ssoPendingLife:
			delete(st.pending, k)
		case v.addr == p.addr:
			n++
		}
	}
	if n >= maxPendingPerAddr {
		st.dropOldest(func(v pendingSSO) bool { return v.addr == p.addr })
	} else if len(st.pending) >= maxPending {
		st.dropOldest(func(pendingSSO) bool { return true })
	}
	st.pending[sha256.Sum256([]byte(tok))] = p
}

// dropOldest drops the oldest pending sign-in of those that match.
// Requires external locking.
func (st *ssoState) dropOldest(match func(pendingSSO) bool) {
	var oldest [sha256.Size]byte
	var at time.Time
	for k, v := range st.pending {
		if match(v) && (at.IsZero() || v.at.Before(at)) {
			oldest, at = k, v.at
		}
	}
	delete(st.pending, oldest)
}

// take returns and forgets tok's pending sign-in, if it is alive.
func (st *ssoState) take(tok string, now time.Time) (pendingSSO, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	k := sha256.Sum256([]byte(tok))
	p, ok := st.pending[k]
	delete(st.pending, k)
	return p, ok && now.Sub(p.at) < ssoPendingLife
}

// ssoStart sends the browser to the provider.
func (c *Console) ssoStart(w http.ResponseWriter, r *http.Request) {
	s := c.ssoConfig()
	if s == nil {
		http.NotFound(w, r)
		return
	}
	p, err := c.sso.provider(r.Context(), s)
	if err != nil {
		c.log.Warn("console: single sign-on: the provider's discovery failed", "issuer", s.Issuer, "error", err)
		c.renderLogin(w, http.StatusBadGateway, "Sign-in with "+ssoName(s)+" is not available: the identity provider did not answer. Try again, or sign in with a key.")
		return
	}
	pend := pendingSSO{state: newToken(), nonce: newToken(), verifier: oauth2.GenerateVerifier(), addr: remoteIP(r), at: c.now()}
	tok := newToken()
	c.sso.keep(tok, pend)
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: tok, Path: "/console/sso", MaxAge: int(ssoPendingLife / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	u := oauth2Config(s, p).AuthCodeURL(pend.state, oidc.Nonce(pend.nonce), oauth2.S256ChallengeOption(pend.verifier))
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// errSSO is a sign-in the console refuses; its text is for the page.
type errSSO struct {
	status int
	page   string // what the person is told
	log    string // what the log and the timeline are told (no token)
	user   string // who, once known
}

func (e *errSSO) Error() string { return e.log }

// ssoCallback completes a sign-in the provider sent back.
func (c *Console) ssoCallback(w http.ResponseWriter, r *http.Request) {
	s := c.ssoConfig()
	if s == nil {
		http.NotFound(w, r)
		return
	}
	// The pending sign-in's cookie is spent whatever happens next.
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: "", Path: "/console/sso", MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	user, role, values, err := c.ssoVerify(r, s)
	ip := remoteIP(r)
	if err != nil {
		var e *errSSO
		if !errors.As(err, &e) {
			e = &errSSO{status: http.StatusBadGateway, page: "The sign-in could not be completed.", log: err.Error()}
		}
		if e.user != "" {
			// A person the provider vouched for, refused by the console:
			// always in the audit trail, under their name.
			c.log.Warn("console: single sign-on refused", "user", e.user, "remote", ip, "reason", e.log)
			c.recordBy("console:sso_refused", e.user, e.user+" signed in with "+ssoName(s)+" from "+ip+" and was refused: "+e.log)
		} else {
			c.refused("console:sso_refused", "a sign-in with "+ssoName(s)+" from "+ip+" was refused: "+e.log, "remote", ip)
		}
		c.renderLogin(w, e.status, e.page)
		return
	}
	if ck, err := r.Cookie(cookieName); err == nil {
		c.sessions.end(ck.Value) // a sign-in replaces the browser's session, never adopts it
	}
	tok, _ := c.sessions.startGranted(user, role, grant{issuer: s.Issuer, client: s.ClientID, values: values}, c.now())
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: "/console", HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	c.log.Info("console: signed in", "user", user, "role", role, "remote", ip, "with", ssoName(s))
	c.recordBy("console:sign_in", user, user+" signed in to the console as "+role+" with "+ssoName(s)+" from "+ip)
	// A page, not a redirect: the browser arrived here from the provider,
	// and a redirect in that chain would not send the SameSite=Strict
	// session cookie; a same-origin page's navigation does.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(signedInPage))
}

// signedInPage leads a browser just signed in to the overview.
const signedInPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/console/">
<title>Signed in · switchover console</title><link rel="stylesheet" href="/console/static/console.css"></head>
<body><p>Signed in. <a href="/console/" id="continue">Continue to the console</a>.</p></body></html>
`

// ssoVerify checks the provider's answer and returns the person's
// identity and role.
func (c *Console) ssoVerify(r *http.Request, s *config.SSO) (user, role string, values []string, err error) {
	q := r.URL.Query()
	ck, cerr := r.Cookie(ssoCookie)
	if cerr != nil {
		return "", "", nil, &errSSO{status: http.StatusBadRequest, page: "This sign-in was not started in this browser, or it took too long. Start again.", log: "no sign-in was pending in this browser"}
	}
	pend, ok := c.sso.take(ck.Value, c.now())
	switch {
	case !ok:
		return "", "", nil, &errSSO{status: http.StatusBadRequest, page: "This sign-in has expired or was already used. Start again.", log: "the sign-in had expired or was already completed"}
	case !sameToken(q.Get("state"), pend.state):
		return "", "", nil, &errSSO{status: http.StatusBadRequest, page: "This sign-in does not match the one this browser started. Start again.", log: "the state did not match"}
	case q.Get("error") != "":
		code := safeCode(q.Get("error"))
		return "", "", nil, &errSSO{status: http.StatusUnauthorized, page: ssoName(s) + " did not sign you in (" + code + ").", log: "the provider answered " + code}
	case q.Get("code") == "":
		return "", "", nil, &errSSO{status: http.StatusBadRequest, page: "The identity provider sent no code. Start again.", log: "no code"}
	}
	p, err := c.sso.provider(r.Context(), s)
	if err != nil {
		return "", "", nil, &errSSO{status: http.StatusBadGateway, page: "The identity provider did not answer. Try again.", log: "discovery failed: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(r.Context(), c.sso.client), ssoTimeout)
	defer cancel()
	tok, err := oauth2Config(s, p).Exchange(ctx, q.Get("code"), oauth2.VerifierOption(pend.verifier))
	if err != nil {
		return "", "", nil, &errSSO{status: http.StatusUnauthorized, page: "The identity provider did not accept this sign-in's code. Start again.", log: "the code was refused: " + exchangeError(err)}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", "", nil, &errSSO{status: http.StatusBadGateway, page: "The identity provider sent no ID token.", log: "no id_token in the token answer"}
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: s.ClientID, Now: c.now}).Verify(ctx, raw)
	if err != nil {
		return "", "", nil, &errSSO{status: http.StatusUnauthorized, page: "The identity provider's ID token was not valid.", log: "the ID token was refused: " + verifyError(err)}
	}
	if !sameToken(idt.Nonce, pend.nonce) {
		return "", "", nil, &errSSO{status: http.StatusUnauthorized, page: "The identity provider's ID token was not valid.", log: "the ID token's nonce did not match"}
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return "", "", nil, &errSSO{status: http.StatusBadGateway, page: "The identity provider's ID token was not valid.", log: "its claims did not decode"}
	}
	user = identity(claims, idt.Subject)
	values = claimValues(s, claims)
	role = mapRole(s, values)
	if role == "" {
		claim := s.RolesClaim
		if claim == "" {
			claim = defaultRolesClaim
		}
		why := "no role is mapped to its " + claim
		if names, ok := claims["_claim_names"].(map[string]any); ok && names[claim] != nil {
			// Entra ID's group overage: a person in more groups than a
			// token holds gets a pointer to them instead.
			why = "the provider left the " + claim + " out of the token (too many groups: map app roles with roles_claim: roles, or emit only the groups assigned to the application)"
		}
		return "", "", nil, &errSSO{status: http.StatusForbidden, user: user,
			page: "You signed in with " + ssoName(s) + " as " + user + ", but no role of the console is given to you. Ask an admin to map one of your groups or roles (the claim " + claim + ") in admin.sso.",
			log:  why}
	}
	return user, role, values, nil
}

// identity is who a person is, from the ID token's claims: email, else
// preferred_username, else the subject; made safe to show and bounded.
func identity(claims map[string]any, sub string) string {
	for _, k := range []string{"email", "preferred_username"} {
		if v, ok := claims[k].(string); ok {
			if v = cleanIdentity(v); v != "" {
				return v
			}
		}
	}
	return cleanIdentity("sub:" + sub)
}

// cleanIdentity drops control and format characters and bounds the
// length (128 runes).
func cleanIdentity(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	if r := []rune(s); len(r) > 128 {
		s = string(r[:128])
	}
	return s
}

// maxClaimValues bounds the roles claim's values a session keeps (Entra
// ID sends at most 200 groups).
const maxClaimValues = 1000

// claimValues are the values of s's roles claim: a list of strings or
// one string.
func claimValues(s *config.SSO, claims map[string]any) []string {
	name := s.RolesClaim
	if name == "" {
		name = defaultRolesClaim
	}
	var vals []string
	switch v := claims[name].(type) {
	case string:
		vals = []string{v}
	case []any:
		for _, e := range v {
			if str, ok := e.(string); ok && len(vals) < maxClaimValues {
				vals = append(vals, str)
			}
		}
	}
	return vals
}

// mapRole is the strongest role the roles claim's values map to, else
// the default role, else "".
func mapRole(s *config.SSO, vals []string) string {
	has := func(l []string) bool {
		for _, v := range vals {
			if slices.Contains(l, v) {
				return true
			}
		}
		return false
	}
	switch {
	case has(s.Admin):
		return RoleAdmin
	case has(s.Operator):
		return RoleOperator
	case has(s.Viewer):
		return RoleViewer
	case s.DefaultRole == RoleViewer || s.DefaultRole == RoleOperator:
		return s.DefaultRole
	}
	return ""
}

// safeCode is an OAuth error code made safe to show: letters, digits
// and _ only, at most 64.
func safeCode(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') {
			return r
		}
		return -1
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// exchangeError says why the token endpoint refused, by its OAuth error
// code (never its body, which a provider may fill with anything).
func exchangeError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return safeCode(re.ErrorCode)
		}
		if re.Response != nil {
			return fmt.Sprintf("status %d", re.Response.StatusCode)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the provider did not answer in time"
	}
	return "the token endpoint could not be reached"
}

// verifyError says why an ID token was refused, by the checks go-oidc
// names by type; other messages of go-oidc name no token either.
func verifyError(err error) string {
	var exp *oidc.TokenExpiredError
	if errors.As(err, &exp) {
		return "expired at " + exp.Expiry.UTC().Format(time.RFC3339)
	}
	return err.Error()
}
