package sim

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesCompactThroughSDK: the SDK's responses.compact() is
// answered on both flavours with a response.compaction: the user
// messages kept, then one compaction item, and usage; a
// previous_response_id brings that conversation in, and one this
// deployment does not hold is refused as OpenAI refuses it.
func TestResponsesCompactThroughSDK(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, func(d *Deployment) { d.Key = "k" }))
			ep := s.Deployments()[0]
			client := responsesClient(ep)
			ctx := context.Background()

			got, err := client.Responses.Compact(ctx, responses.ResponseCompactParams{
				Model: responses.ResponseCompactParamsModel(ep.Deployment),
				Input: responses.ResponseCompactParamsInputUnion{OfString: openai.String("please remember this")},
			})
			if err != nil {
				t.Fatalf("Compact: %v", err)
			}
			if got.Object != "response.compaction" || len(got.Output) != 2 || got.Usage.InputTokens == 0 || got.Usage.TotalTokens == 0 {
				t.Fatalf("compaction = %+v", got)
			}
			if o := got.Output[0]; o.Type != "message" || o.Role != "user" {
				t.Errorf("first item %+v, want the user's message", o)
			}
			if o := got.Output[1]; o.Type != "compaction" || o.EncryptedContent == "" || o.ID == "" {
				t.Errorf("last item %+v, want a compaction", o)
			}

			prev, err := client.Responses.New(ctx, respParams(ep, "a first turn"))
			if err != nil {
				t.Fatal(err)
			}
			got, err = client.Responses.Compact(ctx, responses.ResponseCompactParams{
				Model: responses.ResponseCompactParamsModel(ep.Deployment), PreviousResponseID: openai.String(prev.ID),
			})
			if err != nil || len(got.Output) != 2 || got.Output[1].Type != "compaction" {
				t.Fatalf("compact of a previous response: %v %+v", err, got)
			}
			_, err = client.Responses.Compact(ctx, responses.ResponseCompactParams{
				Model: responses.ResponseCompactParamsModel(ep.Deployment), PreviousResponseID: openai.String("resp_nothere"),
			})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "resp_nothere") {
				t.Fatalf("unknown previous response: %v", err)
			}
		})
	}
}
