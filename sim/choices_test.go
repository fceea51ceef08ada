package sim

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// TestChatNTwoAnswersTwoChoices: "n": 2 was answered with one choice. Each
// choice has its index and its own words, plain and streamed, and usage
// counts both.
func TestChatNTwoAnswersTwoChoices(t *testing.T) {
	for _, fl := range []Flavour{OpenAI, Azure} {
		t.Run(string(fl), func(t *testing.T) {
			s := startSim(t, one(fl, nil))
			ep := s.Deployments()[0]
			client := newClient(ep)
			q := chatParams(ep, "hello", 0)
			q.N = openai.Int(2)
			c, err := client.Chat.Completions.New(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Choices) != 2 || c.Choices[0].Index != 0 || c.Choices[1].Index != 1 {
				t.Fatalf("choices: %s", c.RawJSON())
			}
			if c.Choices[0].Message.Content == "" || c.Choices[0].Message.Content == c.Choices[1].Message.Content {
				t.Errorf("the choices should each have words of their own: %q, %q", c.Choices[0].Message.Content, c.Choices[1].Message.Content)
			}
			if c.Usage.CompletionTokens != 40 {
				t.Errorf("completion_tokens %d, want 40 (two answers of 20)", c.Usage.CompletionTokens)
			}

			stream := client.Chat.Completions.NewStreaming(context.Background(), q)
			acc := openai.ChatCompletionAccumulator{}
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if len(acc.Choices) != 2 || acc.Choices[1].Message.Content == "" || acc.Choices[1].FinishReason != "stop" {
				t.Errorf("streamed choices: %+v", acc.Choices)
			}
		})
	}
}

func TestChatNOutOfRangeIsRefused(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	resp, b := do(t, http.MethodPost, chatPath(ep), `{"model":"chat-prod","n":0,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "'n'") {
		t.Errorf("%d %s, want 400 naming n", resp.StatusCode, b)
	}
}
