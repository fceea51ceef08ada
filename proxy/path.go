package proxy

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/translate"
)

// pathKind is what a request's path asks for; each kind has its stages
// (stagesOf).
type pathKind uint8

const (
	pathUnknown pathKind = iota
	pathAPI
	pathModels
	pathObject // a call on a stored response: GET, DELETE, POST …/cancel
	pathPinned // a path of stored objects with a pinned route, or an unknown path unknown_paths takes (forward.go)
	pathRealtime
)

// classifyPath is the stage that finds what the path asks for (an API
// operation, the model list, a stored response, a pinned path, a realtime
// session, a path unknown_paths takes) and the API format the caller
// speaks, in which its errors are answered: Anthropic's for /v1/messages,
// Google's for Gemini's API (models/{model}:{method}, and the model list
// under /v1beta/: gemini.go), OpenAI's otherwise. The path is normalised
// first (normalisePath), and the request carries the normalised path from
// here on: a path it refuses gets 400, before any key is checked. A path
// that nothing routes gets 404 with the list of what is routed.
func classifyPath(x *exchange) error {
	path, err := normalisePath(x.r.URL.EscapedPath())
	if err != nil {
		if anthropicPath(x.r.URL.Path) {
			x.format = translate.Anthropic
		}
		if IsGeminiPath(x.r.URL.Path) {
			x.format = translate.Gemini
			stripQueryKey(x.r)
		}
		return err
	}
	x.r.URL.Path, x.r.URL.RawPath = path, ""
	if model, method, ok := geminiPath(path); ok {
		return classifyGemini(x, model, method) // gemini.go
	}
	if id, ok := geminiModelsPath(path); ok {
		x.format, x.kind, x.rel = translate.Gemini, pathModels, id // models.go
		stripQueryKey(x.r)
		return nil
	}
	x.kind, x.op, x.dep, x.rel = classify(path)
	if x.kind == pathUnknown {
		if rel, ok := apiRelative(path); ok {
			if p := pinnedFor(x.rt, rel); p != nil {
				x.kind, x.pool, x.rel = pathPinned, p.Pool, rel
			} else if !conversationRoute(x, rel) && x.rt.Unknown != nil && (strings.HasPrefix(path, "/v1/") || strings.HasPrefix(path, "/openai/v1/")) {
				if err := x.rt.forwards(path, rel); err != nil {
					return err
				}
				x.kind, x.pool, x.rel = pathPinned, x.rt.Unknown, rel
			}
		}
	}
	if x.kind == pathUnknown {
		if dep, ok := deploymentResponsesPath(path); ok {
			return deploymentResponsesError(dep)
		}
		if rel, ok := apiRelative(path); ok && under(rel, "conversations") {
			return requestError(http.StatusNotFound, "not_found", fmt.Sprintf("switchover: no route for %s %s; "+
				"a conversation lives on the backend that makes it and its create names no model: "+
				"no pool has an openai or azure member with the Responses API to make it on, and no pinned route says which "+
				"(pinned: [{paths: [conversations], backend: ...}])", x.r.Method, truncate(path, 200)))
		}
		if strings.HasPrefix(path, "/v1beta/") {
			x.format = translate.Gemini // a client of Google's API: its error shape
		}
		return requestError(http.StatusNotFound, "not_found",
			fmt.Sprintf("switchover: no route for %s %s; %s", x.r.Method, truncate(path, 200), routeList(x.rt)))
	}
	switch x.op {
	case route.Messages, route.CountTokens:
		x.format = translate.Anthropic
	case route.Responses, route.ResponsesCompact:
		x.format = translate.Responses
	}
	return nil
}

// checkMethod is the stage that refuses a method the path does not take,
// with 405 and the Allow header.
func checkMethod(x *exchange) error {
	want := http.MethodPost
	switch x.kind {
	case pathModels:
		want = http.MethodGet
	case pathObject:
		want = objectMethod(x.rel, x.r.Method)
	case pathAPI:
		if x.op == route.ChatCompletions && x.dep == "" && x.r.Method == http.MethodGet {
			return storedChatListRefused()
		}
	case pathPinned:
		want = x.r.Method // the backend's API decides
	case pathRealtime:
		want = http.MethodGet
	}
	if x.r.Method != want {
		return requestError(http.StatusMethodNotAllowed, "method_not_allowed",
			fmt.Sprintf("switchover: %s %s is not allowed; use %s", x.r.Method, truncate(x.r.URL.Path, 200), want)).
			with("Allow", want)
	}
	return nil
}

// classify maps a request path to what it asks for: an API operation (with
// the deployment, for Azure-style paths), the model list, or a stored
// response (objectPath, relative to the API root: "responses/{id}…").
// responses/compact is an operation, routed by its body's model like
// responses, never a stored response's id.
func classify(path string) (kind pathKind, op route.Operation, deployment, modelID string) {
	for _, prefix := range []string{"/openai/v1/", "/v1/", "/openai/", "/"} {
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok {
			continue
		}
		rest = strings.TrimSuffix(rest, "/")
		if rest == "realtime" && prefix != "/" {
			return pathRealtime, route.Realtime, "", ""
		}
		if prefix == "/openai/" {
			if rest == "responses" || rest == string(route.ResponsesCompact) {
				return pathAPI, route.Operation(rest), "", "" // with an api-version
			}
			if strings.HasPrefix(rest, "responses/") {
				return pathObject, route.Responses, "", rest
			}
			if strings.HasPrefix(rest, storedChats) {
				return pathObject, route.ChatCompletions, "", rest
			}
			dep, after, ok := strings.Cut(strings.TrimPrefix(rest, "deployments/"), "/")
			if !strings.HasPrefix(rest, "deployments/") || !ok || dep == "" {
				return pathUnknown, "", "", ""
			}
			if o := route.Operation(after); isDeploymentOp(o) {
				return pathAPI, o, dep, ""
			}
			return pathUnknown, "", "", ""
		}
		if o := route.Operation(rest); isOp(o) {
			return pathAPI, o, "", ""
		}
		if prefix == "/v1/" && (rest == "messages" || rest == string(route.CountTokens)) {
			return pathAPI, route.Operation(rest), "", ""
		}
		if strings.HasPrefix(rest, "responses/") && prefix != "/" {
			return pathObject, route.Responses, "", rest
		}
		if strings.HasPrefix(rest, storedChats) && prefix != "/" {
			return pathObject, route.ChatCompletions, "", rest
		}
		if rest == "models" {
			return pathModels, "", "", ""
		}
		if id, ok := strings.CutPrefix(rest, "models/"); ok && id != "" {
			return pathModels, "", "", id
		}
		return pathUnknown, "", "", ""
	}
	return pathUnknown, "", "", ""
}

// deploymentResponsesPath reports whether path is the Responses API under
// an Azure deployment (/openai/deployments/{deployment}/responses, and
// the paths below it), where Azure does not serve it, and returns the
// deployment. The AzureOpenAI clients of the SDKs call it when made with
// a deployment.
func deploymentResponsesPath(path string) (deployment string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/openai/deployments/")
	if !ok {
		return "", false
	}
	dep, after, ok := strings.Cut(rest, "/")
	if !ok || dep == "" {
		return "", false
	}
	after = strings.TrimSuffix(after, "/")
	return dep, after == "responses" || strings.HasPrefix(after, "responses/")
}

// deploymentResponsesError is Azure's answer to the Responses API under a
// deployment: 404, code "404", "Resource not found", with the path to
// use instead: the Responses API is on /openai/v1/responses (or
// /openai/responses with an api-version), the deployment the body's
// model.
func deploymentResponsesError(deployment string) error {
	return requestError(http.StatusNotFound, "404", fmt.Sprintf(
		"Resource not found. The Responses API is not served under /openai/deployments/{deployment}/: "+
			"call /openai/v1/responses (or /openai/responses?api-version=...) with %q as the body's model",
		truncate(deployment, 100)))
}

// isOp reports whether o is an operation routed by the model in its body
// under /v1/ and /openai/v1/.
func isOp(o route.Operation) bool {
	switch o {
	case route.Messages, route.CountTokens:
		return false
	}
	for _, op := range routedOps {
		if o == op {
			return true
		}
	}
	return false
}

// routedOps are route.Operations, asked once: it returns a copy a call.
var routedOps = route.Operations()

// isDeploymentOp reports whether Azure serves o under
// /openai/deployments/{deployment}/.
func isDeploymentOp(o route.Operation) bool {
	switch o {
	case route.ChatCompletions, route.Completions, route.Embeddings, route.AudioTranscriptions, route.AudioTranslations,
		route.AudioSpeech, route.ImagesGenerations, route.ImagesEdits, route.ImagesVariations:
		return true
	}
	return false
}

// routeList is the 404's list of what the gateway routes.
func routeList(rt *Routes) string {
	ops := []string{"chat/completions (and chat/completions/{id}, made with store: true)", "completions", "embeddings", "responses (and responses/{id}, responses/compact)", "audio/transcriptions",
		"audio/translations", "audio/speech", "images/generations", "images/edits", "images/variations", "moderations", "models",
		"realtime", "messages", "messages/count_tokens"}
	// Gemini's API, for Google's SDKs.
	gemini := "/v1beta/models (and models/{model}), /v1beta/models/{model}:generateContent, :streamGenerateContent, :countTokens, :embedContent, :batchEmbedContents"
	var pinned []string
	for _, p := range rt.Pinned {
		pinned = append(pinned, p.Path)
	}
	sort.Strings(pinned)
	s := "it routes /v1/ (and /openai/v1/, and Azure's /openai/deployments/{deployment}/) " + strings.Join(ops, ", ") + "; and " + gemini
	if len(pinned) > 0 {
		s += "; pinned to their backends: " + strings.Join(pinned, ", ")
	} else {
		s += "; stored-object paths (files, batches, fine_tuning …) need a pinned route in the configuration"
	}
	return s
}
