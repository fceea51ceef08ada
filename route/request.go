package route

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/switchover-gw/switchover/translate"
)

// Operation is an OpenAI API operation that a pool can route, named by the
// last segments of its path.
type Operation string

// The operations the engine routes. Messages is Anthropic's chat
// operation (POST /v1/messages); it and ChatCompletions are the chat
// operations, which can be translated between providers.
const (
	ChatCompletions Operation = "chat/completions"
	Completions     Operation = "completions"
	Embeddings      Operation = "embeddings"
	Messages        Operation = "messages"
)

// IsChat reports whether op is a chat operation.
func (op Operation) IsChat() bool { return op == ChatCompletions || op == Messages }

// OperationFromPath finds the operation a request path ends with, such as
// /v1/chat/completions or /openai/deployments/x/embeddings.
func OperationFromPath(path string) (Operation, bool) {
	path = strings.TrimSuffix(path, "/")
	for _, op := range []Operation{ChatCompletions, Embeddings, Completions} {
		if strings.HasSuffix(path, "/"+string(op)) {
			return op, true
		}
	}
	return "", false
}

// Request is one call to a pool, with its body read once. The engine never
// modifies Body: every attempt gets its own reader over it, or its own copy
// when the backend needs the model renamed.
type Request struct {
	Op Operation
	// Body is the JSON request body as the client sent it.
	Body []byte
	// Header holds the client's headers. End-to-end headers are forwarded
	// upstream; credentials (Authorization, api-key), hop-by-hop headers and
	// Host never are.
	Header http.Header
	// Model is the model the client asked for: the body's "model", or the
	// deployment named in an Azure-style path.
	Model string
	// Stream is the body's "stream" flag.
	Stream bool
	// Format is the wire format of Body and of the response the client
	// expects: translate.OpenAI (the default, for the zero value too) or
	// translate.Anthropic (POST /v1/messages).
	Format translate.Format

	modelSpan span   // where "model" sits in Body; empty when absent
	bodyModel string // the model named in Body

	canon        []byte // the body as an OpenAI chat request, once built
	includeUsage bool   // canon asks for a usage chunk
}

// NewRequest reads the routing fields (model, stream) of a JSON body without
// decoding the rest. header may be nil.
func NewRequest(op Operation, body []byte, header http.Header) (*Request, error) {
	model, ms, stream, err := peek(body)
	if err != nil {
		return nil, err
	}
	if header == nil {
		header = http.Header{}
	}
	return &Request{Op: op, Body: body, Header: header, Model: model, Stream: stream, modelSpan: ms, bodyModel: model}, nil
}

// BodyFor returns the body to send to a backend that reads the model from
// the body, with "model" set to model. It returns Body itself when nothing
// needs to change.
func (r *Request) BodyFor(model string) []byte {
	if model == "" {
		return r.Body
	}
	if r.modelSpan.ok() && r.bodyModel == model {
		return r.Body
	}
	return withModel(r.Body, r.modelSpan, model)
}

// format is r's format, OpenAI when unset.
func (r *Request) format() translate.Format {
	if r.Format == "" {
		return translate.OpenAI
	}
	return r.Format
}

// canonical returns the body as an OpenAI chat completions request,
// translating it once when the client spoke another format.
func (r *Request) canonical() ([]byte, error) {
	if r.canon != nil {
		return r.canon, nil
	}
	body := r.Body
	if r.format() == translate.Anthropic {
		var err error
		if body, err = translate.AnthropicRequestToOpenAI(r.Body); err != nil {
			return nil, err
		}
	}
	var opts struct {
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if r.Stream {
		json.Unmarshal(body, &opts)
	}
	r.canon, r.includeUsage = body, opts.StreamOptions.IncludeUsage
	return body, nil
}

func (r *Request) String() string {
	return fmt.Sprintf("%s model=%q stream=%v bytes=%d", r.Op, r.Model, r.Stream, len(r.Body))
}
