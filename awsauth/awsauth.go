// Package awsauth signs requests to AWS services (Amazon Bedrock) with
// Signature Version 4, using the AWS SDK for Go v2: its signer, and its
// default credential chain (environment, shared config and credentials
// files, web identity/IRSA, container and instance roles), whose
// credentials it caches and refreshes before they expire.
//
// The engine (route) takes a signer through route.RequestSigner and does
// not import this package or the SDK.
package awsauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// DefaultService is the signing name of Bedrock's runtime API.
const DefaultService = "bedrock"

// Settings name the credentials and scope of a signer. Its zero value
// (with a Region) uses the SDK's default credential chain.
type Settings struct {
	// Region is the AWS region requests are signed for, such as
	// us-east-1. Required.
	Region string
	// Service is the signing name. Default DefaultService ("bedrock").
	Service string
	// AccessKeyID and SecretAccessKey, when both are set, are static
	// credentials (SessionToken with them for temporary ones); the chain
	// is then not consulted.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// Profile is the shared config profile the chain reads. Default
	// AWS_PROFILE, else "default".
	Profile string
	// Now is the signing clock. Nil means time.Now; a test sets it to
	// sign at a fake clock's time.
	Now func() time.Time
}

// String describes s without its secrets.
func (s Settings) String() string {
	src := "default chain"
	switch {
	case s.AccessKeyID != "":
		src = "static key " + s.AccessKeyID
	case s.Profile != "":
		src = "profile " + s.Profile
	}
	return fmt.Sprintf("aws(%s, %s, %s)", s.Region, s.service(), src)
}

func (s Settings) service() string {
	if s.Service == "" {
		return DefaultService
	}
	return s.Service
}

// Signer signs requests with SigV4. It is safe for concurrent use.
type Signer struct {
	region, service string
	creds           aws.CredentialsProvider
	signer          *v4.Signer
	now             func() time.Time
}

// New returns a signer for s. It reads the shared config files (when the
// chain is used) but fetches no credentials: the first Sign does.
func New(ctx context.Context, s Settings) (*Signer, error) {
	if s.Region == "" {
		return nil, fmt.Errorf("awsauth: no region")
	}
	if (s.AccessKeyID == "") != (s.SecretAccessKey == "") {
		return nil, fmt.Errorf("awsauth: access_key_id and secret_access_key go together")
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(s.Region)}
	if s.AccessKeyID != "" {
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(s.AccessKeyID, s.SecretAccessKey, s.SessionToken)))
	}
	if s.Profile != "" {
		opts = append(opts, awsconfig.WithSharedConfigProfile(s.Profile))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("awsauth: loading the AWS configuration: %w", err)
	}
	now := s.Now
	if now == nil {
		now = time.Now
	}
	return &Signer{region: s.Region, service: s.service(), creds: cfg.Credentials, signer: v4.NewSigner(), now: now}, nil
}

// Credentials returns the current credentials (cached by the SDK until
// shortly before they expire).
func (s *Signer) Credentials(ctx context.Context) (aws.Credentials, error) {
	if s.creds == nil {
		return aws.Credentials{}, fmt.Errorf("awsauth: no credentials found in the default chain")
	}
	c, err := s.creds.Retrieve(ctx)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("awsauth: %w", err)
	}
	return c, nil
}

// Sign adds SigV4 headers (Authorization, X-Amz-Date, and
// X-Amz-Security-Token for temporary credentials) to req, whose body is
// body. Only the host, the content length and type and the X-Amz- headers
// are signed, so headers added later (tracing, forwarded ones) do not
// break the signature.
func (s *Signer) Sign(ctx context.Context, req *http.Request, body []byte) error {
	c, err := s.Credentials(ctx)
	if err != nil {
		return err
	}
	return sign(ctx, s.signer, c, req, body, s.service, s.region, s.now())
}

// sign signs req as Sign does, at t.
func sign(ctx context.Context, signer *v4.Signer, c aws.Credentials, req *http.Request, body []byte, service, region string, t time.Time) error {
	clone := &http.Request{Method: req.Method, URL: req.URL, Host: req.Host, ContentLength: int64(len(body)), Header: http.Header{}}
	for k, v := range req.Header {
		if signable(k) {
			clone.Header[k] = v
		}
	}
	if err := signAll(ctx, signer, c, clone, body, service, region, t); err != nil {
		return err
	}
	for _, k := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if v := clone.Header.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	return nil
}

// signAll signs req and every header it has, at t.
func signAll(ctx context.Context, signer *v4.Signer, c aws.Credentials, req *http.Request, body []byte, service, region string, t time.Time) error {
	sum := sha256.Sum256(body)
	if err := signer.SignHTTP(ctx, c, req, hex.EncodeToString(sum[:]), service, region, t); err != nil {
		return fmt.Errorf("awsauth: signing: %w", err)
	}
	return nil
}

// signable reports whether the header called k (canonical form) is
// signed.
func signable(k string) bool {
	return k == "Content-Type" || (len(k) > 6 && k[:6] == "X-Amz-" && k != "X-Amz-Date" && k != "X-Amz-Security-Token")
}
