package config

import (
	"fmt"
	"strings"
)

// Pinned is a route for API paths whose objects live on the backend that
// made them (files, uploads, batches, fine-tuning jobs, vector stores,
// containers, conversations, Anthropic message batches): calls on them go
// to one backend, or to a pool without failover, never across the pool.
//
//	pinned:
//	  - paths: [files, uploads, batches]
//	    backend: aoai-weu
//	  - paths: [messages/batches]
//	    backend: claude
//
// An object made there gets an id that names its backend, and every later
// call naming that id (in the path, the query or the body) goes to that
// backend, whatever the route says.
type Pinned struct {
	// Paths are API paths relative to the API root: "files" matches
	// /v1/files, /v1/files/{id}/content, /openai/v1/files and Azure's
	// /openai/files?api-version=…; a leading "/v1/" is accepted and
	// dropped. Required.
	Paths []string `yaml:"paths"`
	// Backend is the backend every call goes to. Exactly one of Backend
	// and Pool.
	Backend string `yaml:"backend"`
	// Pool is a pool whose usable members take new objects (selection as
	// for any call, one attempt: a create is never sent twice); calls on an
	// object go to the member that made it. Exactly one of Backend and Pool.
	Pool string `yaml:"pool"`
}

// UnknownPaths names the backend that takes the /v1/ and /openai/v1/
// paths the gateway has no route for, and which of them it takes:
//
//	unknown_paths:
//	  backend: openai
//	  paths: [assistants, threads, vector_stores]
//
// Unset means such paths get 404 with the list of routes: nothing is
// forwarded by accident.
type UnknownPaths struct {
	// Backend is the openai, openai_compatible or azure backend that
	// takes them. Required.
	Backend string `yaml:"backend"`
	// Paths are the path prefixes forwarded, relative to the API root as
	// for pinned routes: "assistants" takes /v1/assistants and every path
	// under it; "*" takes every path. Whatever they say, the provider's
	// organisation and admin APIs (organization…, admin…, dashboard…),
	// realtime sub-paths (client secrets, sessions, calls) and stored
	// chat completions are forwarded only when an entry names them or a
	// path under them ("*" does not). Unset means none: the backend
	// takes no path, and a start-up warning says so (before, it took
	// every path). Risk: whatever is listed reaches the backend with its
	// credential, for every key without a pools or models restriction.
	Paths []string `yaml:"paths"`
}

// PinnedPath is a pinned route's path as the gateway matches it: relative
// to the API root, without slashes at its ends.
func PinnedPath(p string) string {
	p = strings.Trim(p, "/")
	for _, prefix := range []string{"openai/v1/", "v1/", "openai/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			return rest
		}
	}
	return p
}

// routedPaths are the operations pools route by model: a pinned route
// must not take them over.
var routedPaths = []string{"chat/completions", "completions", "embeddings", "messages", "messages/count_tokens",
	"responses", "audio", "images", "moderations", "models", "realtime"}

// validatePinned checks the pinned routes and unknown_paths. backendType
// maps every backend's name to its type; pools holds every pool's name.
func (c *Config) validatePinned(ps *Problems, backendType map[string]string, pools map[string]bool) {
	seen := map[string]int{} // pinned path -> the index of its route
	for i, r := range c.Pinned {
		p := fmt.Sprintf("pinned[%d]", i)
		r.validateTarget(ps, p, backendType, pools)
		if len(r.Paths) == 0 {
			ps.add(p+".paths", "list the API paths this route takes, such as [files, batches]")
		}
		for j, raw := range r.Paths {
			pp := fmt.Sprintf("%s.paths[%d]", p, j)
			path := PinnedPath(raw)
			validatePinnedPath(ps, pp, raw, path)
			if other, dup := seen[path]; dup {
				ps.add(pp, "%q is already pinned by pinned[%d]", raw, other)
			}
			seen[path] = i
			r.validatePathAPI(ps, pp, raw, path, backendType[r.Backend])
		}
	}
	if u := c.UnknownPaths; u != nil {
		if u.Backend == "" || backendType[u.Backend] == "" {
			ps.add("unknown_paths.backend", "no backend is named %q", u.Backend)
		} else if backendType[u.Backend] == TypeAnthropic || backendType[u.Backend] == TypeGemini {
			ps.add("unknown_paths.backend", "unknown paths are OpenAI API paths: name an openai, openai_compatible or azure backend, not %s", u.Backend)
		}
		for i, raw := range u.Paths {
			validateUnknownPath(ps, fmt.Sprintf("unknown_paths.paths[%d]", i), raw)
		}
	}
}

// UnknownPath is an entry of unknown_paths.paths as the gateway matches
// it: "*", or relative to the API root without slashes at its ends.
func UnknownPath(p string) string {
	if p == "*" {
		return p
	}
	return PinnedPath(p)
}

// validateUnknownPath checks the entry raw of unknown_paths.paths, at pp:
// "*" or a plain path prefix.
func validateUnknownPath(ps *Problems, pp, raw string) {
	path := UnknownPath(raw)
	if path == "*" {
		return
	}
	if path == "" {
		ps.add(pp, "an empty path; write \"*\" to forward every path")
		return
	}
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "" || strings.Trim(seg, ".") == "" || strings.ContainsAny(seg, "?#*%;\\ ") {
			ps.add(pp, "%q is a path prefix such as assistants or vector_stores, without a query, wildcards, escapes, dot or empty segments", raw)
			return
		}
	}
}

// validateTarget checks that the route at p names exactly one of a
// backend and a pool, and that it exists.
func (r Pinned) validateTarget(ps *Problems, p string, backendType map[string]string, pools map[string]bool) {
	switch {
	case r.Backend == "" && r.Pool == "":
		ps.add(p, "name a backend or a pool for these paths")
	case r.Backend != "" && r.Pool != "":
		ps.add(p, "name a backend or a pool, not both")
	case r.Backend != "" && backendType[r.Backend] == "":
		ps.add(p+".backend", "no backend is named %q", r.Backend)
	case r.Pool != "" && !pools[r.Pool]:
		ps.add(p+".pool", "no pool is named %q", r.Pool)
	}
}

// validatePinnedPath checks that path (raw as written, at pp) is a path
// prefix that the pools do not route.
func validatePinnedPath(ps *Problems, pp, raw, path string) {
	switch {
	case path == "":
		ps.add(pp, "an empty path would take every call")
	case strings.ContainsAny(path, "?#* "):
		ps.add(pp, "%q is a path prefix such as files or fine_tuning/jobs, without a query or wildcards", raw)
	default:
		for _, routed := range routedPaths {
			if path == routed || strings.HasPrefix(routed, path+"/") || strings.HasPrefix(path, routed+"/") && routed != "messages" {
				ps.add(pp, "%q is routed by the pools (by model, with failover); pinned routes are for the paths of stored objects", raw)
				break
			}
		}
	}
}

// validatePathAPI checks that a path pinned to a backend (of type t, ""
// when the route names none or an unknown one) is of that backend's API:
// messages/batches is Anthropic's, every other path OpenAI's.
func (r Pinned) validatePathAPI(ps *Problems, pp, raw, path, t string) {
	anthropicPath := path == "messages/batches" || strings.HasPrefix(path, "messages/batches/")
	if r.Backend == "" || t == "" || (t == TypeAnthropic) == anthropicPath {
		return
	}
	if anthropicPath {
		ps.add(pp, "messages/batches is Anthropic's API: pin it to an anthropic backend, not %s (%s)", r.Backend, t)
	} else {
		ps.add(pp, "%q is an OpenAI API path: pin it to an openai, openai_compatible or azure backend, not %s (%s)", raw, r.Backend, t)
	}
}
