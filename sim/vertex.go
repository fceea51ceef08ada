package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// vertexSite is where a vertex deployment lives: its project, location and
// publisher (google for Gemini, anthropic for a claude-* deployment).
type vertexSite struct {
	project, location, publisher string
}

func newVertexSite(cfg Deployment) *vertexSite {
	pub := "google"
	if strings.HasPrefix(cfg.Deployment, "claude") {
		pub = "anthropic"
	}
	return &vertexSite{project: cfg.Project, location: cfg.Location, publisher: pub}
}

// wire is the flavour of the model's own API: Anthropic's Messages for
// Claude, Gemini's generateContent for Gemini.
func (v *vertexSite) wire() Flavour {
	if v.publisher == "anthropic" {
		return Anthropic
	}
	return Gemini
}

// flavour is the deployment's flavour as configured: vertex for a vertex
// deployment, whose cfg.Flavour is its wire flavour.
func (d *deployment) flavour() Flavour {
	if d.vertex != nil {
		return Vertex
	}
	return d.cfg.Flavour
}

// front is the flavour of the headers a deployment's front end sends about
// quota: Vertex's are Google's (no rate-limit headers, no Retry-After),
// whatever the model's wire format.
func (d *deployment) front(fl Flavour) Flavour {
	if d.vertex != nil {
		return Gemini
	}
	return fl
}

// unauthorized is the answer to a missing or wrong credential: Vertex
// answers 401 UNAUTHENTICATED for an access token it does not take.
func (d *deployment) unauthorized(fl Flavour, key string) apiError {
	if d.vertex != nil {
		return googleErr(http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
	}
	return errUnauthorized(fl, key)
}

// routeVertex serves
// POST /v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{method}:
// generateContent and streamGenerateContent for google, rawPredict and
// streamRawPredict for anthropic. Another project, location, publisher or
// model is Vertex's 404.
func (d *deployment) routeVertex(w http.ResponseWriter, r *http.Request, dr draws) {
	v := d.vertex
	prefix := "/v1/projects/" + v.project + "/locations/" + v.location + "/publishers/"
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		d.writeError(w, googleErr(http.StatusNotFound, "NOT_FOUND", "The requested URL was not found on this server."))
		return
	}
	pub, rest, _ := strings.Cut(rest, "/models/")
	model, method, split := splitGeminiPath(rest)
	if r.Method != http.MethodPost || !split {
		d.writeError(w, googleErr(http.StatusNotFound, "NOT_FOUND", "The requested URL was not found on this server."))
		return
	}
	if pub != v.publisher || model != d.cfg.Deployment {
		d.writeError(w, vertexModelNotFound(v, pub, model))
		return
	}
	switch {
	case pub == "anthropic" && (method == "rawPredict" || method == "streamRawPredict"):
		d.serve(w, r, dr, route{op: opMessages, vertexClaude: true})
	case pub == "google" && method == "countTokens":
		d.serve(w, r, dr, route{op: opGenerate, countTokens: true})
	case pub == "google" && (method == "generateContent" || method == "streamGenerateContent"):
		d.serve(w, r, dr, route{op: opGenerate, stream: method == "streamGenerateContent", sse: r.URL.Query().Get("alt") == "sse"})
	default:
		d.writeError(w, googleErr(http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("Method %s is not supported for publisher %s.", method, pub)))
	}
}

func vertexModelNotFound(v *vertexSite, pub, model string) apiError {
	return googleErr(http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("Publisher Model `projects/%s/locations/%s/publishers/%s/models/%s` not found.", v.project, v.location, pub, model))
}

// vertexClaudeBody checks a Messages body as Claude on Vertex takes it:
// anthropic_version vertex-2023-10-16, and no model (the URL names it).
func vertexClaudeBody(body []byte) (apiError, bool) {
	var b map[string]json.RawMessage
	if json.Unmarshal(body, &b) != nil {
		return apiError{}, false // parseRequest says what is wrong
	}
	var version string
	_ = json.Unmarshal(b["anthropic_version"], &version)
	if version != "vertex-2023-10-16" {
		return anthropicErr(http.StatusBadRequest, "invalid_request_error", "anthropic_version: Input should be 'vertex-2023-10-16'"), true
	}
	if _, ok := b["model"]; ok {
		return anthropicErr(http.StatusBadRequest, "invalid_request_error", "model: Extra inputs are not permitted"), true
	}
	return apiError{}, false
}

// frontError is e as Vertex's front end answers it: its authentication,
// permission, not-found, quota and availability errors in Google's shape,
// whatever the model's own format; the model's other errors (Claude's
// invalid_request_error, its 529 overloaded_error) as the model sent them.
func (v *vertexSite) frontError(e apiError, model string) apiError {
	if _, google := e.body.(googleErrorBody); google && e.status != http.StatusTooManyRequests {
		return e
	}
	switch e.status {
	case http.StatusUnauthorized:
		return googleErr(e.status, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
	case http.StatusForbidden:
		return googleErr(e.status, "PERMISSION_DENIED", fmt.Sprintf("Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/%s/locations/%s/publishers/%s/models/%s' (or it may not exist).", v.project, v.location, v.publisher, model))
	case http.StatusNotFound:
		return vertexModelNotFound(v, v.publisher, model)
	case http.StatusTooManyRequests:
		return googleErr(e.status, "RESOURCE_EXHAUSTED", "Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.")
	case http.StatusInternalServerError:
		return googleErr(e.status, "INTERNAL", "Internal error encountered.")
	case http.StatusServiceUnavailable:
		return googleErr(e.status, "UNAVAILABLE", "The service is currently unavailable.")
	}
	return e
}
