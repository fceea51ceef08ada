package config

import (
	"regexp"
	"strings"
)

// TypeVertex is Google Cloud's Vertex AI: Gemini and Claude models of one
// project and location, with Google credentials.
const TypeVertex = "vertex"

// Vertex are the fields of a vertex backend; its project is
// Backend.Project. The gateway calls
// URL/v1/projects/PROJECT/locations/LOCATION/publishers/PUBLISHER/models/MODEL:METHOD
// with a Google OAuth 2.0 access token of the cloud-platform scope.
type Vertex struct {
	// Location is the Vertex AI region (us-central1, us-east5,
	// europe-west1…) or "global". Default global. It also picks the
	// default url: https://LOCATION-aiplatform.googleapis.com for a region,
	// https://aiplatform.googleapis.com for global. Not every model is
	// served in every region: a member whose model the location lacks is
	// answered 404 and benched as misconfigured.
	Location string `yaml:"location"`
	// Publisher is whose models the backend serves: "google" (Gemini,
	// generateContent) or "anthropic" (Claude, rawPredict). Default:
	// anthropic when every pool member on the backend names a claude-*
	// model, else google. A backend serves one publisher: use two backends
	// for both.
	Publisher string `yaml:"publisher"`
	// CredentialsFile is a Google credentials JSON file: a service-account
	// key, or a workload identity federation configuration. Default
	// Application Default Credentials: the file GOOGLE_APPLICATION_CREDENTIALS
	// names, gcloud's application-default login, else the metadata server
	// (Compute Engine, GKE workload identity, Cloud Run). Every backend
	// with the same file shares one token, refreshed before it expires.
	CredentialsFile string `yaml:"credentials_file"`
}

// VertexURL is the API root of Vertex AI at location: the global
// endpoint, or the region's.
func VertexURL(location string) string {
	if location == "" || location == "global" {
		return "https://aiplatform.googleapis.com"
	}
	return "https://" + location + "-aiplatform.googleapis.com"
}

// vertexPublisher infers the publisher of vertex backend name from the
// models its pool members name: anthropic when all of them are claude-*
// models, google otherwise. It is "" when members name both.
func (c *Config) vertexPublisher(name string) string {
	claude, other := false, false
	for _, p := range c.Pools {
		for _, m := range p.Members {
			if m.Backend != name {
				continue
			}
			if strings.HasPrefix(strings.ToLower(m.Model), "claude") {
				claude = true
			} else {
				other = true
			}
		}
	}
	switch {
	case claude && other:
		return ""
	case claude:
		return "anthropic"
	}
	return "google"
}

// applyVertexDefaults sets the location, url and publisher of vertex
// backends that leave them unset.
func (c *Config) applyVertexDefaults() {
	for i := range c.Backends {
		b := &c.Backends[i]
		if b.Type != TypeVertex {
			continue
		}
		setDefault(&b.Location, "global")
		loc := b.Location
		if !vertexLocation.MatchString(loc) {
			loc = "global" // validateVertex names the location; the url need not
		}
		setDefault(&b.URL, VertexURL(loc))
		setDefault(&b.Publisher, c.vertexPublisher(b.Name))
	}
}

var (
	// A project ID (6 to 30 lowercase letters, digits and hyphens), or a
	// domain-scoped one (example.com:project).
	vertexProject = regexp.MustCompile(`^([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$`)
	// A region such as us-east5, or global.
	vertexLocation = regexp.MustCompile(`^[a-z]+(-[a-z]+)*[0-9]*$|^global$`)
)

// validateVertex checks a defaulted backend's vertex fields at path p:
// those of a vertex backend, and none on another type.
func (b Backend) validateVertex(ps *Problems, p string) {
	if b.Type != TypeVertex {
		for _, f := range []struct{ name, v string }{{"location", b.Location}, {"publisher", b.Publisher}, {"credentials_file", b.CredentialsFile}} {
			if f.v != "" {
				ps.add(p+"."+f.name, "only for vertex backends")
			}
		}
		return
	}
	switch {
	case b.Project == "":
		ps.add(p+".project", "a vertex backend needs its Google Cloud project ID")
	case !vertexProject.MatchString(b.Project):
		ps.add(p+".project", "%q is not a Google Cloud project ID", b.Project)
	}
	if !vertexLocation.MatchString(b.Location) {
		ps.add(p+".location", "%q is not a Vertex AI location (us-east5, europe-west1, global…)", b.Location)
	}
	switch b.Publisher {
	case "google", "anthropic":
	case "":
		ps.add(p+".publisher", "pool members name both claude and other models on this backend: set publisher (google or anthropic), and use one vertex backend per publisher")
	default:
		ps.add(p+".publisher", "must be google or anthropic, not %q", b.Publisher)
	}
	if b.APIKey != "" {
		ps.add(p+".api_key", "vertex backends use Google credentials (credentials_file or Application Default Credentials), not api_key")
	}
	if b.Probe != nil && b.Probe.Kind == "models" {
		ps.add(p+".probe.kind", "vertex backends have no models list to probe: use chat")
	}
}
