package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/switchover-gw/switchover/internal/keysum"
)

// Key is a gateway key. Only its hash is kept, so the key itself is not in
// memory dumps of the handler and cannot be printed by accident.
type Key struct {
	Name string
	hash [sha256.Size]byte
}

// NewKey returns the key secret, known by name.
func NewKey(name, secret string) Key {
	return Key{Name: name, hash: sha256.Sum256([]byte(secret))}
}

// Match reports, in constant time, whether presented is the key.
func (k Key) Match(presented string) bool {
	h := keysum.Sum(presented)
	return subtle.ConstantTimeCompare(h[:], k.hash[:]) == 1
}

// presentedKey returns the key a caller sent: "Authorization: Bearer KEY"
// (OpenAI SDKs), "api-key: KEY" (Azure OpenAI SDKs), "x-api-key: KEY"
// (Anthropic SDKs), "x-goog-api-key: KEY" (Google's SDKs) or, on Gemini's
// API paths, "?key=KEY".
func presentedKey(r *http.Request) (string, bool) {
	if v := r.Header.Get("Authorization"); v != "" {
		scheme, key, ok := strings.Cut(v, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(key), true
		}
	}
	if v := r.Header.Get("Api-Key"); v != "" {
		return v, true
	}
	if v := r.Header.Get("X-Api-Key"); v != "" {
		return v, true
	}
	if v := r.Header.Get("X-Goog-Api-Key"); v != "" {
		return v, true // Google's SDKs
	}
	if strings.Contains(r.URL.RawQuery, "key=") && IsGeminiPath(r.URL.Path) {
		// Some clients of Gemini's API send the key in the query;
		// classifyPath moves it into X-Goog-Api-Key.
		if v := r.URL.Query().Get("key"); v != "" {
			return v, true
		}
	}
	if strings.HasSuffix(r.URL.Path, "/realtime") {
		// A browser cannot set headers on a WebSocket: it sends the key as
		// a subprotocol, or (Azure's form) in the query.
		for _, v := range r.Header.Values("Sec-Websocket-Protocol") {
			for _, p := range strings.Split(v, ",") {
				if k, ok := strings.CutPrefix(strings.TrimSpace(p), "openai-insecure-api-key."); ok && k != "" {
					return k, true
				}
			}
		}
		if v := r.URL.Query().Get("api-key"); v != "" {
			return v, true
		}
	}
	return "", false
}

// PresentedKey is the key r presents, in any of the forms the handler
// accepts (see presentedKey); false when it presents none.
func PresentedKey(r *http.Request) (string, bool) { return presentedKey(r) }

// KeysRequired reports whether the routes in force require a key: keys
// are configured, or the key store requires them. False before Update.
func (h *Handler) KeysRequired() bool {
	rt := h.routes.Load()
	if rt == nil {
		return false
	}
	return len(rt.Keys) > 0 || (rt.Resolver != nil && rt.Resolver.Required())
}

// KeyCheck is the outcome of a request's key check, noted for what
// stands in front of the handler (the gateway's throttle of failed
// checks): Failed when a key was presented and refused as unknown,
// Passed when it was found. A missing key is neither. It belongs to its
// request.
type KeyCheck struct{ Failed, Passed bool }

type keyCheckKey struct{}

// WithKeyCheck returns r with a KeyCheck its key check fills in.
func WithKeyCheck(r *http.Request) (*http.Request, *KeyCheck) {
	kc := new(KeyCheck)
	return r.WithContext(context.WithValue(r.Context(), keyCheckKey{}, kc)), kc
}

// NoteKeyCheck notes, in ctx's KeyCheck if it has one, that a presented
// key was found (ok) or refused as unknown.
func NoteKeyCheck(ctx context.Context, ok bool) {
	if kc, _ := ctx.Value(keyCheckKey{}).(*KeyCheck); kc != nil {
		kc.Passed, kc.Failed = ok, !ok
	}
}

// authenticate returns the name of the key the caller presented: one
// lookup of its hash, whatever the number of keys. A lookup by the hash
// of a high-entropy secret tells a timing observer nothing of the
// secrets (it would have to find a preimage of a near match).
func (rt *Routes) authenticate(r *http.Request) (string, bool) {
	k, ok := presentedKey(r)
	if !ok {
		return "", false
	}
	name, found := rt.keyIndex[keysum.Sum(k)]
	NoteKeyCheck(r.Context(), found)
	return name, found
}
