package route

import (
	"github.com/switchover-gw/switchover/translate"
)

// convertResponse translates a non-streaming success body from the
// backend's format to the client's, through the OpenAI format. req is the
// client's request body (a Responses answer echoes some of it).
func convertResponse(native, client translate.Format, body []byte, model string, req []byte) ([]byte, error) {
	if native == client {
		return body, nil
	}
	var err error
	switch native {
	case translate.Anthropic:
		body, err = translate.AnthropicResponseToOpenAI(body)
	case translate.Gemini:
		body, err = translate.GeminiResponseToOpenAI(body, model)
	}
	if err != nil {
		return nil, err
	}
	switch client {
	case translate.Anthropic:
		return translate.OpenAIResponseToAnthropic(body)
	case translate.Responses:
		return translate.OpenAIResponseToResponses(body, req)
	case translate.Gemini:
		return translate.OpenAIResponseToGemini(body, req)
	}
	return body, nil
}

// errorFormat is the format of f's error bodies: the Responses API's are
// OpenAI's.
func errorFormat(f translate.Format) translate.Format {
	if f == translate.Responses {
		return translate.OpenAI
	}
	return f
}

// bodyErrorFormat is the format of prov's error body, whose format is
// native for most providers; a provider whose errors come in more than one
// shape (Claude on Vertex AI: Anthropic's from the model, Google's from
// Vertex's front end) tells by the body.
func bodyErrorFormat(prov Provider, native translate.Format, body []byte) translate.Format {
	if ef, ok := prov.(interface {
		errorFormat(body []byte) translate.Format
	}); ok {
		return ef.errorFormat(body)
	}
	return native
}

// convertError translates an error body into the client's format, keeping
// the backend's own message; id is the request's id, the request_id of an
// Anthropic error body it makes (an Anthropic backend's own body keeps
// its own).
func convertError(native, client translate.Format, status int, body []byte, id string) []byte {
	native, client = errorFormat(native), errorFormat(client)
	if client == translate.Anthropic {
		if native == translate.Anthropic {
			return body
		}
		return translate.ErrorToAnthropicID(translate.OpenAI, status, translate.ErrorToOpenAI(native, status, body), id)
	}
	if client == translate.Gemini {
		if native == translate.Gemini {
			return body
		}
		return translate.ErrorToGemini(translate.OpenAI, status, translate.ErrorToOpenAI(native, status, body))
	}
	return translate.ErrorToOpenAI(native, status, body)
}

// streamConverter returns the converter of a stream from the backend's
// format to the client's, or nil when they are the same. The Anthropic
// client's message_start carries an estimate of the input tokens
// (Request.PromptTokens), which chat streams report only at their end.
func streamConverter(native, client translate.Format, model string, r *Request) translate.StreamConverter {
	if native == client {
		return nil
	}
	var toOpenAI translate.StreamConverter // the backend's stream as chat chunks
	// The usage chunk is always made, to count the stream's tokens; a
	// caller that did not ask for it does not get it (see usageReader).
	switch native {
	case translate.Anthropic:
		toOpenAI = translate.NewAnthropicToOpenAIStream(true)
	case translate.Gemini:
		toOpenAI = translate.NewGeminiToOpenAIStream(model, true)
	}
	var fromOpenAI translate.StreamConverter
	switch client {
	case translate.Anthropic:
		est := int(r.PromptTokens())
		fromOpenAI = translate.NewOpenAIToAnthropicStreamWith(translate.AnthropicStreamOptions{InputTokens: est})
	case translate.Responses:
		fromOpenAI = translate.NewOpenAIToResponsesStream(r.Body)
	case translate.Gemini:
		fromOpenAI = translate.NewOpenAIToGeminiStream(translate.GeminiStreamOptions{IncludeThoughts: translate.IncludesThoughts(r.Body)})
	}
	switch {
	case toOpenAI == nil:
		return fromOpenAI
	case fromOpenAI == nil:
		return toOpenAI
	}
	return translate.Chain(toOpenAI, fromOpenAI)
}
