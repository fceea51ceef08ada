package route

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ErrUnsupported is returned by RoundTrip for a request that is not one of
// the routed operations (a POST to chat/completions, completions or
// embeddings).
var ErrUnsupported = errors.New("switchover: unsupported request")

// ErrBodyTooLarge is returned by RoundTrip for a body over MaxBodyBytes.
var ErrBodyTooLarge = errors.New("switchover: request body too large")

// DefaultMaxBodyBytes is the body bound of a Pool that sets none.
const DefaultMaxBodyBytes = 32 << 20

var _ http.RoundTripper = (*Pool)(nil)

// RoundTrip implements http.RoundTripper, so a Pool can be the Transport of
// an http.Client, such as the one an OpenAI SDK uses. The request's URL
// host is ignored: the pool's backends decide where it goes. Its path
// selects the operation (…/chat/completions, …/completions,
// …/embeddings, …/responses, …/messages, …/audio/transcriptions and the
// other operations of Operations, including Azure
// /openai/deployments/{name}/… paths). Of
// the caller's headers only a short allowlist goes upstream (see
// forwardHeaders); each backend sends its own credentials.
func (p *Pool) RoundTrip(req *http.Request) (*http.Response, error) {
	op, ok := OperationFromPath(req.URL.Path)
	if !ok || req.Method != http.MethodPost {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%w: %s %s", ErrUnsupported, req.Method, req.URL.Path)
	}
	limit := p.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	var b []byte
	if req.Body != nil {
		var err error
		b, err = io.ReadAll(io.LimitReader(req.Body, limit+1))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if int64(len(b)) > limit {
			return nil, fmt.Errorf("%w: over %d bytes", ErrBodyTooLarge, limit)
		}
	}
	var r *Request
	var err error
	if op.Multipart() {
		r, err = NewMultipartRequest(op, b, req.Header.Get("Content-Type"), req.Header)
	} else {
		r, err = NewRequest(op, b, req.Header)
	}
	if err != nil {
		return nil, err
	}
	if dep, ok := DeploymentFromPath(req.URL.Path); ok {
		r.Model = dep
	}
	resp, _, err := p.Do(req.Context(), r)
	if err != nil {
		return nil, err
	}
	resp.Request = req
	return resp, nil
}

// DeploymentFromPath returns the deployment of an Azure-style path
// /openai/deployments/{deployment}/….
func DeploymentFromPath(path string) (string, bool) {
	const marker = "/openai/deployments/"
	i := strings.Index(path, marker)
	if i < 0 {
		return "", false
	}
	rest := path[i+len(marker):]
	j := strings.IndexByte(rest, '/')
	if j <= 0 {
		return "", false
	}
	return rest[:j], true
}
