package translate

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// providerError is what the converters read from any error body.
type providerError struct {
	message string
	code    string // OpenAI error.code, Anthropic error.type, Gemini error.status
	status  int    // Gemini error.code, 0 elsewhere
	reason  string // Gemini ErrorInfo reason, e.g. API_KEY_INVALID
	ok      bool   // the body had the provider's error shape
}

func parseError(from Format, body []byte) providerError {
	switch from {
	case OpenAI:
		var b struct {
			Error *struct {
				Message *string         `json:"message"`
				Type    *string         `json:"type"`
				Code    json.RawMessage `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &b) != nil || b.Error == nil || b.Error.Message == nil {
			return providerError{}
		}
		e := providerError{message: *b.Error.Message, ok: true, code: scalarString(b.Error.Code)}
		if e.code == "" && b.Error.Type != nil {
			e.code = *b.Error.Type
		}
		return e
	case Anthropic:
		var b anErrorBody
		if json.Unmarshal(body, &b) != nil || b.Error.Type == "" && b.Error.Message == "" {
			return providerError{}
		}
		return providerError{message: b.Error.Message, code: b.Error.Type, ok: true}
	case Gemini:
		var b gmErrorBody
		if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '[' {
			// streamGenerateContent may wrap its error in a list
			var list []gmErrorBody
			if json.Unmarshal(trimmed, &list) != nil || len(list) == 0 {
				return providerError{}
			}
			b = list[0]
		} else if json.Unmarshal(body, &b) != nil {
			return providerError{}
		}
		if b.Error.Message == "" && b.Error.Status == "" {
			return providerError{}
		}
		e := providerError{message: b.Error.Message, code: b.Error.Status, status: b.Error.Code, ok: true}
		for _, d := range b.Error.Details {
			var info struct {
				Type   string `json:"@type"`
				Reason string `json:"reason"`
			}
			if json.Unmarshal(d, &info) == nil && strings.HasSuffix(info.Type, "google.rpc.ErrorInfo") {
				e.reason = info.Reason
			}
		}
		return e
	}
	return providerError{}
}

// scalarString renders a JSON string or number as a string; anything else
// is "".
func scalarString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// rawMessage is the text of a body that is not a known error shape.
func rawMessage(status int, body []byte) string {
	if t := strings.TrimSpace(string(body)); t != "" {
		return t
	}
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "upstream error"
}

// ---- to OpenAI ----

type oaKind struct {
	typ  string
	code string // "" is null
}

var anthropicErrorKinds = map[string]oaKind{
	"invalid_request_error": {"invalid_request_error", ""},
	"authentication_error":  {"authentication_error", "invalid_api_key"},
	"billing_error":         {"insufficient_quota", "insufficient_quota"},
	"permission_error":      {"permission_error", "permission_denied"},
	"not_found_error":       {"not_found_error", "not_found"},
	"request_too_large":     {"invalid_request_error", "request_too_large"},
	"rate_limit_error":      {"rate_limit_error", "rate_limit_exceeded"},
	"timeout_error":         {"server_error", "timeout"},
	"api_error":             {"server_error", ""},
	"overloaded_error":      {"server_error", "overloaded"},
}

var geminiErrorKinds = map[string]oaKind{
	"INVALID_ARGUMENT":    {"invalid_request_error", ""},
	"OUT_OF_RANGE":        {"invalid_request_error", ""},
	"FAILED_PRECONDITION": {"invalid_request_error", "failed_precondition"},
	"UNAUTHENTICATED":     {"authentication_error", "invalid_api_key"},
	"PERMISSION_DENIED":   {"permission_error", "permission_denied"},
	"NOT_FOUND":           {"not_found_error", "not_found"},
	"RESOURCE_EXHAUSTED":  {"rate_limit_error", "rate_limit_exceeded"},
	"CANCELLED":           {"server_error", ""},
	"UNKNOWN":             {"server_error", ""},
	"INTERNAL":            {"server_error", ""},
	"DATA_LOSS":           {"server_error", ""},
	"UNAVAILABLE":         {"server_error", "overloaded"},
	"DEADLINE_EXCEEDED":   {"server_error", "timeout"},
}

func openAIKindByStatus(status int) oaKind {
	switch {
	case status == http.StatusUnauthorized:
		return oaKind{typ: "authentication_error"}
	case status == http.StatusForbidden:
		return oaKind{typ: "permission_error"}
	case status == http.StatusNotFound:
		return oaKind{typ: "not_found_error"}
	case status == http.StatusTooManyRequests:
		return oaKind{typ: "rate_limit_error", code: "rate_limit_exceeded"}
	case status >= 400 && status < 500:
		return oaKind{typ: "invalid_request_error"}
	}
	return oaKind{typ: "server_error"}
}

// ErrorToOpenAI converts an error body (any non-2xx response, or the data of
// an error event) from a provider to OpenAI's shape
// {"error":{"message","type","param","code"}}. The message is the
// provider's own text; type and code are mapped from the provider's error
// type (Anthropic rate_limit_error is code "rate_limit_exceeded",
// overloaded_error "overloaded"; Gemini RESOURCE_EXHAUSTED
// "rate_limit_exceeded", UNAVAILABLE "overloaded", an invalid API key
// "invalid_api_key"; see the tables above). A body from OpenAI that already
// has that shape is returned unchanged. It never fails: a body that does not
// parse becomes an error of a type chosen by status, keeping its text.
func ErrorToOpenAI(from Format, status int, body []byte) []byte {
	e := parseError(from, body)
	if from == OpenAI && e.ok {
		return body
	}
	kind := openAIKindByStatus(status)
	msg := rawMessage(status, body)
	if e.ok {
		msg = e.message
		var known oaKind
		var found bool
		switch from {
		case Anthropic:
			known, found = anthropicErrorKinds[e.code]
		case Gemini:
			known, found = geminiErrorKinds[e.code]
			if e.reason == "API_KEY_INVALID" {
				known, found = oaKind{"authentication_error", "invalid_api_key"}, true
			}
		}
		if found {
			kind = known
		} else if e.code != "" {
			kind.code = e.code
		}
	}
	out := oaErrorBody{Error: oaError{Message: msg, Type: kind.typ}}
	if kind.code != "" {
		out.Error.Code = &kind.code
	}
	return mustMarshal(out)
}

// ---- to Anthropic ----

// anthropicTypeByStatus is Anthropic's error type for an HTTP status.
func anthropicTypeByStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	if status >= 400 && status < 500 {
		return "invalid_request_error"
	}
	return "api_error"
}

// statusOfCode guesses the HTTP status an error code stands for, for error
// events inside a stream (which came with a 200).
func statusOfCode(from Format, e providerError) int {
	if e.status >= 400 {
		return e.status
	}
	switch from {
	case Gemini:
		switch e.code {
		case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
			return http.StatusBadRequest
		case "UNAUTHENTICATED":
			return http.StatusUnauthorized
		case "PERMISSION_DENIED":
			return http.StatusForbidden
		case "NOT_FOUND":
			return http.StatusNotFound
		case "RESOURCE_EXHAUSTED":
			return http.StatusTooManyRequests
		case "UNAVAILABLE":
			return http.StatusServiceUnavailable
		case "DEADLINE_EXCEEDED":
			return http.StatusGatewayTimeout
		}
	case OpenAI:
		switch e.code {
		case "rate_limit_exceeded", "insufficient_quota", "requests", "tokens", "rate_limit_error":
			return http.StatusTooManyRequests
		case "invalid_request_error", "content_filter", "context_length_exceeded", "invalid_prompt":
			return http.StatusBadRequest
		case "invalid_api_key", "authentication_error":
			return http.StatusUnauthorized
		case "overloaded":
			return 529
		}
	}
	return http.StatusInternalServerError
}

// ErrorToAnthropic converts an error body from a provider to Anthropic's
// shape {"type":"error","error":{"type","message"},"request_id":null}. The
// type follows the HTTP status as Anthropic's own does (400
// invalid_request_error, 401 authentication_error, 402 billing_error, 403
// permission_error, 404 not_found_error, 413 request_too_large, 429
// rate_limit_error, 500 api_error, 503 and 529 overloaded_error, 504
// timeout_error); a status that is not an error (an error event inside a
// stream, which has no request_id) is inferred from the body's code. The
// message is the provider's own text. request_id is null, the request's
// id not being known here (ErrorToAnthropicID sets it). A body from
// Anthropic that already has that shape is returned unchanged, its own
// request_id kept. It never fails: a body that does not parse becomes an
// error keeping its text.
func ErrorToAnthropic(from Format, status int, body []byte) []byte {
	return ErrorToAnthropicID(from, status, body, "")
}

// ErrorToAnthropicID is ErrorToAnthropic with id, the request's id, as
// the request_id of an error answer it builds ("": null).
func ErrorToAnthropicID(from Format, status int, body []byte, id string) []byte {
	e := parseError(from, body)
	if from == Anthropic && e.ok {
		var b anErrorBody
		if json.Unmarshal(body, &b) == nil && b.Type == "error" {
			return body
		}
	}
	msg := rawMessage(status, body)
	if e.ok {
		msg = e.message
	}
	typ := ""
	switch {
	case from == Anthropic && e.ok && e.code != "":
		typ = e.code
	case status >= 400:
		typ = anthropicTypeByStatus(status)
	case e.ok:
		typ = anthropicTypeByStatus(statusOfCode(from, e))
	default:
		typ = "api_error"
	}
	out := anErrorAnswer{Type: "error", Error: anError{Type: typ, Message: msg}}
	if status < 400 {
		return mustMarshal(anErrorBody{Type: out.Type, Error: out.Error})
	}
	if id != "" {
		out.RequestID = &id
	}
	return mustMarshal(out)
}

// anErrorAnswer is Anthropic's error answer: its error and the request's
// id, null when unknown.
type anErrorAnswer struct {
	Type      string  `json:"type"`
	Error     anError `json:"error"`
	RequestID *string `json:"request_id"`
}

// ---- classification helpers ----

// ErrorCode returns the provider's own error code from an error body, or
// from a prefix of one: OpenAI error.code (falling back to error.type when
// code is null: "rate_limit_exceeded", "insufficient_quota",
// "content_filter", Azure's "429"…), Anthropic error.type
// ("rate_limit_error", "overloaded_error"…), Gemini error.status
// ("RESOURCE_EXHAUSTED"…). It returns "" when the body names none.
func ErrorCode(from Format, body []byte) string {
	var code, typ string
	walk(body, func(stack []frame, tok json.Token) bool {
		s, ok := tok.(string)
		if !ok {
			if n, isNum := tok.(json.Number); isNum {
				s, ok = n.String(), true
			}
		}
		if !ok {
			return true
		}
		switch from {
		case OpenAI:
			switch {
			case keysAre(stack, "error", "code"):
				code = s
			case keysAre(stack, "error", "type"):
				typ = s
			}
			return code == ""
		case Anthropic:
			if keysAre(stack, "error", "type") {
				code = s
				return false
			}
		case Gemini:
			if keysAre(stack, "error", "status") || keysAre(stack, "", "error", "status") {
				code = s
				return false
			}
		}
		return true
	})
	if code == "" {
		return typ
	}
	return code
}

// RetryDelay returns the delay a Gemini error asks for in its
// google.rpc.RetryInfo detail ("12s", "0.5s"), reading a whole body or a
// prefix of one. It is 0 when there is none, and for other formats (which
// say it in the Retry-After header instead).
func RetryDelay(from Format, body []byte) time.Duration {
	if from != Gemini {
		return 0
	}
	// details elements: which are RetryInfo, and their delays
	isRetry := map[int]bool{}
	delays := map[int]string{}
	walk(body, func(stack []frame, tok json.Token) bool {
		s, ok := tok.(string)
		if !ok {
			return true
		}
		n := len(stack)
		if n < 4 {
			return true
		}
		elem := stack[n-2].idx
		switch {
		case keysAre(stack, "error", "details", "", "@type"), keysAre(stack, "", "error", "details", "", "@type"):
			isRetry[elem] = strings.HasSuffix(s, "google.rpc.RetryInfo")
		case keysAre(stack, "error", "details", "", "retryDelay"), keysAre(stack, "", "error", "details", "", "retryDelay"):
			delays[elem] = s
		}
		return true
	})
	best := -1
	var delay time.Duration
	for elem, d := range delays {
		if !isRetry[elem] || best >= 0 && elem > best {
			continue
		}
		if v, err := time.ParseDuration(d); err == nil && v > 0 {
			best, delay = elem, v
		}
	}
	return delay
}
