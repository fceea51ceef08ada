package awsauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// ErrSignature is wrapped by Verify's errors: the request is not signed,
// signed by an unknown key, for another scope, too long ago, or its
// signature does not match.
var ErrSignature = errors.New("awsauth: signature does not verify")

// MaxSkew is how far a signed request's X-Amz-Date may be from the
// verifier's clock (AWS allows 15 minutes).
const MaxSkew = 15 * time.Minute

// Verifier checks SigV4 signatures as AWS does, by signing the request
// again with the SDK's signer and the secret of the key it names. It is
// for the simulator and tests. It is safe for concurrent use if Lookup
// is.
type Verifier struct {
	// Lookup returns the credentials (the secret) of an access key ID.
	Lookup func(accessKeyID string) (aws.Credentials, bool)
	// Service is the signing name expected. Default "bedrock".
	Service string
}

// authorization is a parsed Authorization header.
type authorization struct {
	keyID, date, region, service string
	signedHeaders                []string
	signature                    string
}

func parseAuthorization(h string) (authorization, error) {
	var a authorization
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return a, fmt.Errorf("%w: not AWS4-HMAC-SHA256", ErrSignature)
	}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return a, fmt.Errorf("%w: malformed credential scope", ErrSignature)
			}
			a.keyID, a.date, a.region, a.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			a.signedHeaders = strings.Split(v, ";")
		case "Signature":
			a.signature = v
		}
	}
	if a.keyID == "" || a.signature == "" || len(a.signedHeaders) == 0 {
		return a, fmt.Errorf("%w: incomplete Authorization header", ErrSignature)
	}
	return a, nil
}

// Verify checks r's signature (r's body is body) at now and returns the
// access key ID that signed it. region is the region the request must be
// signed for.
func (v *Verifier) Verify(r *http.Request, body []byte, region string, now time.Time) (string, error) {
	a, err := parseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		return "", err
	}
	service := v.Service
	if service == "" {
		service = DefaultService
	}
	if a.region != region || a.service != service {
		return a.keyID, fmt.Errorf("%w: signed for %s/%s, not %s/%s", ErrSignature, a.region, a.service, region, service)
	}
	t, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || !strings.HasPrefix(r.Header.Get("X-Amz-Date"), a.date) {
		return a.keyID, fmt.Errorf("%w: bad X-Amz-Date", ErrSignature)
	}
	if d := now.Sub(t); d > MaxSkew || d < -MaxSkew {
		return a.keyID, fmt.Errorf("%w: signed at %s, %s from now", ErrSignature, t.Format(time.RFC3339), d.Round(time.Second))
	}
	c, ok := v.Lookup(a.keyID)
	if !ok {
		return a.keyID, fmt.Errorf("%w: unknown access key", ErrSignature)
	}
	if c.SessionToken != "" && r.Header.Get("X-Amz-Security-Token") != c.SessionToken {
		return a.keyID, fmt.Errorf("%w: wrong session token", ErrSignature)
	}
	clone := &http.Request{Method: r.Method, URL: r.URL, Host: r.Host, Header: http.Header{}}
	for _, h := range a.signedHeaders {
		switch h {
		case "host", "x-amz-date", "x-amz-security-token":
		case "content-length":
			clone.ContentLength = int64(len(body))
		default:
			ck := http.CanonicalHeaderKey(h)
			clone.Header[ck] = r.Header.Values(ck)
		}
	}
	if err := signAll(context.Background(), v4.NewSigner(), c, clone, body, a.service, a.region, t); err != nil {
		return a.keyID, err
	}
	if subtle.ConstantTimeCompare([]byte(clone.Header.Get("Authorization")), []byte(r.Header.Get("Authorization"))) != 1 {
		return a.keyID, fmt.Errorf("%w: signature mismatch", ErrSignature)
	}
	return a.keyID, nil
}
