// Package oidctest is a small OpenID Connect provider for tests: a
// discovery document, a JSON Web Key Set, an authorization endpoint that
// signs in one of its users (chosen by the test, or on a page a browser
// clicks) and sends the browser back with a code, and a token endpoint
// that trades the code, once, for an RS256-signed ID token. It checks
// what a real provider checks: the client's id, secret and redirect URI,
// the PKCE verifier (S256 only), and that a code is used once and soon.
//
// Tests tamper with the ID token through Provider.Tamper (a wrong
// audience, nonce or expiry) to see the relying party refuse it. Not for
// use outside tests.
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// User is a person the provider signs in.
type User struct {
	// Subject is the sub claim; Email and PreferredUsername, when set,
	// the claims of those names.
	Subject, Email, PreferredUsername string
	// Claims are further claims of the ID token: groups, roles…
	Claims map[string]any
}

// Provider is the test provider. Configure it before the first sign-in;
// SignInAs and Tamper may change between sign-ins. It is safe for
// concurrent use.
type Provider struct {
	// Issuer is the provider's URL (the test server's, on 127.0.0.1). A
	// test may set it, before the first request, to another name of the
	// server (http://localhost:PORT), so that a browser takes the
	// provider for another site than a relying party on 127.0.0.1, as a
	// real provider is.
	Issuer string
	// ClientID and ClientSecret are the one client's; RedirectURI is the
	// only redirect URI registered for it.
	ClientID, ClientSecret, RedirectURI string

	srv *httptest.Server
	key *rsa.PrivateKey
	kid string

	mu     sync.Mutex
	users  map[string]User
	as     string
	tamper func(claims map[string]any)
	codes  map[string]*grant
	issued []string
	now    func() time.Time
}

type grant struct {
	user                       User
	nonce, challenge, redirect string
	at                         time.Time
}

// codeLife is how long a code may be traded.
const codeLife = time.Minute

// Start starts a provider on loopback for t, with the client's id,
// secret and redirect URI and its users by name; the server stops when
// the test ends.
func Start(t testing.TB, clientID, clientSecret, redirectURI string, users map[string]User) *Provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{ClientID: clientID, ClientSecret: clientSecret, RedirectURI: redirectURI,
		key: key, kid: "test-key-1", users: users, codes: map[string]*grant{}, now: time.Now}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks", p.jwks)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	// A browser on the provider's page asks for its icon; none, and no
	// error in the page.
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	p.Issuer = p.srv.URL
	return p
}

// SignInAs makes the authorization endpoint sign in the user of that name
// at once, as a provider with a live session does; "" shows a page with a
// button per user instead.
func (p *Provider) SignInAs(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.as = name
}

// Tamper changes the claims of every ID token issued from now on, after
// the provider has set them; nil stops it.
func (p *Provider) Tamper(f func(claims map[string]any)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tamper = f
}

// SetClock sets the clock of the tokens' times and the codes' lifetime,
// for a relying party on an injected clock. Default time.Now.
func (p *Provider) SetClock(now func() time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.now = now
}

// Issued returns every token the token endpoint has sent (ID and access
// tokens), for tests that check none leaks.
func (p *Provider) Issued() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.issued)
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.Issuer,
		"authorization_endpoint":                p.Issuer + "/authorize",
		"token_endpoint":                        p.Issuer + "/token",
		"jwks_uri":                              p.Issuer + "/jwks",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
		"scopes_supported":                      []string{"openid", "profile", "email"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &p.key.PublicKey, KeyID: p.kid, Algorithm: string(jose.RS256), Use: "sig"},
	}})
}

// chooser is the page of the authorization endpoint when no user is
// chosen: a button per user, each a GET of the same request with user.
var chooser = template.Must(template.New("c").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test identity provider</title></head>
<body><h1>Test identity provider</h1><p>Sign in to {{.Client}} as:</p>
{{range .Users}}<form method="get" action="/authorize">{{range $k, $v := $.Query}}<input type="hidden" name="{{$k}}" value="{{index $v 0}}">{{end}}<button type="submit" name="user" value="{{.}}">{{.}}</button></form>
{{end}}</body></html>`))

func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// Like a real provider, a bad client or redirect URI is shown, never
	// sent back to the redirect URI.
	if q.Get("client_id") != p.ClientID {
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	}
	if q.Get("redirect_uri") != p.RedirectURI {
		http.Error(w, "redirect_uri is not registered for this client", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(p.RedirectURI)
	fail := func(code, desc string) {
		v := url.Values{"error": {code}, "error_description": {desc}, "state": {q.Get("state")}}
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "only code")
		return
	case !slices.Contains(strings.Fields(q.Get("scope")), "openid"):
		fail("invalid_scope", "openid is required")
		return
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		fail("invalid_request", "PKCE with S256 is required")
		return
	}
	p.mu.Lock()
	name := q.Get("user")
	if name == "" {
		name = p.as
	}
	u, ok := p.users[name]
	names := make([]string, 0, len(p.users))
	for n := range p.users {
		names = append(names, n)
	}
	p.mu.Unlock()
	if name == "" {
		slices.Sort(names)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		chooser.Execute(w, map[string]any{"Client": p.ClientID, "Users": names, "Query": q})
		return
	}
	if !ok {
		fail("access_denied", "no such user")
		return
	}
	code := random()
	p.mu.Lock()
	p.codes[code] = &grant{user: u, nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), at: p.now()}
	p.mu.Unlock()
	back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

// token trades a code for tokens: client authentication (basic or in
// the form), the code once and within codeLife, the same redirect URI,
// and the PKCE verifier.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, "invalid_request", err.Error())
		return
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != p.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(p.ClientSecret)) != 1 {
		w.Header().Set("WWW-Authenticate", `Basic realm="token"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client"})
		return
	}
	if r.PostForm.Get("grant_type") != "authorization_code" {
		oauthError(w, "unsupported_grant_type", "only authorization_code")
		return
	}
	p.mu.Lock()
	g := p.codes[r.PostForm.Get("code")]
	delete(p.codes, r.PostForm.Get("code")) // once, whatever follows
	now, tamper := p.now(), p.tamper
	p.mu.Unlock()
	switch {
	case g == nil:
		oauthError(w, "invalid_grant", "unknown or used code")
		return
	case now.Sub(g.at) > codeLife:
		oauthError(w, "invalid_grant", "expired code")
		return
	case r.PostForm.Get("redirect_uri") != g.redirect:
		oauthError(w, "invalid_grant", "redirect_uri differs from the authorization request's")
		return
	}
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		oauthError(w, "invalid_grant", "code_verifier does not match the code_challenge")
		return
	}
	claims := map[string]any{
		"iss": p.Issuer, "aud": p.ClientID, "sub": g.user.Subject,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
	}
	if g.nonce != "" {
		claims["nonce"] = g.nonce
	}
	if g.user.Email != "" {
		claims["email"] = g.user.Email
	}
	if g.user.PreferredUsername != "" {
		claims["preferred_username"] = g.user.PreferredUsername
	}
	for k, v := range g.user.Claims {
		claims[k] = v
	}
	if tamper != nil {
		tamper(claims)
	}
	idToken, err := p.sign(claims)
	if err != nil {
		oauthError(w, "server_error", err.Error())
		return
	}
	access := "at-" + random()
	p.mu.Lock()
	p.issued = append(p.issued, idToken, access)
	p.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 300, "id_token": idToken})
}

// sign makes a compact RS256 JWT of claims.
func (p *Provider) sign(claims map[string]any) (string, error) {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: p.key, KeyID: p.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := s.Sign(b)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

func oauthError(w http.ResponseWriter, code, desc string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func random() string {
	var b [24]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// String names the provider, for test logs.
func (p *Provider) String() string { return fmt.Sprintf("oidctest provider at %s", p.Issuer) }
