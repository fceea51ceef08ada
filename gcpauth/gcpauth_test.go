package gcpauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
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

	"github.com/switchover-gw/switchover/gcpauth"
	"github.com/switchover-gw/switchover/internal/gcptest"
)

// tokenServer is a local OAuth 2.0 token endpoint: it checks a
// service account's signed JWT assertion (RFC 7523) against key, or a
// workload identity's token exchange (RFC 8693), and answers a token. hits
// counts the requests.
type tokenServer struct {
	*httptest.Server
	key  *rsa.PublicKey
	hits atomic.Int32
}

func newTokenServer(t *testing.T, key *rsa.PublicKey) *tokenServer {
	ts := &tokenServer{key: key}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.hits.Add(1)
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		switch r.Form.Get("grant_type") {
		case "urn:ietf:params:oauth:grant-type:jwt-bearer":
			if err := ts.checkAssertion(r.Form.Get("assertion")); err != nil {
				w.WriteHeader(400)
				fmt.Fprintf(w, `{"error":"invalid_grant","error_description":%q}`, err.Error())
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"access_token":"ya29.sa-token","expires_in":3600,"token_type":"Bearer"}`)
		case "urn:ietf:params:oauth:grant-type:token-exchange":
			if r.Form.Get("subject_token") != "federated-subject" || !strings.Contains(r.Form.Get("scope"), gcpauth.Scope) {
				http.Error(w, `{"error":"invalid_request"}`, 400)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"access_token":"ya29.sts-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}`)
		default:
			http.Error(w, `{"error":"unsupported_grant_type"}`, 400)
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

// checkAssertion verifies the JWT's RS256 signature and its claims: the
// service account as issuer, the token endpoint as audience, Vertex's
// scope.
func (ts *tokenServer) checkAssertion(jwt string) error {
	c, err := gcptest.VerifyAssertion(jwt, ts.key)
	if err != nil {
		return err
	}
	if c.Iss != "vertex@proj.iam.gserviceaccount.com" || c.Scope != gcpauth.Scope || c.Aud != ts.URL+"/token" {
		return fmt.Errorf("claims %+v", c)
	}
	return nil
}

// serviceAccountFile writes a service-account key file whose token_uri is
// tokenURI, and returns its path and the key.
func serviceAccountFile(t *testing.T, dir string) (string, *rsa.PrivateKey, func(tokenURI string)) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sa.json")
	write := func(tokenURI string) {
		b, _ := json.Marshal(map[string]string{
			"type": "service_account", "project_id": "proj", "private_key_id": "kid1",
			"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
			"client_email": "vertex@proj.iam.gserviceaccount.com", "client_id": "123",
			"token_uri": tokenURI,
		})
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path, key, write
}

func TestServiceAccountFileTokenCached(t *testing.T) {
	path, key, write := serviceAccountFile(t, t.TempDir())
	ts := newTokenServer(t, &key.PublicKey)
	write(ts.URL + "/token")
	var reg gcpauth.Registry
	src, err := reg.Source(gcpauth.Settings{CredentialsFile: path})
	if err != nil {
		t.Fatal(err)
	}
	if ts.hits.Load() != 0 {
		t.Fatalf("detection made %d token requests; want none before first use", ts.hits.Load())
	}
	for range 3 {
		tok, err := src.Token(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if tok != "ya29.sa-token" {
			t.Fatalf("token %q", tok)
		}
	}
	if n := ts.hits.Load(); n != 1 {
		t.Fatalf("%d token requests for 3 calls; want 1 (cached)", n)
	}
	again, err := reg.Source(gcpauth.Settings{CredentialsFile: path})
	if err != nil || again != src {
		t.Fatalf("second backend with the same file got another source (%v)", err)
	}
	if s := fmt.Sprint(src); strings.Contains(s, "ya29") {
		t.Fatalf("source prints its token: %s", s)
	}
}

func TestApplicationDefaultCredentialsFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	path, key, write := serviceAccountFile(t, dir)
	ts := newTokenServer(t, &key.PublicKey)
	write(ts.URL + "/token")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	t.Setenv("HOME", dir) // no gcloud file of the machine's user
	src, err := (&gcpauth.Registry{}).Source(gcpauth.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := src.Token(context.Background())
	if err != nil || tok != "ya29.sa-token" {
		t.Fatalf("token %q, %v", tok, err)
	}
}

// A token the endpoint refuses is an error naming no secret.
func TestServiceAccountRefusedKey(t *testing.T) {
	path, _, write := serviceAccountFile(t, t.TempDir())
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	ts := newTokenServer(t, &other.PublicKey)
	write(ts.URL + "/token")
	src, err := (&gcpauth.Registry{}).Source(gcpauth.Settings{CredentialsFile: path})
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Token(context.Background())
	if err == nil {
		t.Fatal("a token signed with the wrong key was accepted")
	}
	if strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Fatalf("error quotes the key: %v", err)
	}
}

// Workload identity federation: an external_account file whose subject
// token is a file (as Kubernetes writes it), exchanged at the STS endpoint
// the file names.
func TestWorkloadIdentityFederationFile(t *testing.T) {
	dir := t.TempDir()
	ts := newTokenServer(t, nil)
	subject := filepath.Join(dir, "token")
	if err := os.WriteFile(subject, []byte("federated-subject"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{
		"type":               "external_account",
		"audience":           "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/k8s",
		"subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
		"token_url":          ts.URL + "/v1/token",
		"credential_source":  map[string]string{"file": subject},
	})
	path := filepath.Join(dir, "wif.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := (&gcpauth.Registry{}).Source(gcpauth.Settings{CredentialsFile: path})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := src.Token(context.Background())
	if err != nil || tok != "ya29.sts-token" {
		t.Fatalf("token %q, %v", tok, err)
	}
}

func TestDetectRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "none.json"), "reading the credentials file"},
		{"not json", write("x.json", "not json"), "is not JSON"},
		{"unknown type", write("u.json", `{"type":"gdch_service_account"}`), `type "gdch_service_account"`},
		{"no type", write("n.json", `{}`), `type ""`},
		{"service account without key", write("k.json", `{"type":"service_account","client_email":"a@b"}`), "credentials file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gcpauth.Detect(gcpauth.Settings{CredentialsFile: tc.path}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v; want it to say %q", err, tc.want)
			}
		})
	}
}

// Without a file, on Google Cloud (GKE workload identity, Cloud Run,
// Compute Engine), the token comes from the metadata server, here a local
// one named by GCE_METADATA_HOST as the library reads it.
func TestApplicationDefaultCredentialsFromMetadataServer(t *testing.T) {
	var hits atomic.Int32
	md := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Metadata-Flavor") != "Google" || !strings.HasSuffix(r.URL.Path, "/computeMetadata/v1/instance/service-accounts/default/token") {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"ya29.metadata-token","expires_in":3600,"token_type":"Bearer"}`)
	}))
	defer md.Close()
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("HOME", t.TempDir()) // no gcloud file
	t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(md.URL, "http://"))
	src, err := (&gcpauth.Registry{}).Source(gcpauth.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if tok, err := src.Token(context.Background()); err != nil || tok != "ya29.metadata-token" {
			t.Fatalf("token %q, %v", tok, err)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("%d metadata token requests for 2 calls; want 1", n)
	}
}
