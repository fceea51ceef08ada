package engine

import (
	"net/http"
	"net/url"

	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/gcpauth"
	"github.com/switchover-gw/switchover/route"
)

// newVertex is the provider of vertex backend bc at API root u, with a
// token source from d.GCP (shared by every backend with the same
// credentials file). Detecting the credentials reads files but fetches
// no token: the first call does.
func newVertex(bc config.Backend, u *url.URL, hdr http.Header, d Deps) (route.Provider, error) {
	src, err := d.GCP.Source(gcpauth.Settings{CredentialsFile: bc.CredentialsFile})
	if err != nil {
		return nil, err
	}
	return &route.Vertex{BaseURL: u, Project: bc.Project, Location: bc.Location, Publisher: bc.Publisher,
		Token: src, Header: hdr}, nil
}
