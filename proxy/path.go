package proxy

import (
	"sort"
	"strings"

	"github.com/switchover-gw/switchover/route"
)

type pathKind uint8

const (
	pathUnknown pathKind = iota
	pathAPI
	pathModels
	pathObject // a call on a stored response: GET, DELETE, POST …/cancel
	pathPinned // a path of stored objects with a pinned route, or an unknown path with a backend for those
	pathRealtime
)

// classify maps a request path to what it asks for: an API operation (with
// the deployment, for Azure-style paths), the model list, or a stored
// response (objectPath, relative to the API root: "responses/{id}…").
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
			if rest == "responses" {
				return pathAPI, route.Responses, "", "" // with an api-version
			}
			if strings.HasPrefix(rest, "responses/") {
				return pathObject, route.Responses, "", rest
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

// isOp reports whether o is an operation routed by the model in its body
// under /v1/ and /openai/v1/.
func isOp(o route.Operation) bool {
	switch o {
	case route.Messages, route.CountTokens:
		return false
	}
	for _, op := range route.Operations() {
		if o == op {
			return true
		}
	}
	return false
}

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
	ops := []string{"chat/completions", "completions", "embeddings", "responses (and responses/{id})", "audio/transcriptions",
		"audio/translations", "audio/speech", "images/generations", "images/edits", "images/variations", "moderations", "models",
		"realtime", "messages", "messages/count_tokens"}
	var pinned []string
	for _, p := range rt.Pinned {
		pinned = append(pinned, p.Path)
	}
	sort.Strings(pinned)
	s := "it routes /v1/ (and /openai/v1/, and Azure's /openai/deployments/{deployment}/) " + strings.Join(ops, ", ")
	if len(pinned) > 0 {
		s += "; pinned to their backends: " + strings.Join(pinned, ", ")
	} else {
		s += "; stored-object paths (files, batches, fine_tuning …) need a pinned route in the configuration"
	}
	return s
}
