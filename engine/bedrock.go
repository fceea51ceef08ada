package engine

import (
	"context"
	"net/http"
	"net/url"

	"github.com/switchover-gw/switchover/awsauth"
	"github.com/switchover-gw/switchover/config"
	"github.com/switchover-gw/switchover/route"
)

// newBedrock is bc's Bedrock provider at u, its requests signed with the
// credentials of bc.AWS or the AWS SDK's default chain. It reads the
// shared config files now but fetches no credentials: the first call
// does, and a failure then is that call's auth_error.
func newBedrock(bc config.Backend, u *url.URL, hdr http.Header) (route.Provider, error) {
	a := bc.AWS
	if a == nil {
		a = &config.AWS{}
	}
	signer, err := awsauth.New(context.Background(), awsauth.Settings{
		Region: bc.Region, AccessKeyID: a.AccessKeyID, SecretAccessKey: a.SecretAccessKey.Value(),
		SessionToken: a.SessionToken.Value(), Profile: a.Profile,
	})
	if err != nil {
		return nil, err
	}
	return &route.Bedrock{Endpoint: u, Region: bc.Region, API: a.API, Signer: signer, Header: hdr}, nil
}
