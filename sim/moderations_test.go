package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

func TestModerations(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	client := responsesClient(ep)
	got, err := client.Moderations.New(context.Background(), openai.ModerationNewParams{
		Input: openai.ModerationNewParamsInputUnion{OfStringArray: []string{"hello", "please trigger-content-filter now"}},
	})
	if err != nil || len(got.Results) != 2 || got.Results[0].Flagged || !got.Results[1].Flagged || !got.Results[1].Categories.Violence {
		t.Errorf("moderations = %v %+v", err, got)
	}
	if got.Model != "omni-moderation-latest" || !strings.HasPrefix(got.ID, "modr-") {
		t.Errorf("id %q model %q", got.ID, got.Model)
	}
	az := startSim(t, one(Azure, nil)).Deployments()[0]
	resp, _ := do(t, "POST", az.URL+"/openai/v1/moderations", `{"input":"x"}`, hdrFor(az))
	if resp.StatusCode != 404 {
		t.Errorf("azure moderations: %d, want 404 (azure has none)", resp.StatusCode)
	}
}
