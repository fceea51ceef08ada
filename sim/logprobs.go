package sim

import (
	"hash/fnv"
	"math"
)

// This file emulates logprobs on chat completions: with "logprobs": true
// each word of a choice gets a log probability, its bytes and
// top_logprobs alternatives (words of the list). The numbers are a
// function of the word and its neighbour in the list, so they are the same
// for the same answer; they mean nothing else.

// maxTopLogprobs is the largest top_logprobs OpenAI accepts.
const maxTopLogprobs = 20

// choiceLogprobs is a choice's logprobs.
type choiceLogprobs struct {
	Content []tokenLogprob `json:"content"`
	Refusal *[]any         `json:"refusal"`
}

type tokenLogprob struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// logprobsOf is the logprobs of words, or nil (null) when the request did
// not ask for them or they are a tool call's.
func (a *answer) logprobsOf(words []string) *choiceLogprobs {
	if a.req == nil || !a.req.logprobs || len(words) == 0 {
		return nil
	}
	out := &choiceLogprobs{Content: make([]tokenLogprob, 0, len(words))}
	for _, w := range words {
		lp := wordLogprob(w)
		t := tokenLogprob{Token: w, Logprob: lp, Bytes: tokenBytes(w), TopLogprobs: []topLogprob{}}
		for k := 0; k < a.req.topLogprobs; k++ {
			alt := w
			if k > 0 {
				alt = wordList[(int(hashWord(w))+k)%len(wordList)]
			}
			t.TopLogprobs = append(t.TopLogprobs, topLogprob{Token: alt, Logprob: lp - float64(k), Bytes: tokenBytes(alt)})
		}
		out.Content = append(out.Content, t)
	}
	return out
}

// wordLogprob is a log probability in (-1, 0] drawn from the word.
func wordLogprob(w string) float64 {
	return -float64(hashWord(w)%1000) / 1000 * math.Log(2)
}

func hashWord(w string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(w))
	return h.Sum32()
}

func tokenBytes(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}
