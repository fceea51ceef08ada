// Package entra supplies Microsoft Entra ID bearer tokens for Azure OpenAI
// backends, as the guide to client-side failover between Azure OpenAI resources recommends over keys: one token audience and one
// code path for every region. Credentials come from the Azure identity
// library (client secret, federated workload identity token file, managed
// identity); this package adds what a gateway needs on top: one cached
// token shared by every backend that uses the same identity and audience,
// refreshed in the background before it expires, so no request waits for a
// token unless the cache is empty.
package entra

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// DefaultScope is the Azure OpenAI (Cognitive Services) token audience.
const DefaultScope = "https://cognitiveservices.azure.com/.default"

// Settings name one Entra ID identity. Exactly one of ClientSecret,
// FederatedTokenFile and ManagedIdentity is used.
type Settings struct {
	// TenantID and ClientID identify the app registration (not needed for
	// a system-assigned managed identity; ClientID then picks a
	// user-assigned one).
	TenantID string
	ClientID string
	// ClientSecret uses the client-credentials flow with a secret.
	ClientSecret string
	// FederatedTokenFile uses a workload identity: the file holds a
	// federated token (Kubernetes writes and rotates it), read for every
	// token request.
	FederatedTokenFile string
	// ManagedIdentity uses the managed identity of the host (IMDS, App
	// Service, Functions, Arc…).
	ManagedIdentity bool
	// Scope is the token audience. Default DefaultScope.
	Scope string
	// AuthorityHost is the Entra ID endpoint, for sovereign clouds. Default
	// the public cloud (https://login.microsoftonline.com/).
	AuthorityHost string
}

// key identifies settings for sharing: two backends with the same identity
// and audience share one token. The secret is hashed, never kept as text.
func (s Settings) key() string {
	h := sha256.Sum256([]byte(s.ClientSecret))
	return strings.Join([]string{s.TenantID, s.ClientID, hex.EncodeToString(h[:8]), s.FederatedTokenFile,
		fmt.Sprint(s.ManagedIdentity), s.scope(), s.AuthorityHost}, "|")
}

func (s Settings) scope() string {
	if s.Scope == "" {
		return DefaultScope
	}
	return s.Scope
}

// Credential returns the Azure identity credential for s. transport, if
// not nil, sends its token requests (tests use a local endpoint).
func (s Settings) Credential(transport policy.Transporter) (azcore.TokenCredential, error) {
	opts := azcore.ClientOptions{Transport: transport}
	if s.AuthorityHost != "" {
		opts.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: s.AuthorityHost}
	}
	switch {
	case s.ManagedIdentity:
		o := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: opts}
		if s.ClientID != "" {
			o.ID = azidentity.ClientID(s.ClientID)
		}
		return azidentity.NewManagedIdentityCredential(o)
	case s.FederatedTokenFile != "":
		file := s.FederatedTokenFile
		return azidentity.NewClientAssertionCredential(s.TenantID, s.ClientID, func(context.Context) (string, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return "", fmt.Errorf("entra: reading the federated token file: %w", err)
			}
			return strings.TrimSpace(string(b)), nil
		}, &azidentity.ClientAssertionCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: s.AuthorityHost != ""})
	case s.ClientSecret != "":
		return azidentity.NewClientSecretCredential(s.TenantID, s.ClientID, s.ClientSecret,
			&azidentity.ClientSecretCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: s.AuthorityHost != ""})
	}
	return nil, errors.New("entra: set one of client_secret, federated_token_file or managed_identity")
}

// Clock tells the time.
type Clock interface{ Now() time.Time }

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// Source is a cached token of one identity and audience. It implements
// route.TokenSource and is safe for concurrent use.
type Source struct {
	cred  azcore.TokenCredential
	scope string
	// refreshBefore: a token this close to expiry is refreshed in the
	// background while it is still served; an expired one is fetched in
	// the foreground.
	refreshBefore time.Duration
	clock         Clock

	mu         sync.Mutex
	token      azcore.AccessToken
	refreshing bool
	fetch      chan struct{} // closed when the foreground fetch in flight ends
	fetchErr   error
}

// NewSource returns a token source over cred. refreshBefore of 0 means 5
// minutes; clock nil means the wall clock.
func NewSource(cred azcore.TokenCredential, scope string, refreshBefore time.Duration, clock Clock) *Source {
	if refreshBefore <= 0 {
		refreshBefore = 5 * time.Minute
	}
	if clock == nil {
		clock = wallClock{}
	}
	if scope == "" {
		scope = DefaultScope
	}
	return &Source{cred: cred, scope: scope, refreshBefore: refreshBefore, clock: clock}
}

// Token returns a valid token: the cached one while it has more than
// refreshBefore left; the cached one while a background refresh runs when
// it is closer to expiry; otherwise a fresh one, fetched once for all
// callers waiting at the same time.
func (s *Source) Token(ctx context.Context) (string, error) {
	now := s.clock.Now()
	s.mu.Lock()
	tok := s.token
	if tok.Token != "" && now.Before(tok.ExpiresOn) {
		if now.Add(s.refreshBefore).After(tok.ExpiresOn) && !s.refreshing {
			s.refreshing = true
			go s.refresh()
		}
		s.mu.Unlock()
		return tok.Token, nil
	}
	wait := s.fetch
	if wait == nil {
		wait = make(chan struct{})
		s.fetch = wait
		go s.foreground(wait)
	}
	s.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token.Token != "" && s.clock.Now().Before(s.token.ExpiresOn) {
		return s.token.Token, nil
	}
	if s.fetchErr != nil {
		return "", s.fetchErr
	}
	return "", errors.New("entra: no token")
}

func (s *Source) get() (azcore.AccessToken, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{s.scope}})
}

// foreground fetches a token for callers that have none, independent of
// any one caller's context.
func (s *Source) foreground(done chan struct{}) {
	tok, err := s.get()
	s.mu.Lock()
	if err == nil {
		s.token = tok
	}
	s.fetchErr = err
	s.fetch = nil
	s.mu.Unlock()
	close(done)
}

// refresh replaces a token that is about to expire; on failure the old one
// is served until it expires, and the next call tries again.
func (s *Source) refresh() {
	tok, err := s.get()
	s.mu.Lock()
	if err == nil {
		s.token = tok
	}
	s.refreshing = false
	s.mu.Unlock()
}

// Registry hands out one Source per identity and audience, so that every
// backend using the same one shares its token. It is safe for concurrent
// use.
type Registry struct {
	// Transport, if set, sends token requests (tests).
	Transport policy.Transporter
	// Clock, if set, is used by every Source.
	Clock Clock
	// RefreshBefore is passed to every Source.
	RefreshBefore time.Duration

	mu      sync.Mutex
	sources map[string]*Source
}

// Source returns the shared source for s, creating it on first use.
func (r *Registry) Source(s Settings) (*Source, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if src, ok := r.sources[s.key()]; ok {
		return src, nil
	}
	cred, err := s.Credential(r.Transport)
	if err != nil {
		return nil, err
	}
	src := NewSource(cred, s.scope(), r.RefreshBefore, r.Clock)
	if r.sources == nil {
		r.sources = map[string]*Source{}
	}
	r.sources[s.key()] = src
	return src, nil
}

// HTTPTransport adapts an *http.Client to the identity library's transport.
type HTTPTransport struct{ Client *http.Client }

// Do implements policy.Transporter.
func (t HTTPTransport) Do(req *http.Request) (*http.Response, error) { return t.Client.Do(req) }
