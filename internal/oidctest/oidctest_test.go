package oidctest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

const (
	client   = "app"
	secret   = "app-secret-0123456789"
	redirect = "http://127.0.0.1:9/cb"
	verifier = "verifier-0123456789-0123456789-0123456789-abc"
)

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func challenge(v string) string {
	s := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

// authorize asks for a code with q's parameters over the defaults and
// returns the redirect's query (or the error's status).
func authorize(t *testing.T, p *Provider, over url.Values) (int, url.Values) {
	t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect}, "scope": {"openid email"},
		"state": {"st"}, "nonce": {"n0"}, "code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"}}
	for k, v := range over {
		q[k] = v
	}
	resp, err := noRedirect.Get(p.Issuer + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return resp.StatusCode, nil
	}
	u, _ := url.Parse(resp.Header.Get("Location"))
	return resp.StatusCode, u.Query()
}

// token trades code with the form's fields over the defaults.
func token(t *testing.T, p *Provider, code string, over url.Values) (int, map[string]any) {
	t.Helper()
	f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"code_verifier": {verifier}, "client_id": {client}, "client_secret": {secret}}
	for k, v := range over {
		f[k] = v
	}
	resp, err := http.PostForm(p.Issuer+"/token", f)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestAuthorizeAndToken(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	p := Start(t, client, secret, redirect, map[string]User{"ada": {Subject: "s1", Email: "ada@example.com", Claims: map[string]any{"groups": []string{"g"}}}})
	p.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	p.SignInAs("ada")
	code := func() string {
		st, q := authorize(t, p, nil)
		if st != http.StatusFound || q.Get("code") == "" || q.Get("state") != "st" {
			t.Fatalf("authorize: %d %v", st, q)
		}
		return q.Get("code")
	}

	c := code()
	st, out := token(t, p, c, nil)
	if st != http.StatusOK {
		t.Fatalf("token: %d %v", st, out)
	}
	jws, err := jose.ParseSignedCompact(out["id_token"].(string), []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := jws.Verify(&p.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	json.Unmarshal(payload, &claims)
	if claims["iss"] != p.Issuer || claims["aud"] != client || claims["nonce"] != "n0" || claims["email"] != "ada@example.com" ||
		claims["exp"].(float64) != float64(now.Add(5*time.Minute).Unix()) {
		t.Fatalf("claims %v", claims)
	}
	if st, out := token(t, p, c, nil); st != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Fatalf("a code used twice: %d %v", st, out)
	}

	for _, tc := range []struct {
		name   string
		over   url.Values
		status int
		err    string
	}{
		{"wrong verifier", url.Values{"code_verifier": {"another-verifier-0123456789-0123456789-xyz"}}, http.StatusBadRequest, "invalid_grant"},
		{"wrong redirect", url.Values{"redirect_uri": {"http://127.0.0.1:9/other"}}, http.StatusBadRequest, "invalid_grant"},
		{"wrong secret", url.Values{"client_secret": {"guess"}}, http.StatusUnauthorized, "invalid_client"},
		{"wrong client", url.Values{"client_id": {"other"}}, http.StatusUnauthorized, "invalid_client"},
		{"wrong grant type", url.Values{"grant_type": {"password"}}, http.StatusBadRequest, "unsupported_grant_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if st, out := token(t, p, code(), tc.over); st != tc.status || out["error"] != tc.err {
				t.Fatalf("%d %v, want %d %s", st, out, tc.status, tc.err)
			}
		})
	}
	t.Run("expired code", func(t *testing.T) {
		c := code()
		mu.Lock()
		now = now.Add(codeLife + time.Second)
		mu.Unlock()
		if st, out := token(t, p, c, nil); st != http.StatusBadRequest || out["error"] != "invalid_grant" {
			t.Fatalf("%d %v", st, out)
		}
	})
	for _, tc := range []struct {
		name   string
		over   url.Values
		status int
		err    string
	}{
		{"unknown client", url.Values{"client_id": {"other"}}, http.StatusBadRequest, ""},
		{"unregistered redirect", url.Values{"redirect_uri": {"http://evil.example/cb"}}, http.StatusBadRequest, ""},
		{"no PKCE", url.Values{"code_challenge": {""}}, http.StatusFound, "invalid_request"},
		{"plain PKCE", url.Values{"code_challenge_method": {"plain"}}, http.StatusFound, "invalid_request"},
		{"no openid scope", url.Values{"scope": {"email"}}, http.StatusFound, "invalid_scope"},
		{"unknown user", url.Values{"user": {"nobody"}}, http.StatusFound, "access_denied"},
	} {
		t.Run("authorize "+tc.name, func(t *testing.T) {
			st, q := authorize(t, p, tc.over)
			if st != tc.status || q.Get("error") != tc.err || q.Get("code") != "" {
				t.Fatalf("%d %v, want %d %q", st, q, tc.status, tc.err)
			}
		})
	}
	t.Run("tamper", func(t *testing.T) {
		p.Tamper(func(c map[string]any) { c["aud"] = "other" })
		defer p.Tamper(nil)
		st, out := token(t, p, code(), nil)
		if st != http.StatusOK || !strings.Contains(string(mustPayload(t, p, out["id_token"].(string))), `"aud":"other"`) {
			t.Fatalf("tampered token: %d %v", st, out)
		}
	})
}

func mustPayload(t *testing.T, p *Provider, tok string) []byte {
	t.Helper()
	jws, err := jose.ParseSignedCompact(tok, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	b, err := jws.Verify(&p.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Without a chosen user, the authorization endpoint shows a page with a
// button per user that repeats the request.
func TestChooserPage(t *testing.T) {
	p := Start(t, client, secret, redirect, map[string]User{"ada": {Subject: "s1"}, "bob": {Subject: "s2"}})
	resp, err := http.Get(p.Issuer + "/authorize?" + url.Values{"client_id": {client}, "redirect_uri": {redirect}, "response_type": {"code"},
		"scope": {"openid"}, "code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"}, "state": {"st"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	page := string(b)
	for _, w := range []string{`name="user" value="ada"`, `name="user" value="bob"`, `name="state" value="st"`} {
		if !strings.Contains(page, w) {
			t.Errorf("page lacks %s:\n%s", w, page)
		}
	}
}
