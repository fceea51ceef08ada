package sim

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// apiError is an error response in a flavour's wire format.
type apiError struct {
	status int
	body   any
}

// azureErrorBody is Azure's gateway-level error shape:
// {"error":{"code":"...","message":"..."}}.
type azureErrorBody struct {
	Error azureError `json:"error"`
}

type azureError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// openAIErrorBody is the OpenAI error shape, which Azure also returns for
// model-level errors (server errors, content filter, bad requests).
type openAIErrorBody struct {
	Error openAIError `json:"error"`
}

type openAIError struct {
	Message    string  `json:"message"`
	Type       *string `json:"type"`
	Param      *string `json:"param"`
	Code       *string `json:"code"`
	Status     int     `json:"status,omitempty"`
	InnerError any     `json:"innererror,omitempty"`
}

func strp(s string) *string { return &s }

func openAIErr(status int, msg string, typ, param, code *string) apiError {
	return apiError{status: status, body: openAIErrorBody{Error: openAIError{Message: msg, Type: typ, Param: param, Code: code}}}
}

func azureErr(status int, code, msg string) apiError {
	return apiError{status: status, body: azureErrorBody{Error: azureError{Code: code, Message: msg}}}
}

// errRouteNotFound answers a path the flavour does not serve (gemini: or a
// method other than POST).
func errRouteNotFound(fl Flavour, r *http.Request) apiError {
	switch fl {
	case Anthropic:
		return anthropicErr(http.StatusNotFound, "not_found_error", "Not Found")
	case Gemini:
		return googleErr(http.StatusNotFound, "NOT_FOUND", "Method not found.")
	}
	if fl == OpenAI {
		return openAIErr(http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path),
			strp("invalid_request_error"), nil, nil)
	}
	return azureErr(http.StatusNotFound, "404", "Resource not found")
}

// errDeploymentNotFound answers an Azure deployment name, or an OpenAI,
// Anthropic or Gemini model, that this deployment is not.
func errDeploymentNotFound(fl Flavour, model string) apiError {
	switch fl {
	case Anthropic:
		return anthropicErr(http.StatusNotFound, "not_found_error", "model: "+model)
	case Gemini:
		return googleErr(http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", model))
	}
	if fl == OpenAI {
		return openAIErr(http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model),
			strp("invalid_request_error"), nil, strp("model_not_found"))
	}
	return azureErr(http.StatusNotFound, "DeploymentNotFound",
		"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.")
}

// errUnknownModel is Azure AI Foundry's answer to a model the resource has
// no deployment of: a 400, not Azure OpenAI's 404.
func errUnknownModel(model string) apiError {
	return azureErr(http.StatusBadRequest, "unknown_model", "Unknown model: "+model)
}

// errUnauthorized answers a missing or wrong key. Gemini answers 403 for a
// missing key and 400 for a wrong one, as Google does.
func errUnauthorized(fl Flavour, given string) apiError {
	switch fl {
	case Anthropic:
		if given == "" {
			return anthropicErr(http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
		}
		return anthropicErr(http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
	case Gemini:
		if given == "" {
			return googleErr(http.StatusForbidden, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
		}
		return geminiKeyInvalid()
	}
	if fl == OpenAI {
		if given == "" {
			return openAIErr(http.StatusUnauthorized, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username. You can obtain an API key from https://platform.openai.com/account/api-keys.",
				strp("invalid_request_error"), nil, nil)
		}
		return openAIErr(http.StatusUnauthorized, fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", maskKey(given)),
			strp("invalid_request_error"), nil, strp("invalid_api_key"))
	}
	return azureErr(http.StatusUnauthorized, "401",
		"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
}

// errForbidden answers the forbidden fault with the flavour's 403: azure's
// firewall refusal, openai's unsupported region, anthropic's
// permission_error, gemini's PERMISSION_DENIED.
func errForbidden(fl Flavour) apiError {
	switch fl {
	case Anthropic:
		return anthropicErr(http.StatusForbidden, "permission_error", "Your API key does not have permission to use the specified resource.")
	case Gemini:
		return googleErr(http.StatusForbidden, "PERMISSION_DENIED", "The caller does not have permission")
	case OpenAI:
		return openAIErr(http.StatusForbidden, "Country, region, or territory not supported",
			strp("request_forbidden"), nil, strp("unsupported_country_region_territory"))
	}
	return azureErr(http.StatusForbidden, "403", "Access denied due to Virtual Network/Firewall rules.")
}

// maskKey shows only the ends of a key, as OpenAI does.
func maskKey(k string) string {
	if len(k) <= 8 {
		return "****"
	}
	return k[:3] + "****" + k[len(k)-4:]
}

// errInvalidRequest answers a request the sim could not parse or that
// misses something required, with 400. Azure and OpenAI use the OpenAI
// shape.
func errInvalidRequest(fl Flavour, msg string) apiError {
	switch fl {
	case Anthropic:
		return anthropicErr(http.StatusBadRequest, "invalid_request_error", msg)
	case Gemini:
		return googleErr(http.StatusBadRequest, "INVALID_ARGUMENT", msg)
	}
	return openAIErr(http.StatusBadRequest, msg, strp("invalid_request_error"), nil, nil)
}

// errMissingModel answers a body without the model it must name.
func errMissingModel(fl Flavour) apiError {
	if fl == Anthropic {
		return errInvalidRequest(fl, "model: Field required")
	}
	return errInvalidRequest(fl, "you must provide a model parameter")
}

// errMethodNotAllowed answers a known path with the wrong method (gemini
// answers errRouteNotFound instead).
func errMethodNotAllowed(fl Flavour, r *http.Request) apiError {
	switch fl {
	case Anthropic:
		return anthropicErr(http.StatusMethodNotAllowed, "invalid_request_error", "Method Not Allowed")
	case Gemini:
		return errRouteNotFound(fl, r)
	}
	if fl == OpenAI {
		return openAIErr(http.StatusMethodNotAllowed, fmt.Sprintf("Invalid method for URL (%s %s)", r.Method, r.URL.Path),
			strp("invalid_request_error"), nil, nil)
	}
	return azureErr(http.StatusMethodNotAllowed, "405", "Method not allowed")
}

// errServer answers a 500 or 503 fault.
func errServer(fl Flavour, status int, requestID string) apiError {
	switch fl {
	case Anthropic:
		if status == http.StatusServiceUnavailable {
			return anthropicErr(status, "api_error", "Service Unavailable")
		}
		return anthropicErr(status, "api_error", "Internal server error")
	case Gemini:
		if status == http.StatusServiceUnavailable {
			return googleErr(status, "UNAVAILABLE", "The service is currently unavailable.")
		}
		return googleErr(status, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting")
	}
	if status == http.StatusServiceUnavailable {
		if fl == OpenAI {
			return openAIErr(status, "The engine is currently overloaded, please try again later.", strp("server_error"), nil, nil)
		}
		return azureErr(status, "ServiceUnavailable", "The service is temporarily unable to process your request. Please try again later.")
	}
	if fl == OpenAI {
		return openAIErr(status, "The server had an error while processing your request. Sorry about that!", strp("server_error"), nil, nil)
	}
	return openAIErr(status, fmt.Sprintf("The server had an error processing your request. Sorry about that! You can retry your request, or contact us through an Azure support request at: https://go.microsoft.com/fwlink/?linkid=2213926 if you keep seeing this error. (Please include the request ID %s in your email.)", requestID),
		strp("server_error"), nil, nil)
}

// errDown answers the down fault: 503, but 529 overloaded_error for
// anthropic, which documents no 503.
func errDown(fl Flavour, requestID string) apiError {
	if fl == Anthropic {
		return anthropicOverloaded()
	}
	return errServer(fl, http.StatusServiceUnavailable, requestID)
}

// errOverloaded answers the overloaded fault: anthropic 529
// overloaded_error, gemini 503 UNAVAILABLE "The model is overloaded",
// azure and openai the 503 of errServer.
func errOverloaded(fl Flavour, requestID string) apiError {
	switch fl {
	case Anthropic:
		return anthropicOverloaded()
	case Gemini:
		return googleErr(http.StatusServiceUnavailable, "UNAVAILABLE", "The model is overloaded. Please try again later.")
	}
	return errServer(fl, http.StatusServiceUnavailable, requestID)
}

// errContentFilter answers a prompt that trips the block phrase (gemini
// answers 200 with promptFeedback instead; see geminiBlocked).
func errContentFilter(fl Flavour) apiError {
	switch fl {
	case Anthropic:
		return anthropicErr(http.StatusBadRequest, "invalid_request_error", "Output blocked by content filtering policy")
	case Gemini:
		return googleErr(http.StatusBadRequest, "INVALID_ARGUMENT", "The prompt was blocked by the safety filter.")
	}
	if fl == OpenAI {
		return openAIErr(http.StatusBadRequest, "Invalid prompt: your prompt was flagged as potentially violating our usage policy. Please try again with a different prompt: https://platform.openai.com/docs/guides/reasoning#advice-on-prompting",
			strp("invalid_request_error"), nil, strp("invalid_prompt"))
	}
	e := openAIErr(http.StatusBadRequest, "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
		nil, strp("prompt"), strp("content_filter"))
	body := e.body.(openAIErrorBody)
	body.Error.Status = http.StatusBadRequest
	body.Error.InnerError = struct {
		Code                string              `json:"code"`
		ContentFilterResult promptFilterResults `json:"content_filter_result"`
	}{"ResponsibleAIPolicyViolation", blockedPromptResults()}
	e.body = body
	return e
}

// errRateLimited answers a request the quota refused. lim holds the
// per-minute limits in force; apiVersion is the request's (azure). A
// request whose estimate alone is above the slice's token allowance (it
// can never be admitted) gets openai's "Request too large" message; the
// other flavours say what they say for any token refusal (azure's own
// template, as the real service does), and every flavour's headers carry
// the limit so a caller can tell.
func errRateLimited(fl Flavour, op operation, apiVersion, model string, a admission, lim limits, slice time.Duration) apiError {
	switch fl {
	case Anthropic:
		return anthropicRateLimited(model, a, lim)
	case Gemini:
		return geminiRateLimited(model, a, lim)
	}
	if fl == OpenAI {
		if a.neverFits() {
			msg := fmt.Sprintf("Request too large for %s in organization org-switchover-sim on tokens per min (TPM): Limit %d, Requested %d. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.",
				model, lim.tpm, a.cost)
			return openAIErr(http.StatusTooManyRequests, msg, strp("tokens"), nil, strp("rate_limit_exceeded"))
		}
		what, typ, limit, used, asked := "requests per min (RPM)", "requests", lim.rpm, a.reqUsed, int64(1)
		if a.limitedBy == limitTokens {
			what, typ, limit, used, asked = "tokens per min (TPM)", "tokens", lim.tpm, a.tokUsed, a.cost
		}
		msg := fmt.Sprintf("Rate limit reached for %s in organization org-switchover-sim on %s: Limit %d, Used %d, Requested %d. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.",
			model, what, limit, perMinute(used, slice), asked, openAIDuration(a.untilNext))
		return openAIErr(http.StatusTooManyRequests, msg, strp(typ), nil, strp("rate_limit_exceeded"))
	}
	kind := "call rate limit"
	if a.limitedBy == limitTokens {
		kind = "token rate limit"
	}
	msg := fmt.Sprintf("Requests to the %s Operation under Azure OpenAI API version %s have exceeded %s of your current OpenAI S0 pricing tier. Please retry after %d seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit.",
		op.azureName(), apiVersion, kind, ceilSeconds(a.untilNext))
	return azureErr(http.StatusTooManyRequests, "429", msg)
}

// setRetryHeaders sets retry-after (whole seconds, rounded up) and, for
// azure and openai, retry-after-ms to d. Gemini gets neither: its delay is
// only in the 429 body.
func setRetryHeaders(h http.Header, fl Flavour, d time.Duration) {
	if fl == Gemini || fl == Bedrock {
		return
	}
	h.Set("Retry-After", strconv.FormatInt(ceilSeconds(d), 10))
	if fl == Anthropic {
		return
	}
	h.Set("Retry-After-Ms", strconv.FormatInt(ceilMillis(d), 10))
}

// setRateHeaders sets the flavour's rate-limit headers from the slice
// state a at now: x-ratelimit-limit-* (the per-minute limits) and
// x-ratelimit-remaining-* (left in the slice) for azure and openai (older
// Azure API versions sent only the remaining pair; newer ones send the
// limits too, and a gateway needs them to tell a request that can never
// fit), plus x-ratelimit-reset-* for openai; anthropic-ratelimit-* for anthropic; gemini sends none. A
// limit that is unlimited gets no headers.
func setRateHeaders(h http.Header, fl Flavour, a admission, lim limits, now time.Time) {
	switch fl {
	case Gemini, Bedrock:
		return
	case Anthropic:
		setAnthropicRateHeaders(h, a, lim, now)
		return
	}
	if a.reqLimit > 0 {
		h.Set("X-Ratelimit-Limit-Requests", strconv.Itoa(lim.rpm))
		h.Set("X-Ratelimit-Remaining-Requests", strconv.FormatInt(a.remainingRequests(), 10))
		if fl == OpenAI {
			h.Set("X-Ratelimit-Reset-Requests", openAIDuration(a.untilNext))
		}
	}
	if a.tokLimit > 0 {
		h.Set("X-Ratelimit-Limit-Tokens", strconv.Itoa(lim.tpm))
		h.Set("X-Ratelimit-Remaining-Tokens", strconv.FormatInt(a.remainingTokens(), 10))
		if fl == OpenAI {
			h.Set("X-Ratelimit-Reset-Tokens", openAIDuration(a.untilNext))
		}
	}
}

// setAnthropicRateHeaders sets anthropic-ratelimit-{requests,tokens}-
// {limit,remaining,reset}: the per-minute limit, what is left in the
// slice, and the end of the slice as an RFC 3339 time, rounded up to the
// second.
func setAnthropicRateHeaders(h http.Header, a admission, lim limits, now time.Time) {
	reset := now.Add(a.untilNext)
	if t := reset.Truncate(time.Second); t.Before(reset) {
		reset = t.Add(time.Second)
	}
	resetText := reset.UTC().Format(time.RFC3339)
	if a.reqLimit > 0 {
		h.Set("Anthropic-Ratelimit-Requests-Limit", strconv.Itoa(lim.rpm))
		h.Set("Anthropic-Ratelimit-Requests-Remaining", strconv.FormatInt(a.remainingRequests(), 10))
		h.Set("Anthropic-Ratelimit-Requests-Reset", resetText)
	}
	if a.tokLimit > 0 {
		h.Set("Anthropic-Ratelimit-Tokens-Limit", strconv.Itoa(lim.tpm))
		h.Set("Anthropic-Ratelimit-Tokens-Remaining", strconv.FormatInt(a.remainingTokens(), 10))
		h.Set("Anthropic-Ratelimit-Tokens-Reset", resetText)
	}
}

func ceilSeconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}

func ceilMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// openAIDuration formats d the way OpenAI's x-ratelimit-reset-* headers and
// messages do ("20ms", "1.2s", "6m0s"): Go's duration format at millisecond
// precision, rounded up.
func openAIDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return (time.Duration(ceilMillis(d)) * time.Millisecond).String()
}
