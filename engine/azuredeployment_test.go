package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesUnderAnAzureDeploymentPath: the AzureOpenAI client made
// with a deployment calls /openai/deployments/{deployment}/responses,
// where Azure has no Responses API; it got the gateway's generic "no
// route". It gets Azure's answer, 404 "Resource not found", with the
// path to use and the deployment to name as the model, for the calls on
// stored responses too.
func TestResponsesUnderAnAzureDeploymentPath(t *testing.T) {
	e := startProviders(t, []string{"aoai-weu"}, nil, "")
	// What the AzureOpenAI client does with a deployment: every path
	// under the deployment, with an api-version.
	c := openai.NewClient(option.WithBaseURL(e.url+"/openai/deployments/chat-prod/"), option.WithQuery("api-version", "2025-04-01-preview"),
		option.WithAPIKey("unused"), option.WithMaxRetries(0))
	check := func(what string, err error) {
		t.Helper()
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "404" ||
			!strings.HasPrefix(apiErr.Message, "Resource not found") || !strings.Contains(apiErr.Message, "/openai/v1/responses") ||
			!strings.Contains(apiErr.Message, `"chat-prod"`) {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := c.Responses.New(t.Context(), responseParams("hello"))
	check("create", err)
	_, err = c.Responses.Get(t.Context(), "resp_abc", responses.ResponseGetParams{})
	check("get", err)

	// The path it names works.
	v1 := openai.NewClient(option.WithBaseURL(e.url+"/openai/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	if r, err := v1.Responses.New(t.Context(), responseParams("hello")); err != nil || r.OutputText() == "" {
		t.Fatalf("on /openai/v1/: %v", err)
	}
}
