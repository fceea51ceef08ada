package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// Gemini's own API, inbound: clients of Google's SDKs call
// {version}/models/{model}:{method}, with the gateway's base URL.
// generateContent and streamGenerateContent go through the pool as a call
// in Gemini's format (route.Request.Format): passed through to a Gemini
// member, translated for the others, like /v1/messages. embedContent and
// batchEmbedContents are translated here into an embeddings call, and the
// answer back. countTokens goes to the pool's Gemini members, or is answered
// with the gateway's estimate when it has none. Every
// error is answered in Google's shape (translate.ErrorToGemini), a 429 or
// 503 with Retry-After also with a google.rpc.RetryInfo detail.

// Gemini API methods the gateway serves.
const (
	gmGenerate      = "generateContent"
	gmStream        = "streamGenerateContent"
	gmCountTokens   = "countTokens"
	gmEmbed         = "embedContent"
	gmBatchEmbed    = "batchEmbedContents"
	geminiAPIPrefix = "models/"
)

// geminiPath reads a path of Gemini's API: /v1beta/models/{model}:{method}
// (or /v1/…): the model and the method, and whether the path is of that
// shape at all (ok), whatever its method. A model named with a "/"
// (tunedModels/…) is not.
func geminiPath(path string) (model, method string, ok bool) {
	var rest string
	v1 := false
	switch {
	case strings.HasPrefix(path, "/v1beta/"+geminiAPIPrefix):
		rest = path[len("/v1beta/"+geminiAPIPrefix):]
	case strings.HasPrefix(path, "/v1/"+geminiAPIPrefix):
		rest, v1 = path[len("/v1/"+geminiAPIPrefix):], true
	default:
		return "", "", false
	}
	model, method, ok = strings.Cut(strings.TrimSuffix(rest, "/"), ":")
	if !ok || model == "" || strings.Contains(model, "/") {
		return "", "", false
	}
	if v1 && !servedGemini(method) {
		// /v1/models/{id} is also OpenAI's model retrieval, and
		// fine-tuned OpenAI ids hold colons (ft:gpt-4o-mini:org::id).
		return "", "", false
	}
	return model, method, true
}

// servedGemini reports whether the gateway serves the Gemini API method.
func servedGemini(method string) bool {
	switch method {
	case gmGenerate, gmStream, gmCountTokens, gmEmbed, gmBatchEmbed:
		return true
	}
	return false
}

// geminiModelsPath reads a path of Gemini's model list: /v1beta/models
// (id "") or /v1beta/models/{id} (a model's get), and whether the path is
// of that shape. (/v1/models is OpenAI's model list.)
func geminiModelsPath(path string) (id string, ok bool) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(path, "/"), "/v1beta/models")
	if !ok {
		return "", false
	}
	if rest == "" {
		return "", true
	}
	id, ok = strings.CutPrefix(rest, "/")
	if !ok || id == "" || strings.Contains(id, ":") {
		return "", false
	}
	return id, true
}

// IsGeminiPath reports whether a request path, as sent, is one of Gemini's
// API (models/{model}:{method}, or the model list under /v1beta/): its
// errors are answered in Google's format, even by the gateway's edge.
func IsGeminiPath(path string) bool {
	if _, ok := geminiModelsPath(path); ok {
		return true
	}
	_, _, ok := geminiPath(path)
	return ok
}

// classifyGemini classifies a Gemini API path: an API call whose model
// the path names (x.dep), the method x.rel. A method the gateway does not
// serve is 404 in Google's format. The key in the query (?key=, which
// some clients send) is taken out of it, into X-Goog-Api-Key, before
// anything logs or forwards the URL.
func classifyGemini(x *exchange, model, method string) error {
	x.format = translate.Gemini
	stripQueryKey(x.r)
	switch method {
	case gmGenerate, gmStream, gmCountTokens:
		x.op = route.ChatCompletions
	case gmEmbed, gmBatchEmbed:
		x.op = route.Embeddings
	default:
		return requestError(http.StatusNotFound, "not_found", fmt.Sprintf(
			"switchover: the Gemini API method %q is not served; the gateway serves models/{model}:generateContent, :streamGenerateContent, :countTokens, :embedContent and :batchEmbedContents",
			truncate(method, 60)))
	}
	x.kind, x.dep, x.rel = pathAPI, model, method
	return nil
}

// stripQueryKey moves the API key of r's query (key=…) into the
// X-Goog-Api-Key header, unless that header is set, and takes it out of
// the query.
func stripQueryKey(r *http.Request) {
	if !strings.Contains(r.URL.RawQuery, "key=") {
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		r.URL.RawQuery = "" // unreadable: nothing of it is kept
		return
	}
	if k := q.Get("key"); k != "" && r.Header.Get("X-Goog-Api-Key") == "" {
		r.Header.Set("X-Goog-Api-Key", k)
	}
	q.Del("key")
	r.URL.RawQuery = q.Encode()
}

// geminiBody is the stage that turns the body of a Gemini client's
// embedContent or batchEmbedContents into an embeddings request for the
// path's model (400 for what it cannot carry: a taskType, a title, parts
// other than text); other calls go on as they are.
func geminiBody(x *exchange) error {
	if x.format != translate.Gemini || x.op != route.Embeddings {
		return nil
	}
	body, err := translate.GeminiEmbedToOpenAI(x.body, x.dep, x.rel == gmBatchEmbed)
	if err != nil {
		return requestError(http.StatusBadRequest, "invalid_request", "switchover: "+err.Error())
	}
	x.body = body
	return nil
}

// geminiCall sets what a Gemini client's path says on req: streaming for
// streamGenerateContent; the embedding methods' request is OpenAI's.
func geminiCall(x *exchange, req *route.Request) {
	switch x.rel {
	case gmStream:
		req.Stream = true
	case gmEmbed, gmBatchEmbed:
		req.Format = translate.OpenAI
	}
}

// countGeminiTokens is the stage that sends countTokens on, as
// route.GeminiCountTokens, to the pool's Gemini members (the Gemini API,
// Vertex AI's Google models), which count them, when it has one; for a
// pool without, it answers with the gateway's estimate of the prompt
// (route.Request.PromptTokens), marked with HeaderEstimate:
// {"totalTokens": n}, and the key's limits do not apply to it.
func countGeminiTokens(x *exchange) error {
	if x.format != translate.Gemini || x.rel != gmCountTokens {
		return nil
	}
	if hasGeminiMember(x.pool) {
		x.op, x.req.Op = route.GeminiCountTokens, route.GeminiCountTokens
		return nil
	}
	if err := chargeDecoding(x); err != nil {
		return err
	}
	n := x.req.PromptTokens()
	x.w.Header().Set(HeaderEstimate, "true")
	x.w.Header().Set("Content-Type", "application/json")
	x.writeHeader(http.StatusOK)
	fmt.Fprintf(x.w, "{\"totalTokens\":%d}", n)
	return errAnswered
}

// hasGeminiMember reports whether a member of p takes calls in Gemini's
// format (and so counts a Gemini client's tokens).
func hasGeminiMember(p *route.Pool) bool {
	for _, m := range p.Members {
		if m.Backend.Provider.Format() == translate.Gemini {
			return true
		}
	}
	return false
}

// maxGeminiAnswer bounds an embeddings answer read to be translated.
const maxGeminiAnswer = 64 << 20

// geminiAnswer fits the pool's answer to a Gemini client: an embeddings
// answer translated into embedContent's; an error in Google's shape,
// with a RetryInfo detail when it says when to retry; a stream asked for
// without alt=sse turned into the JSON array Gemini streams then.
func (x *exchange) geminiAnswer(resp *http.Response) error {
	if x.op == route.Embeddings || resp.StatusCode >= 400 {
		raw, err := io.ReadAll(io.LimitReader(resp.Body, maxGeminiAnswer+1))
		resp.Body.Close()
		if err != nil {
			return serverError(http.StatusBadGateway, "bad_gateway", "switchover: reading the answer: "+err.Error()).because(err)
		}
		if len(raw) > maxGeminiAnswer {
			return serverError(http.StatusBadGateway, "bad_gateway", "switchover: the answer is too large to translate")
		}
		out := raw
		switch {
		case resp.StatusCode >= 400:
			from := translate.Gemini
			if x.op == route.Embeddings {
				from = translate.OpenAI
			}
			out = geminiError(resp.StatusCode, translate.ErrorToGemini(from, resp.StatusCode, raw), resp.Header)
		case resp.StatusCode/100 == 2:
			if out, err = translate.OpenAIEmbeddingToGemini(raw, x.rel == gmBatchEmbed); err != nil {
				return serverError(http.StatusBadGateway, "bad_gateway", "switchover: "+err.Error()).because(err)
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(out))
		resp.ContentLength = int64(len(out))
		resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
		resp.Header.Set("Content-Type", "application/json")
		return nil
	}
	if x.rel == gmStream && !altSSE(x.r) && route.IsEventStream(resp.Header) {
		resp.Body = newJSONArrayStream(resp.Body)
		resp.Header.Set("Content-Type", "application/json")
		resp.Header.Del("Content-Length")
		resp.ContentLength = -1
	}
	return nil
}

// geminiError adds to a Gemini error body, when status is 429 or 503 and
// h has Retry-After, the RetryInfo detail Google's SDKs read.
func geminiError(status int, body []byte, h http.Header) []byte {
	if status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return body
	}
	secs, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || secs <= 0 {
		return body
	}
	return translate.WithGeminiRetryDelay(body, time.Duration(secs)*time.Second)
}

// altSSE reports whether a streamGenerateContent call asked for
// server-sent events (alt=sse), as Google's SDKs do; without it Gemini
// streams one JSON array.
func altSSE(r *http.Request) bool {
	return r.URL.Query().Get("alt") == "sse"
}

// jsonArrayStream turns a Gemini SSE stream ("data: {...}" events) into
// the JSON array streamGenerateContent answers without alt=sse: "[",
// the events' data separated by ",\r\n", "]". Each event is written as
// soon as it is whole. A source error ends it unclosed, so that the
// client sees a broken array rather than a whole one.
type jsonArrayStream struct {
	src  io.ReadCloser
	buf  []byte // source bytes not yet split into lines
	out  []byte
	data []byte // the current event's data
	n    int    // events written
	err  error
}

func newJSONArrayStream(src io.ReadCloser) *jsonArrayStream {
	return &jsonArrayStream{src: src}
}

func (s *jsonArrayStream) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.fill()
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

func (s *jsonArrayStream) fill() {
	var chunk [4 << 10]byte
	n, err := s.src.Read(chunk[:])
	s.buf = append(s.buf, chunk[:n]...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimRight(s.buf[:i], "\r")
		s.buf = s.buf[i+1:]
		s.line(line)
	}
	if len(s.buf) > 32<<20 {
		s.err = errors.New("switchover: a stream event is too large")
		return
	}
	switch {
	case err == io.EOF:
		s.line(nil)
		if s.n == 0 {
			s.out = append(s.out, '[')
		}
		s.out = append(s.out, ']')
		s.err = io.EOF
	case err != nil:
		s.err = err
	}
}

// line takes one line of the SSE source; an empty one ends an event.
func (s *jsonArrayStream) line(line []byte) {
	if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		s.data = append(s.data, bytes.TrimPrefix(v, []byte(" "))...)
		return
	}
	if len(line) != 0 || len(s.data) == 0 {
		return
	}
	if s.n == 0 {
		s.out = append(s.out, '[')
	} else {
		s.out = append(s.out, ",\r\n"...)
	}
	s.out = append(s.out, s.data...)
	s.data, s.n = s.data[:0], s.n+1
}

func (s *jsonArrayStream) Close() error { return s.src.Close() }

// GeminiError is an error answer of the gateway's own, in Google's shape,
// for a caller of Gemini's API: status, the gateway's code (kept as an
// ErrorInfo reason) and msg; h, the answer's headers, gives the RetryInfo
// of a 429 or 503 with Retry-After.
func GeminiError(status int, code, msg string, h http.Header) json.RawMessage {
	body := (&apiError{status: status, typ: "invalid_request_error", code: code, msg: msg}).body()
	return geminiError(status, translate.ErrorToGemini(translate.OpenAI, status, body), h)
}

// geminiKeyError names, in the message of a missing or wrong key, the
// header Google's SDKs send it in.
func geminiKeyError(err error) error {
	var e *apiError
	if errors.As(err, &e) && e.msg == msgBadKey {
		e.msg = "switchover: missing or incorrect gateway key; send it as \"x-goog-api-key: KEY\" (Google's SDKs: the client's API key) or \"Authorization: Bearer KEY\""
	}
	return err
}
