package route

// MaxOutputTokens is the most the request lets the model generate: the
// largest of its max_tokens, max_completion_tokens and max_output_tokens,
// 0 when it sets none or its body is not JSON. Budgets price a request
// with it (the gateway's admission). Computed once, with PromptTokens.
func (r *Request) MaxOutputTokens() int64 {
	r.estimate()
	return r.maxOut
}
