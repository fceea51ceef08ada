package config

import (
	"strings"
	"testing"
)

// TestVertexDefaults: the global location and endpoint unless set, a
// region's own endpoint, the publisher from the members' models.
func TestVertexDefaults(t *testing.T) {
	c, err := parseFile(t, "vertex.good.yaml", goodEnv)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ location, url, publisher string }{
		{"us-east5", "https://us-east5-aiplatform.googleapis.com", "anthropic"},
		{"global", "https://aiplatform.googleapis.com", "google"},
		{"europe-west4", "https://europe-west4-aiplatform.googleapis.com", "google"},
	} {
		b := c.Backends[i]
		if b.Location != want.location || b.URL != want.url || b.Publisher != want.publisher {
			t.Errorf("%s: location %q url %q publisher %q, want %+v", b.Name, b.Location, b.URL, b.Publisher, want)
		}
	}
	if c.Backends[0].CredentialsFile != "/etc/switchover/vertex-sa.json" || c.Backends[0].Project != "my-project-123" {
		t.Errorf("fields not read: %+v", c.Backends[0].Vertex)
	}
	moved := c.Backends[0]
	moved.Location = "europe-west1"
	if moved.SameIdentity(c.Backends[0]) {
		t.Error("a vertex backend moved to another location is taken for the same one")
	}
}

func TestVertexBadFile(t *testing.T) {
	_, err := parseFile(t, "vertex.bad.yaml", goodEnv)
	if err == nil {
		t.Fatal("no problems")
	}
	got := err.Error()
	if strings.Contains(got, "url") {
		t.Errorf("a bad location also made a bad url:\n%s", got)
	}
	for _, want := range []string{
		`vertex.bad.yaml:2: backends[0].project: a vertex backend needs its Google Cloud project ID`,
		`vertex.bad.yaml:6: backends[1].project: "My Project/x" is not a Google Cloud project ID`,
		`vertex.bad.yaml:7: backends[1].location: "us east" is not a Vertex AI location`,
		`vertex.bad.yaml:8: backends[1].publisher: must be google or anthropic, not "meta"`,
		`vertex.bad.yaml:9: backends[1].api_key: vertex backends use Google credentials`,
		`vertex.bad.yaml:10: backends[2].publisher: pool members name both claude and other models`,
		`vertex.bad.yaml:13: backends[2].probe.kind: vertex backends have no models list to probe`,
		`vertex.bad.yaml:17: backends[3].location: only for vertex backends`,
		`vertex.bad.yaml:18: backends[3].credentials_file: only for vertex backends`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing problem %q in\n%s", want, got)
		}
	}
}
