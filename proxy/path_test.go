package proxy

import (
	"testing"

	"github.com/switchover-gw/switchover/route"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		path  string
		kind  pathKind
		op    route.Operation
		dep   string
		model string
	}{
		{"/v1/chat/completions", pathAPI, route.ChatCompletions, "", ""},
		{"/v1/chat/completions/", pathAPI, route.ChatCompletions, "", ""},
		{"/v1/completions", pathAPI, route.Completions, "", ""},
		{"/v1/embeddings", pathAPI, route.Embeddings, "", ""},
		{"/chat/completions", pathAPI, route.ChatCompletions, "", ""},
		{"/openai/v1/embeddings", pathAPI, route.Embeddings, "", ""},
		{"/openai/deployments/chat-prod/chat/completions", pathAPI, route.ChatCompletions, "chat-prod", ""},
		{"/openai/deployments/emb/embeddings", pathAPI, route.Embeddings, "emb", ""},
		{"/v1/models", pathModels, "", "", ""},
		{"/openai/v1/models", pathModels, "", "", ""},
		{"/v1/models/gpt-4o", pathModels, "", "", "gpt-4o"},
		{"/v1/images/generations", pathAPI, route.ImagesGenerations, "", ""},
		{"/v1/audio/transcriptions", pathAPI, route.AudioTranscriptions, "", ""},
		{"/openai/deployments/whisper/audio/transcriptions", pathAPI, route.AudioTranscriptions, "whisper", ""},
		{"/openai/deployments/dalle/images/generations", pathAPI, route.ImagesGenerations, "dalle", ""},
		{"/v1/responses", pathAPI, route.Responses, "", ""},
		{"/openai/v1/responses", pathAPI, route.Responses, "", ""},
		{"/openai/responses", pathAPI, route.Responses, "", ""},
		{"/v1/responses/compact", pathAPI, route.ResponsesCompact, "", ""},
		{"/openai/v1/responses/compact", pathAPI, route.ResponsesCompact, "", ""},
		{"/openai/responses/compact", pathAPI, route.ResponsesCompact, "", ""},
		{"/v1/responses/resp_1", pathObject, route.Responses, "", "responses/resp_1"},
		{"/openai/responses/resp_1/input_items", pathObject, route.Responses, "", "responses/resp_1/input_items"},
		{"/v1/moderations", pathAPI, route.Moderations, "", ""},
		{"/v1/files", pathUnknown, "", "", ""},
		{"/openai/deployments//chat/completions", pathUnknown, "", "", ""},
		{"/openai/deployments/x/images", pathUnknown, "", "", ""},
		{"/openai/other", pathUnknown, "", "", ""},
		{"/v1/messages", pathAPI, route.Messages, "", ""},
		{"/v1/messages/count_tokens", pathAPI, route.CountTokens, "", ""},
		{"/openai/v1/messages", pathUnknown, "", "", ""},
		{"/", pathUnknown, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			kind, op, dep, model := classify(tc.path)
			if kind != tc.kind || op != tc.op || dep != tc.dep || model != tc.model {
				t.Fatalf("classify = %v %q %q %q", kind, op, dep, model)
			}
		})
	}
}

func TestDeploymentResponsesPath(t *testing.T) {
	for _, tc := range []struct {
		path, dep string
		ok        bool
	}{
		{"/openai/deployments/gpt-4o/responses", "gpt-4o", true},
		{"/openai/deployments/gpt-4o/responses/", "gpt-4o", true},
		{"/openai/deployments/gpt-4o/responses/resp_1/cancel", "gpt-4o", true},
		{"/openai/deployments/gpt-4o/chat/completions", "gpt-4o", false},
		{"/openai/deployments/gpt-4o/responsesx", "gpt-4o", false},
		{"/openai/deployments//responses", "", false},
		{"/openai/v1/responses", "", false},
	} {
		dep, ok := deploymentResponsesPath(tc.path)
		if ok != tc.ok || (ok && dep != tc.dep) {
			t.Errorf("deploymentResponsesPath(%q) = %q %v, want %q %v", tc.path, dep, ok, tc.dep, tc.ok)
		}
	}
}
