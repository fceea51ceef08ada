// Package gcptest mints Google access tokens for tests without a network:
// a local OAuth 2.0 token endpoint and a service-account key file whose
// token_uri points at it, as the Google auth library reads it.
package gcptest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Account is a service account whose tokens come from a local endpoint.
type Account struct {
	// File is the service-account key file (credentials_file).
	File string
	// Token is the access token the endpoint mints.
	Token string
	// Server is the token endpoint.
	Server *httptest.Server

	requests atomic.Int32
}

// Requests is how many tokens were asked for.
func (a *Account) Requests() int { return int(a.requests.Load()) }

// NewAccount writes a service-account key file into a temporary directory
// and starts its token endpoint, which verifies the signed JWT assertion
// (RS256 with the file's key, issuer the account, audience the endpoint)
// and answers token, valid for an hour. Both end with the test.
func NewAccount(t testing.TB, token string) *Account {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	a := &Account{Token: token}
	const email = "switchover-test@sim-project.iam.gserviceaccount.com"
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.requests.Add(1)
		if err := checkAssertion(r, &key.PublicKey, email, a.Server.URL+"/token"); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"invalid_grant","error_description":%q}`, err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"expires_in":3600,"token_type":"Bearer"}`, token)
	}))
	t.Cleanup(a.Server.Close)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "sim-project", "private_key_id": "test-key-1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": email, "client_id": "1", "token_uri": a.Server.URL + "/token",
	})
	a.File = filepath.Join(t.TempDir(), "service-account.json")
	if err := os.WriteFile(a.File, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

func checkAssertion(r *http.Request, key *rsa.PublicKey, iss, aud string) error {
	if err := r.ParseForm(); err != nil {
		return err
	}
	if g := r.Form.Get("grant_type"); g != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		return fmt.Errorf("grant_type %q", g)
	}
	c, err := VerifyAssertion(r.Form.Get("assertion"), key)
	if err != nil {
		return err
	}
	if c.Iss != iss || c.Aud != aud || !strings.Contains(c.Scope, "https://www.googleapis.com/auth/cloud-platform") {
		return fmt.Errorf("claims %+v", c)
	}
	return nil
}

// Claims are the claims of a service account's JWT assertion that a
// token endpoint checks.
type Claims struct{ Iss, Aud, Scope string }

// VerifyAssertion checks a service account's JWT assertion (RFC 7523)
// signed RS256 with key and returns its claims for the caller to check.
func VerifyAssertion(jwt string, key *rsa.PublicKey) (Claims, error) {
	var c Claims
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return c, fmt.Errorf("assertion has %d parts", len(parts))
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return c, err
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig); err != nil {
		return c, fmt.Errorf("signature: %w", err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return c, err
	}
	err = json.Unmarshal(raw, &c)
	return c, err
}
