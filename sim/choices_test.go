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

// TestChatLogprobs: logprobs gives every word of each choice a log
// probability and top_logprobs alternatives, plain and streamed.
func TestChatLogprobs(t *testing.T) {
	s := startSim(t, one(OpenAI, nil))
	ep := s.Deployments()[0]
	client := newClient(ep)
	q := chatParams(ep, "hello", 0)
	q.Logprobs = openai.Bool(true)
	q.TopLogprobs = openai.Int(2)
	c, err := client.Chat.Completions.New(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	lp := c.Choices[0].Logprobs.Content
	if len(lp) != 20 || len(lp[0].TopLogprobs) != 2 || lp[0].Logprob > 0 || lp[0].Token == "" || lp[0].TopLogprobs[0].Token != lp[0].Token {
		t.Fatalf("logprobs: %s", c.Choices[0].Logprobs.RawJSON())
	}
	stream := client.Chat.Completions.NewStreaming(context.Background(), q)
	words := 0
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			if len(ch.Choices[0].Logprobs.Content) != 1 {
				t.Fatalf("chunk without logprobs: %s", ch.RawJSON())
			}
			words++
		}
	}
	if err := stream.Err(); err != nil || words != 20 {
		t.Fatalf("%d words, %v", words, err)
	}
	resp, b := do(t, http.MethodPost, chatPath(ep), `{"model":"chat-prod","top_logprobs":2,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if resp.StatusCode != 400 {
		t.Errorf("top_logprobs without logprobs: %d %s", resp.StatusCode, b)
	}
}
