package route

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/translate"
)

// Operation is an OpenAI API operation that a pool can route, named by the
// last segments of its path.
type Operation string

// The operations the engine routes. Messages is Anthropic's chat
// operation (POST /v1/messages); it and ChatCompletions are the chat
// operations, which can be translated between providers, as can
// Responses (OpenAI's Responses API). The others go only to backends that
// speak the OpenAI API (OpenAI and Azure OpenAI), or for CountTokens
// Anthropic's.
const (
	ChatCompletions Operation = "chat/completions"
	Completions     Operation = "completions"
	Embeddings      Operation = "embeddings"
	Messages        Operation = "messages"
	Responses       Operation = "responses"
	// ResponsesCompact is the Responses API's compaction (POST
	// /v1/responses/compact): a create-type call routed by the model in
	// its body, answered with a response.compaction object. It is never
	// translated: only members that serve the Responses API take it.
	ResponsesCompact Operation = "responses/compact"
	CountTokens      Operation = "messages/count_tokens"
	// GeminiCountTokens is a Gemini client's countTokens, in Gemini's
	// format: served by Gemini members (the Gemini API, Vertex AI's
	// Google models) only, never translated.
	GeminiCountTokens   Operation = "gemini/countTokens"
	AudioTranscriptions Operation = "audio/transcriptions"
	AudioTranslations   Operation = "audio/translations"
	AudioSpeech         Operation = "audio/speech"
	ImagesGenerations   Operation = "images/generations"
	ImagesEdits         Operation = "images/edits"
	ImagesVariations    Operation = "images/variations"
	Moderations         Operation = "moderations"
	// Realtime is a WebSocket session (GET /v1/realtime): the engine makes
	// the upgrade request, failing over until a backend switches
	// protocols, and returns the 101 response, whose Body is the
	// connection (an io.ReadWriteCloser) for the caller to join to the
	// client's.
	Realtime Operation = "realtime"
)

// Operations lists the operations a pool routes, in the order
// OperationFromPath tries them.
var operations = []Operation{ChatCompletions, Completions, Embeddings, Responses, ResponsesCompact, CountTokens,
	AudioTranscriptions, AudioTranslations, AudioSpeech, ImagesGenerations, ImagesEdits, ImagesVariations, Moderations}

// Operations returns the operations a pool routes by model (Messages
// aside, which is Anthropic's path).
func Operations() []Operation { return append([]Operation(nil), operations...) }

// IsChat reports whether op is a chat operation.
func (op Operation) IsChat() bool { return op == ChatCompletions || op == Messages }

// Translatable reports whether op can be translated between providers:
// the chat operations and Responses.
func (op Operation) Translatable() bool { return op.IsChat() || op == Responses }

// Multipart reports whether op's body is multipart/form-data, its model a
// form field: transcriptions, translations, image edits and variations.
func (op Operation) Multipart() bool {
	return op == AudioTranscriptions || op == AudioTranslations || op == ImagesEdits || op == ImagesVariations
}

// passesBody reports whether a successful answer to op is passed on as it
// arrives rather than read whole first: speech is audio, streamed by the
// backend as it is made.
func (op Operation) passesBody() bool { return op == AudioSpeech }

// deploymentPath reports whether Azure serves op under
// /openai/deployments/{deployment}/ with an api-version.
func (op Operation) deploymentPath() bool {
	switch op {
	case ChatCompletions, Completions, Embeddings, AudioTranscriptions, AudioTranslations, AudioSpeech,
		ImagesGenerations, ImagesEdits, ImagesVariations:
		return true
	}
	return false
}

// OperationFromPath finds the operation a request path ends with, such as
// /v1/chat/completions or /openai/deployments/x/embeddings.
func OperationFromPath(path string) (Operation, bool) {
	path = strings.TrimSuffix(path, "/")
	if strings.HasSuffix(path, "/v1/messages") {
		return Messages, true
	}
	for _, op := range operations {
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
	// Header holds the client's headers. Only a short allowlist of them is
	// forwarded upstream (see forwardHeaders in headers.go): never the
	// caller's credentials, cookies, addresses or account headers.
	Header http.Header
	// Model is the model the client asked for: the body's "model", or the
	// deployment named in an Azure-style path.
	Model string
	// Stream is the body's "stream" flag.
	Stream bool
	// Format is the wire format of Body and of the response the client
	// expects: translate.OpenAI (the default, for the zero value too),
	// translate.Anthropic (POST /v1/messages), translate.Responses, or
	// translate.Gemini (a generateContent call of Google's API, whose
	// Model and Stream the caller sets from the path: the body names
	// neither).
	Format translate.Format

	// ContentType is the body's media type with its parameters, for a
	// multipart body (see Operation.Multipart); empty means JSON.
	ContentType string
	// Owner, if set, is the backend that holds the state the request
	// refers to (a previous response, a file): only that member of the
	// pool is tried, and when it cannot take the call the request fails
	// with an *OwnerUnavailableError rather than go to a backend without
	// that state. NewRequest sets it from the tagged ids in the body (see
	// TagID), which it replaces with the provider's own.
	Owner string
	// Tagger signs the caller's tenant into the ids of the objects the
	// answer names, and checked those of the request (NewTaggedRequest).
	// Nil means an Open Tagger with an empty secret: any id is reached.
	// NewTaggedRequest points it at the request's own copy of the
	// tagger it is given (tagger, below): one allocation fewer a request.
	Tagger *Tagger
	// MaxWait, if positive, is how long the caller will wait for quota:
	// when every member is out of it, the request waits in the pool's
	// queue (first come, first served) for the soonest window to reset,
	// and is tried again, instead of being answered 429 at once. Past it,
	// the usual 429 with Retry-After.
	MaxWait time.Duration
	// Method, Path and RawQuery, if Path is set, make the request a call
	// on an object the owner holds (GET responses/{id}, POST
	// responses/{id}/cancel): Path is relative to the API root the
	// backend's operations are under ("responses/resp_1/input_items"),
	// Method defaults to POST, and Body may be empty.
	Method, Path, RawQuery string

	ownerID string // the tagged id that named Owner, as the caller sent it

	tagger Tagger // what Tagger points at, as NewTaggedRequest sets it

	// storedChat says the request makes a chat completion the backend
	// stores ("store": true): its answer's id is tagged with its owner.
	storedChat bool

	modelSpan span   // where "model" sits in Body; empty when absent
	bodyModel string // the model named in Body

	canon        []byte // the body as an OpenAI chat request, once built
	includeUsage bool   // canon asks for a usage chunk

	values int // the body's JSON values (JSONStats.Values)

	// The token estimates, once computed (estimate): the prompt, the
	// most the answer may be, and their sum.
	prompt, maxOut, tokens int64
	tokensDone             bool

	// onPick, if set, is called when a member is picked for the request
	// (its quota admitted it): a queued request then leaves the queue,
	// so the next one tries while this one's call is under way.
	onPick func()
}

var _ Cost = (*Request)(nil)

// OwnerID is the tagged id, as the caller sent it, that named Owner
// (NewTaggedRequest); "" when none did.
func (r *Request) OwnerID() string { return r.ownerID }

// Tokens is the request's token estimate for quota admission, computed
// once: a rough upper estimate of the tokens a provider counts against
// its per-minute limit before running it, the prompt (PromptTokens) plus
// the most it may generate (MaxOutputTokens). Not safe for concurrent use
// until its first call has returned.
func (r *Request) Tokens() int64 {
	r.estimate()
	return r.tokens
}

// NewRequest reads the routing fields (model, stream) of a JSON body without
// decoding the rest. header may be nil.
//
// It first checks the body with ScanJSON, which builds nothing: a body
// that is not one JSON value (trailing data included) is ErrBadBody, one
// that nests too deep or has too many messages, input items, tools or
// content parts a *JSONLimitError, before anything decodes it.
//
// For Responses and CountTokens it also takes the owner out of any
// tagged id in the body (see Request.Owner); ids of two owners are an
// *OwnerConflictError.
func NewRequest(op Operation, body []byte, header http.Header) (*Request, error) {
	return NewTaggedRequest(op, body, header, nil)
}

// NewTaggedRequest is NewRequest for the caller of tagger (see Tagger): the
// tagged ids of a Responses or CountTokens body, and of any body when
// tagger is not Open, are checked (an id the caller may not reach, or a
// provider's id of a stored object, is an *UnknownIDError) and untagged.
// The request's Tagger is a copy of *tagger (nil for nil): the caller may
// build tagger on its stack.
func NewTaggedRequest(op Operation, body []byte, header http.Header, tagger *Tagger) (*Request, error) {
	st, err := ScanJSON(body)
	if err != nil {
		return nil, err
	}
	r, err := newScannedRequest(op, body, header, tagger)
	if r != nil {
		r.values = st.Values
	}
	return r, err
}

func newScannedRequest(op Operation, body []byte, header http.Header, tagger *Tagger) (*Request, error) {
	if op == Responses || op == ResponsesCompact || op == CountTokens || !tagger.open() {
		var owner, id string
		var err error
		if body, owner, id, err = tagger.UntagBody(body); err != nil {
			return nil, err
		}
		r, err := newJSONRequest(op, body, header)
		if r != nil {
			r.Owner, r.ownerID = owner, id
			r.setTagger(tagger)
		}
		return r, err
	}
	r, err := newJSONRequest(op, body, header)
	if r != nil {
		r.setTagger(tagger)
	}
	return r, err
}

// setTagger points r.Tagger at r's own copy of t (nil for nil).
func (r *Request) setTagger(t *Tagger) {
	if t == nil {
		r.Tagger = nil
		return
	}
	r.tagger = *t
	r.Tagger = &r.tagger
}

func newJSONRequest(op Operation, body []byte, header http.Header) (*Request, error) {
	model, ms, stream, err := peek(body)
	if err != nil {
		return nil, err
	}
	if header == nil {
		header = http.Header{}
	}
	r := &Request{Op: op, Body: body, Header: header, Model: model, Stream: stream, modelSpan: ms, bodyModel: model, Format: op.format()}
	r.storedChat = op == ChatCompletions && r.storesChat()
	return r, nil
}

// storesChat reports whether r's body asks the backend to store the chat
// completion: a top-level "store": true.
func (r *Request) storesChat() bool {
	if !bytes.Contains(r.Body, []byte(`"store"`)) {
		return false
	}
	v, ok := r.Member("store")
	return ok && bytes.Equal(bytes.TrimSpace(v), []byte("true"))
}

// format is the wire format of op's bodies.
func (op Operation) format() translate.Format {
	switch op {
	case Responses, ResponsesCompact:
		return translate.Responses
	case Messages, CountTokens:
		return translate.Anthropic
	}
	return translate.OpenAI
}

// BodyFor returns the body to send to a backend that reads the model from
// the body, with "model" set to model. It returns Body itself when nothing
// needs to change.
func (r *Request) BodyFor(model string) []byte {
	if model == "" || r.Path != "" {
		return r.Body
	}
	if r.ContentType != "" {
		return r.multipartFor(model)
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

// id is r's request id, the gateway's X-Request-Id (see Header), or ""
// when it has none.
func (r *Request) id() string {
	return r.Header.Get("X-Request-Id")
}

// canonical returns the body as an OpenAI chat completions request,
// translating it once when the client spoke another format.
func (r *Request) canonical() ([]byte, error) {
	if r.canon != nil {
		return r.canon, nil
	}
	body := r.Body
	switch r.format() {
	case translate.Anthropic:
		var err error
		if body, err = translate.AnthropicRequestToOpenAI(r.Body); err != nil {
			return nil, err
		}
	case translate.Responses:
		var err error
		if body, err = translate.ResponsesRequestToOpenAI(r.Body); err != nil {
			return nil, err
		}
	case translate.Gemini:
		var err error
		if body, err = translate.GeminiRequestToOpenAI(r.Body, translate.GeminiInboundOptions{Model: r.Model, Stream: r.Stream}); err != nil {
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

// EstimatedTokens is Tokens, for limits on tokens per minute outside the
// engine (a key's TPM).
func (r *Request) EstimatedTokens() int { return int(r.Tokens()) }

// neverFits returns the backend's whole per-minute token limit when a 429
// with headers h refused this request because the request alone is larger
// than that limit (its estimate exceeds x-ratelimit-limit-tokens or
// anthropic-ratelimit-input-tokens-limit), so no wait will help; else 0.
func (r *Request) neverFits(h http.Header) int {
	limit := 0
	for _, k := range []string{"X-Ratelimit-Limit-Tokens", "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Limit"} {
		if v, err := strconv.Atoi(strings.TrimSpace(h.Get(k))); err == nil && v > 0 {
			limit = v
			break
		}
	}
	if limit == 0 || r.Tokens() <= int64(limit) {
		return 0
	}
	return limit
}
