package entra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/switchover-gw/switchover/internal/fakeclock"
	"github.com/switchover-gw/switchover/internal/poll"
)

// fakeCred issues numbered tokens valid for ttl from clk's now; block, if
// set, holds every request until closed.
type fakeCred struct {
	clk   *fakeclock.Clock
	ttl   time.Duration
	calls atomic.Int32
	fail  atomic.Bool
	block chan struct{}
	got   chan struct{} // receives once per request started
}

func (f *fakeCred) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	n := f.calls.Add(1)
	if f.got != nil {
		f.got <- struct{}{}
	}
	if f.block != nil {
		<-f.block
	}
	if f.fail.Load() {
		return azcore.AccessToken{}, errors.New("entra down")
	}
	if len(o.Scopes) != 1 || o.Scopes[0] != DefaultScope {
		return azcore.AccessToken{}, fmt.Errorf("scopes %v", o.Scopes)
	}
	return azcore.AccessToken{Token: fmt.Sprintf("tok-%d", n), ExpiresOn: f.clk.Now().Add(f.ttl)}, nil
}

func TestSourceCachesAndRefreshesBeforeExpiry(t *testing.T) {
	// In a bubble (the credential is in memory), synctest.Wait tells when
	// the background refresh has finished.
	synctest.Test(t, func(t *testing.T) {
		clk := fakeclock.New()
		cred := &fakeCred{clk: clk, ttl: time.Hour, got: make(chan struct{}, 10)}
		s := NewSource(cred, "", 5*time.Minute, clk)
		ctx := context.Background()
		for i := 0; i < 3; i++ {
			if tok, err := s.Token(ctx); err != nil || tok != "tok-1" {
				t.Fatalf("token %q, %v", tok, err)
			}
		}
		if n := cred.calls.Load(); n != 1 {
			t.Fatalf("%d token requests for 3 calls, want 1", n)
		}
		// 56 minutes on: 4 minutes left, inside refreshBefore. The old token
		// is still served, and a refresh starts in the background.
		clk.Advance(56 * time.Minute)
		if tok, _ := s.Token(ctx); tok != "tok-1" {
			t.Fatalf("near expiry got %q, want the cached token while refreshing", tok)
		}
		<-cred.got
		<-cred.got
		// The refresh goroutine has its token; once it has stored it and
		// exited, every goroutine in the bubble is blocked.
		synctest.Wait()
		if tok, _ := s.Token(ctx); tok != "tok-2" {
			t.Fatalf("after the background refresh got %q, want tok-2", tok)
		}
		if n := cred.calls.Load(); n != 2 {
			t.Fatalf("%d token requests, want 2", n)
		}
	})
}

func TestSourceFetchesOnceForConcurrentCallers(t *testing.T) {
	clk := fakeclock.New()
	cred := &fakeCred{clk: clk, ttl: time.Hour, block: make(chan struct{}), got: make(chan struct{}, 100)}
	s := NewSource(cred, "", 0, clk)
	var wg sync.WaitGroup
	toks := make(chan string, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := s.Token(context.Background())
			if err != nil {
				t.Error(err)
			}
			toks <- tok
		}()
	}
	<-cred.got // the one fetch has started; all callers are waiting on it
	close(cred.block)
	wg.Wait()
	close(toks)
	for tok := range toks {
		if tok != "tok-1" {
			t.Fatalf("got %q", tok)
		}
	}
	if n := cred.calls.Load(); n != 1 {
		t.Fatalf("%d token requests for 20 concurrent callers, want 1", n)
	}
}

func TestSourceErrorsAndRecovers(t *testing.T) {
	clk := fakeclock.New()
	cred := &fakeCred{clk: clk, ttl: time.Hour}
	cred.fail.Store(true)
	s := NewSource(cred, "", 0, clk)
	if _, err := s.Token(context.Background()); err == nil {
		t.Fatal("no error while Entra is down")
	}
	cred.fail.Store(false)
	if tok, err := s.Token(context.Background()); err != nil || tok != "tok-2" {
		t.Fatalf("after recovery %q, %v", tok, err)
	}
	// A failed background refresh keeps serving the old token until it
	// expires.
	cred.fail.Store(true)
	clk.Advance(58 * time.Minute)
	if tok, err := s.Token(context.Background()); err != nil || tok != "tok-2" {
		t.Fatalf("during a failing refresh %q, %v", tok, err)
	}
}

func TestRegistrySharesByIdentityAndAudience(t *testing.T) {
	r := &Registry{}
	a := Settings{TenantID: "t", ClientID: "c", ClientSecret: "s1"}
	s1, err := r.Source(a)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := r.Source(a)
	b := a
	b.Scope = "https://other/.default"
	s3, _ := r.Source(b)
	c := a
	c.ClientSecret = "s2"
	s4, _ := r.Source(c)
	if s1 != s2 || s1 == s3 || s1 == s4 {
		t.Fatal("sources not shared by identity and audience")
	}
	if _, err := r.Source(Settings{TenantID: "t"}); err == nil {
		t.Fatal("settings with no credential accepted")
	}
}

// TestManagedIdentityAgainstLocalEndpoint gets tokens through the Azure
// identity library from a local token endpoint (the App Service managed
// identity protocol, selected by IDENTITY_ENDPOINT and IDENTITY_HEADER),
// and refreshes a token that is about to expire.
func TestManagedIdentityAgainstLocalEndpoint(t *testing.T) {
	var hits atomic.Int32
	var lifetime atomic.Int64
	lifetime.Store(int64(time.Hour / time.Second))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Identity-Header") != "local-secret" {
			http.Error(w, "bad identity header", http.StatusUnauthorized)
			return
		}
		if got := r.URL.Query().Get("resource"); got != "https://cognitiveservices.azure.com" {
			http.Error(w, "bad resource "+got, http.StatusBadRequest)
			return
		}
		n := hits.Add(1)
		json.NewEncoder(w).Encode(map[string]any{
			"access_token": fmt.Sprintf("mi-token-%d", n),
			"expires_on":   fmt.Sprint(time.Now().Unix() + lifetime.Load()),
			"resource":     "https://cognitiveservices.azure.com",
			"token_type":   "Bearer",
		})
	}))
	defer srv.Close()
	t.Setenv("IDENTITY_ENDPOINT", srv.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", "local-secret")

	r := &Registry{}
	s, err := r.Source(Settings{ManagedIdentity: true})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Token(context.Background())
	if err != nil || tok != "mi-token-1" {
		t.Fatalf("token %q, %v", tok, err)
	}
	if tok, _ := s.Token(context.Background()); tok != "mi-token-1" || hits.Load() != 1 {
		t.Fatalf("second call %q after %d requests: not cached", tok, hits.Load())
	}

	// A new identity whose tokens live 2 minutes: inside the 5-minute
	// refresh margin at once, so the second call refreshes in the
	// background and a later call gets the new token.
	lifetime.Store(120)
	r2 := &Registry{}
	s2, _ := r2.Source(Settings{ManagedIdentity: true, ClientID: "user-assigned"})
	first, err := s2.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s2.Token(context.Background()) // starts the refresh
	poll.Until(t, 10*time.Second, func() bool {
		tok, _ := s2.Token(context.Background())
		return tok != first
	}, func() string { return fmt.Sprintf("token %q never refreshed (%d requests)", first, hits.Load()) })
}

// fakeAAD is a local Entra ID token endpoint over TLS: the tenant's
// OpenID configuration and its token endpoint for client credentials.
func fakeAAD(t *testing.T, check func(form url.Values) error) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var tokens atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/v2.0/.well-known/openid-configuration"):
			tenant := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")[0]
			json.NewEncoder(w).Encode(map[string]any{
				"token_endpoint":         srv.URL + "/" + tenant + "/oauth2/v2.0/token",
				"authorization_endpoint": srv.URL + "/" + tenant + "/oauth2/v2.0/authorize",
				"issuer":                 srv.URL + "/" + tenant + "/v2.0",
			})
		case strings.HasSuffix(r.URL.Path, "/oauth2/v2.0/token"):
			r.ParseForm()
			if err := check(r.PostForm); err != nil {
				w.WriteHeader(400)
				json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": err.Error()})
				return
			}
			n := tokens.Add(1)
			json.NewEncoder(w).Encode(map[string]any{"token_type": "Bearer", "expires_in": 3600, "access_token": fmt.Sprintf("aad-token-%d", n)})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &tokens
}

// TestClientSecretAndFederatedAgainstLocalAAD exercises the two
// app-registration flows through the Azure identity library against a
// local token endpoint.
func TestClientSecretAndFederatedAgainstLocalAAD(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "azure-identity-token")
	os.WriteFile(tokenFile, []byte("federated-jwt-1\n"), 0o600)
	srv, tokens := fakeAAD(t, func(f url.Values) error {
		if f.Get("grant_type") != "client_credentials" || f.Get("client_id") != "app-1" || !strings.HasPrefix(f.Get("scope"), DefaultScope) {
			return fmt.Errorf("unexpected form %v", f)
		}
		if f.Get("client_secret") == "s3cret" || f.Get("client_assertion") == "federated-jwt-1" {
			return nil
		}
		return fmt.Errorf("bad credential")
	})
	reg := &Registry{Transport: srv.Client()}
	for _, s := range []Settings{
		{TenantID: "tenant-1", ClientID: "app-1", ClientSecret: "s3cret", AuthorityHost: srv.URL + "/"},
		{TenantID: "tenant-1", ClientID: "app-1", FederatedTokenFile: tokenFile, AuthorityHost: srv.URL + "/"},
	} {
		src, err := reg.Source(s)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := src.Token(context.Background())
		if err != nil || !strings.HasPrefix(tok, "aad-token-") {
			t.Fatalf("token %q, %v", tok, err)
		}
	}
	if n := tokens.Load(); n != 2 {
		t.Fatalf("%d token requests, want one per identity", n)
	}
	// A wrong secret is an error, not a token.
	bad, _ := reg.Source(Settings{TenantID: "tenant-1", ClientID: "app-1", ClientSecret: "wrong", AuthorityHost: srv.URL + "/"})
	if _, err := bad.Token(context.Background()); err == nil {
		t.Fatal("a wrong secret got a token")
	}
}
