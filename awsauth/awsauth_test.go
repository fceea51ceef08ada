package awsauth

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

const (
	testKey    = "AKIDEXAMPLE"
	testSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testToken  = "session-token-example"
)

// isolate points the SDK's chain at files in a temporary directory and
// away from the instance metadata service, so no test reaches a network
// or the machine's own AWS settings.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	return dir
}

func newRequest(t *testing.T, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "https://bedrock-runtime.us-east-1.amazonaws.com/model/x/converse", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL.RawPath = "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse"
	req.URL.Path = "/model/anthropic.claude-3-haiku-20240307-v1:0/converse"
	req.Header.Set("Content-Type", "application/json")
	return req
}

func verifier(c aws.Credentials) *Verifier {
	return &Verifier{Lookup: func(id string) (aws.Credentials, bool) { return c, id == c.AccessKeyID }}
}

// signedBy signs a request with s and returns the access key ID its
// Authorization header names and its session token.
func signedBy(t *testing.T, s *Signer) (string, string) {
	t.Helper()
	req := newRequest(t, "{}")
	if err := s.Sign(context.Background(), req, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	a, err := parseAuthorization(req.Header.Get("Authorization"))
	if err != nil {
		t.Fatal(err)
	}
	return a.keyID, req.Header.Get("X-Amz-Security-Token")
}

func TestCredentialsFromEnvironment(t *testing.T) {
	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	t.Setenv("AWS_SESSION_TOKEN", "env-token")
	s, err := New(context.Background(), Settings{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if id, tok := signedBy(t, s); id != "AKIDENV" || tok != "env-token" {
		t.Fatalf("signed by %q with token %q, want the environment's", id, tok)
	}
}

func TestCredentialsFromSharedFile(t *testing.T) {
	dir := isolate(t)
	creds := "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = default-secret\n\n" +
		"[bedrock]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\naws_session_token = profile-token\n"
	if err := os.WriteFile(filepath.Join(dir, "credentials"), []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, profile, env, wantID, wantToken string
	}{
		{"default profile", "", "", "AKIDDEFAULT", ""},
		{"profile setting", "bedrock", "", "AKIDPROFILE", "profile-token"},
		{"AWS_PROFILE", "", "bedrock", "AKIDPROFILE", "profile-token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("AWS_PROFILE", c.env)
			}
			s, err := New(context.Background(), Settings{Region: "eu-west-1", Profile: c.profile})
			if err != nil {
				t.Fatal(err)
			}
			if id, tok := signedBy(t, s); id != c.wantID || tok != c.wantToken {
				t.Fatalf("signed by %q with token %q, want %q and %q", id, tok, c.wantID, c.wantToken)
			}
		})
	}
}

func TestNoCredentialsIsAnError(t *testing.T) {
	isolate(t)
	s, err := New(context.Background(), Settings{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	req := newRequest(t, "{}")
	if err := s.Sign(context.Background(), req, []byte("{}")); err == nil {
		t.Fatal("signed without credentials")
	}
	if req.Header.Get("Authorization") != "" {
		t.Fatal("an Authorization header was set")
	}
}

func TestStaticKeysOverrideTheChain(t *testing.T) {
	isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	s, err := New(context.Background(), Settings{Region: "us-east-1", AccessKeyID: testKey, SecretAccessKey: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := signedBy(t, s); id != testKey {
		t.Fatalf("signed by %q, want the static key", id)
	}
	if _, err := New(context.Background(), Settings{Region: "us-east-1", AccessKeyID: testKey}); err == nil {
		t.Fatal("an access key without its secret was accepted")
	}
	if _, err := New(context.Background(), Settings{}); err == nil {
		t.Fatal("no region was accepted")
	}
}

func TestSettingsStringHidesSecrets(t *testing.T) {
	s := Settings{Region: "us-east-1", AccessKeyID: testKey, SecretAccessKey: testSecret, SessionToken: testToken}
	if str := s.String(); strings.Contains(str, testSecret) || strings.Contains(str, testToken) {
		t.Fatalf("String() = %q shows a secret", str)
	}
}

func TestVerify(t *testing.T) {
	isolate(t)
	c := aws.Credentials{AccessKeyID: testKey, SecretAccessKey: testSecret, SessionToken: testToken}
	s, err := New(context.Background(), Settings{Region: "us-east-1", AccessKeyID: testKey, SecretAccessKey: testSecret, SessionToken: testToken})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return at }
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"Hello"}]}]}`)
	cases := []struct {
		name   string
		change func(r *http.Request) []byte
		region string
		now    time.Time
		creds  aws.Credentials
		ok     bool
	}{
		{name: "signed", ok: true},
		{name: "header added after signing", change: func(r *http.Request) []byte { r.Header.Set("Traceparent", "00-x"); return body }, ok: true},
		{name: "body changed", change: func(r *http.Request) []byte { return bytes.Replace(body, []byte("Hello"), []byte("Hullo"), 1) }},
		{name: "path changed", change: func(r *http.Request) []byte {
			r.URL.RawPath, r.URL.Path = "/model/other/converse", "/model/other/converse"
			return body
		}},
		{name: "signed header changed", change: func(r *http.Request) []byte { r.Header.Set("Content-Type", "text/plain"); return body }},
		{name: "no signature", change: func(r *http.Request) []byte { r.Header.Del("Authorization"); return body }},
		{name: "other region", region: "us-west-2"},
		{name: "too old", now: at.Add(16 * time.Minute)},
		{name: "other secret", creds: aws.Credentials{AccessKeyID: testKey, SecretAccessKey: "other", SessionToken: testToken}},
		{name: "other session token", creds: aws.Credentials{AccessKeyID: testKey, SecretAccessKey: testSecret, SessionToken: "other"}},
		{name: "unknown key", creds: aws.Credentials{AccessKeyID: "AKIDOTHER", SecretAccessKey: testSecret}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := newRequest(t, string(body))
			if err := s.Sign(context.Background(), req, body); err != nil {
				t.Fatal(err)
			}
			got := body
			if tc.change != nil {
				got = tc.change(req)
			}
			region, now, cr := "us-east-1", at, c
			if tc.region != "" {
				region = tc.region
			}
			if !tc.now.IsZero() {
				now = tc.now
			}
			if tc.creds.AccessKeyID != "" {
				cr = tc.creds
			}
			_, err := verifier(cr).Verify(req, got, region, now)
			if tc.ok && err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrSignature) {
				t.Fatalf("Verify = %v, want ErrSignature", err)
			}
		})
	}
}
