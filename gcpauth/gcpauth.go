// Package gcpauth supplies Google Cloud OAuth 2.0 access tokens for Vertex
// AI backends. Credentials come from Google's auth library
// (cloud.google.com/go/auth): a service-account key file, or Application
// Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, the gcloud user
// file, workload identity federation files, and the metadata server of
// Compute Engine, GKE workload identity, Cloud Run). The library caches
// each token and refreshes it in the background before it expires; this
// package adds one token source shared by every backend that uses the same
// credentials, so a reload or a second backend does not fetch again.
//
// Tokens are secrets: nothing here logs, prints or returns them except to
// the caller of Source.Token.
package gcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
)

// Scope is the OAuth 2.0 scope Vertex AI's API takes.
const Scope = "https://www.googleapis.com/auth/cloud-platform"

// Settings name one Google identity.
type Settings struct {
	// CredentialsFile is a credentials JSON file: a service-account key
	// ("type": "service_account"), a workload identity federation
	// configuration ("external_account"), an impersonated service account
	// or a gcloud user file ("authorized_user"). Empty means Application
	// Default Credentials: the file GOOGLE_APPLICATION_CREDENTIALS names,
	// else gcloud's application_default_credentials.json, else the
	// metadata server when running on Google Cloud.
	CredentialsFile string
}

// fileTypes are the credential files CredentialsFile may hold. The
// operator names the file, so it is trusted as configuration; the list
// still keeps out types that need an interactive flow or another universe.
var fileTypes = map[credentials.CredType]bool{
	credentials.ServiceAccount:                true,
	credentials.AuthorizedUser:                true,
	credentials.ExternalAccount:               true,
	credentials.ImpersonatedServiceAccount:    true,
	credentials.ExternalAccountAuthorizedUser: true,
}

// Detect returns the credentials s names, with the cloud-platform scope.
// client, if not nil, sends the token requests (tests point it at a local
// token endpoint through the file's token_uri). It reads files but makes no
// network call: tokens are fetched on first use.
func Detect(s Settings, client *http.Client) (*auth.Credentials, error) {
	opts := &credentials.DetectOptions{Scopes: []string{Scope}, Client: client}
	if s.CredentialsFile == "" {
		creds, err := credentials.DetectDefault(opts)
		if err != nil {
			return nil, fmt.Errorf("gcpauth: application default credentials: %w", err)
		}
		return creds, nil
	}
	b, err := os.ReadFile(s.CredentialsFile)
	if err != nil {
		return nil, fmt.Errorf("gcpauth: reading the credentials file: %w", err)
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("gcpauth: credentials file %s is not JSON: %w", s.CredentialsFile, err)
	}
	typ := credentials.CredType(head.Type)
	if !fileTypes[typ] {
		return nil, fmt.Errorf("gcpauth: credentials file %s has type %q: use a service_account key, an external_account (workload identity federation), impersonated_service_account or authorized_user file", s.CredentialsFile, head.Type)
	}
	creds, err := credentials.NewCredentialsFromJSON(typ, b, opts)
	if err != nil {
		// The library's messages name fields, never the key itself.
		return nil, fmt.Errorf("gcpauth: credentials file %s: %w", s.CredentialsFile, err)
	}
	return creds, nil
}

// Source is the token of one identity. It implements route.TokenSource and
// is safe for concurrent use.
type Source struct {
	tp auth.TokenProvider
}

// NewSource returns a source over tp, which caches its tokens (every
// auth.Credentials does).
func NewSource(tp auth.TokenProvider) *Source { return &Source{tp: tp} }

// Token returns a valid access token: the cached one until it nears
// expiry, else a fresh one.
func (s *Source) Token(ctx context.Context) (string, error) {
	t, err := s.tp.Token(ctx)
	if err != nil {
		return "", err
	}
	if t == nil || t.Value == "" {
		return "", errors.New("gcpauth: empty token")
	}
	return t.Value, nil
}

// String never shows the token.
func (s *Source) String() string { return "gcpauth.Source" }

// Registry hands out one Source per identity, so that every backend using
// the same credentials shares its token. It is safe for concurrent use.
type Registry struct {
	// Client, if set, sends token requests (tests).
	Client *http.Client

	mu      sync.Mutex
	sources map[Settings]*Source
}

// Source returns the shared source for s, detecting its credentials on
// first use.
func (r *Registry) Source(s Settings) (*Source, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if src, ok := r.sources[s]; ok {
		return src, nil
	}
	creds, err := Detect(s, r.Client)
	if err != nil {
		return nil, err
	}
	src := NewSource(creds)
	if r.sources == nil {
		r.sources = map[Settings]*Source{}
	}
	r.sources[s] = src
	return src, nil
}
