// This file checks the Azure flavour with the official azure package of
// openai-go (azure.WithEndpoint, azure.WithAPIKey).

package sim

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
)

func azureSDKClient(ep Endpoint, opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{
		azure.WithEndpoint(ep.URL, testAPIVersion),
		azure.WithAPIKey(ep.Key),
		azure.WithUnsafeAllowHTTP(), // loopback only
	}
	return openai.NewClient(append(base, opts...)...)
}

func TestAzureSDKChatStreamEmbeddings(t *testing.T) {
	s := startSim(t, one(Azure, func(d *Deployment) { d.Key = "azure-key"; d.Reply.EmbeddingDimensions = 16 }))
	ep := s.Deployments()[0]
	client := azureSDKClient(ep)
	ctx := context.Background()

	got, err := client.Chat.Completions.New(ctx, chatParams(ep, "hello", 4))
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got.Choices[0].FinishReason != "length" || got.Usage.CompletionTokens != 4 {
		t.Errorf("chat = %+v", got)
	}

	p := chatParams(ep, "hello", 3)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := client.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatal("accumulator rejected a chunk")
		}
	}
	if err := stream.Err(); err != nil || acc.Usage.CompletionTokens != 3 {
		t.Errorf("stream err %v usage %+v", err, acc.Usage)
	}

	emb, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: ep.Deployment,
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")},
	})
	if err != nil || len(emb.Data) != 1 || len(emb.Data[0].Embedding) != 16 {
		t.Errorf("embeddings: %v %+v", err, emb)
	}
	if st := s.Stats()["d1"]; st.Answered != 3 {
		t.Errorf("stats = %+v, want 3 answered", st)
	}
}

func TestAzureSDK429(t *testing.T) {
	s := startSim(t, one(Azure, func(d *Deployment) { d.Key = "k"; d.Quota = Quota{RPM: 6} }))
	ep := s.Deployments()[0]
	client := azureSDKClient(ep, option.WithMaxRetries(0))
	if _, err := client.Chat.Completions.New(context.Background(), chatParams(ep, "hi", 2)); err != nil {
		t.Fatal(err)
	}
	_, err := client.Chat.Completions.New(context.Background(), chatParams(ep, "hi", 2))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Code != "429" {
		t.Fatalf("err = %v, want a 429 *openai.Error", err)
	}
}
