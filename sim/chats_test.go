package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// TestStoredChatCompletionsThroughSDK makes a chat with store: true and
// reads, updates, lists, lists the messages of and deletes it with the
// SDK, on openai's /v1/ and azure's api-version form.
func TestStoredChatCompletionsThroughSDK(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, func(d *Deployment) { d.Key = "k" }))
			ep := s.Deployments()[0]
			client := responsesClient(ep)
			ctx := context.Background()
			made, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model:    ep.Deployment,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hi")},
				Store:    openai.Bool(true),
				Metadata: shared.Metadata{"topic": "greeting"},
			})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			got, err := client.Chat.Completions.Get(ctx, made.ID)
			if err != nil || got.ID != made.ID || got.Choices[0].Message.Content != made.Choices[0].Message.Content {
				t.Fatalf("Get: %v %+v", err, got)
			}
			up, err := client.Chat.Completions.Update(ctx, made.ID, openai.ChatCompletionUpdateParams{Metadata: shared.Metadata{"topic": "changed"}})
			if err != nil || up.ID != made.ID {
				t.Fatalf("Update: %v %+v", err, up)
			}
			msgs, err := client.Chat.Completions.Messages.List(ctx, made.ID, openai.ChatCompletionMessageListParams{})
			if err != nil || len(msgs.Data) != 2 || msgs.Data[1].Content != "hi" || msgs.Data[0].ID != made.ID+"-0" {
				t.Fatalf("Messages.List: %v %+v", err, msgs)
			}
			// The list over HTTP: the azure SDK sends a GET of
			// chat/completions to a deployment, which takes a body.
			for _, tc := range []struct{ query, want string }{
				{"metadata%5Btopic%5D=changed", `"id":"` + made.ID + `"`},
				{"metadata%5Btopic%5D=greeting", `"data":[]`},
				{"model=" + made.Model, `"id":"` + made.ID + `"`},
			} {
				resp, b := do(t, "GET", responsesURL(ep, "chat/completions?"+tc.query), "", hdrFor(ep))
				if resp.StatusCode != 200 || !strings.Contains(string(b), tc.want) {
					t.Errorf("list ?%s: %d %s", tc.query, resp.StatusCode, b)
				}
			}
			del, err := client.Chat.Completions.Delete(ctx, made.ID)
			if err != nil || !del.Deleted || del.ID != made.ID {
				t.Fatalf("Delete: %v %+v", err, del)
			}
			if _, err := client.Chat.Completions.Get(ctx, made.ID); err == nil || !strings.Contains(err.Error(), "404") {
				t.Fatalf("Get after Delete: %v", err)
			}
		})
	}
}

// TestChatNotStoredWithoutStore checks a chat without store: true is not
// kept.
func TestChatNotStoredWithoutStore(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	client := responsesClient(ep)
	made, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: ep.Deployment, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	resp, b := do(t, "GET", responsesURL(ep, "chat/completions/"+made.ID), "", hdrFor(ep))
	if resp.StatusCode != 404 || !strings.Contains(string(b), "Chat completion with id '"+made.ID+"' not found.") {
		t.Errorf("GET of an unstored chat: %d %s", resp.StatusCode, b)
	}
}
