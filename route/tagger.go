package route

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
)

// Stored objects belong to the tenant that made them: the key, or its
// team when the team shares its objects. The gateway keeps no record of
// who made what; it signs the owner into the id it gives the client (see
// the comment on TagID for the form), so every replica with the same
// secret can check, from the id alone, that the caller may reach the
// object and that its backend is the one that made it.

// macChars is the length of a signed tag's MAC in base32 characters: 80
// bits, ten bytes of HMAC-SHA256.
const macChars = 16

// isMACText reports whether s is made only of ownerEncoding's characters.
func isMACText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// Signer holds the secrets that sign owner tags: the first signs new
// ids, every one verifies (the ones before it are earlier secrets, kept
// while ids made with them should still be reached). It is immutable and
// safe for concurrent use.
type Signer struct{ keys [][]byte }

// NewSigner returns a Signer of secrets, the first signing. None means
// an empty secret: tags anyone can compute, as good as unsigned (what a
// gateway without keys, or the library alone, uses).
func NewSigner(secrets ...[]byte) *Signer {
	s := &Signer{}
	for _, k := range secrets {
		if len(k) > 0 {
			s.keys = append(s.keys, k)
		}
	}
	if len(s.keys) == 0 {
		s.keys = [][]byte{nil}
	}
	return s
}

// mac is the tag's MAC under key: what it binds is the backend that
// holds the object, the tenant it belongs to and the provider's id.
func mac(key []byte, backend, tenant, orig string) string {
	h := hmac.New(sha256.New, key)
	for _, s := range []string{"switchover object id v2", backend, tenant, orig} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return ownerEncoding.EncodeToString(h.Sum(nil)[:macChars*5/8])
}

func (s *Signer) sign(backend, tenant, orig string) string {
	return mac(s.keys[0], backend, tenant, orig)
}

// verify reports whether m is the MAC of (backend, tenant, orig) under
// one of the secrets.
func (s *Signer) verify(m, backend, tenant, orig string) bool {
	ok := false
	for _, k := range s.keys {
		if hmac.Equal([]byte(m), []byte(mac(k, backend, tenant, orig))) {
			ok = true
		}
	}
	return ok
}

// Tagger writes the owner of the objects one caller makes into their ids,
// and reads it back from the ids the caller sends, refusing those the
// caller may not reach. A nil *Tagger is Open with an empty secret and no
// tenant: what the library does alone. A Tagger is not changed once a
// request carries it, and is then safe for concurrent use.
type Tagger struct {
	// Signer signs and verifies the tags. Nil means NewSigner().
	Signer *Signer
	// Tenant is who the objects the caller makes belong to: "k:" and a
	// key's ID, "t:" and a team's name, "" for no one (a gateway
	// without keys).
	Tenant string
	// Readers are further tenants whose objects the caller reaches (its
	// own key's while its team shares objects). Default none.
	Readers []string
	// Open accepts every tagged id, signed for any tenant or unsigned,
	// and the provider's own ids: a gateway without keys, one tenant.
	Open bool
	// List says the call lists a collection (GET /v1/files): the
	// entries of a list answer belong to whoever made them, which the
	// provider does not say, so unless Open an answer that is a list
	// keeps only the entries whose owner mark is the caller's (see Mark
	// and filterList).
	List bool
	// Index keeps the owners of objects without metadata (files,
	// uploads, containers, message batches), which a list keeps by as
	// it keeps marked ones. Nil means none: lists of such objects show a
	// caller none of them.
	Index OwnerIndex
	// Made says the call makes an object without metadata: unless Open,
	// a successful answer's id (and an upload's file's) is recorded in
	// Index as the tenant's.
	Made bool
	// Deletes is the provider's id of the object the call deletes: a
	// successful answer drops it from Index. "" for none.
	Deletes string
}

func (t *Tagger) signer() *Signer {
	if t == nil || t.Signer == nil {
		return defaultSigner
	}
	return t.Signer
}

var defaultSigner = NewSigner()

func (t *Tagger) open() bool { return t == nil || t.Open }
func (t *Tagger) tenant() string {
	if t == nil {
		return ""
	}
	return t.Tenant
}

// Tag returns id with backend and the Tagger's tenant signed into it. An
// id that is already a tag this Tagger reaches for backend is returned
// as it is.
func (t *Tagger) Tag(id, backend string) string {
	if id == "" || backend == "" {
		return id
	}
	if tg, ok := parseTag(id); ok && tg.backend == backend && t.reaches(tg) {
		return id
	}
	prefix, rest := splitID(id)
	return prefix + signedMark + ownerEncoding.EncodeToString([]byte(backend)) + "0" + t.signer().sign(backend, t.tenant(), id) + rest
}

// reaches reports whether the caller may reach the object of tag tg.
func (t *Tagger) reaches(tg idTag) bool {
	if t.open() {
		return true
	}
	if tg.mac == "" {
		return false // made before ids were signed: only without keys
	}
	s := t.signer()
	if s.verify(tg.mac, tg.backend, t.Tenant, tg.orig) {
		return true
	}
	for _, r := range t.Readers {
		if s.verify(tg.mac, tg.backend, r, tg.orig) {
			return true
		}
	}
	return false
}

// UnknownIDError is an id the caller may not reach: not one this gateway
// gave it (another tenant's, forged, altered, unsigned while keys are
// required, or a provider's id the gateway never tagged), or one whose
// backend does not serve the call. Every such id gets the same answer,
// 404 as for an object that does not exist, so that the answer says
// nothing about whether it does.
type UnknownIDError struct{ ID string }

func (e *UnknownIDError) Error() string {
	id := e.ID
	if len(id) > 100 {
		id = id[:100] + "…"
	}
	return fmt.Sprintf("no object with the id %q was found", id)
}

// Untag returns the backend and the provider's id of a tagged id the
// caller reaches. tagged is false for an id that is not a tag (returned
// as it is); an id the caller may not reach is an *UnknownIDError.
func (t *Tagger) Untag(id string) (backend, orig string, tagged bool, err error) {
	tg, ok := parseTag(id)
	if !ok {
		return "", id, false, nil
	}
	if !t.reaches(tg) {
		return "", id, true, &UnknownIDError{ID: id}
	}
	return tg.backend, tg.orig, true, nil
}

// UntagRef is Untag for a value where a request names an object by its
// id alone (a path segment, a list cursor): unless Open, a provider's id
// of a stored object, which the gateway never gives a caller, is an
// *UnknownIDError too.
func (t *Tagger) UntagRef(id string) (backend, orig string, tagged bool, err error) {
	backend, orig, tagged, err = t.Untag(id)
	if err == nil && !tagged && !t.open() && isStateful(id) {
		err = &UnknownIDError{ID: id}
	}
	return backend, orig, tagged, err
}

// TagIDs returns body with backend and the tenant tagged into the ids of
// stateful objects it names (see ownedKeys and statefulPrefixes), at any
// depth. A body with none is returned as it is.
func (t *Tagger) TagIDs(body []byte, backend string) []byte {
	return rewriteStrings(body, func(key, v string) (string, bool) {
		if !ownedKeys[key] || !tagsInAnswer(v) {
			return "", false
		}
		if tagged := t.Tag(v, backend); tagged != v {
			return tagged, true
		}
		return "", false
	})
}

// UntagIDs returns body with every tagged id at an id member replaced by
// the provider's id, and the backend they name. Ids of two backends are
// an *OwnerConflictError; an id the caller may not reach, and, unless
// Open, a provider's id of a stored object (which the gateway never
// gives a caller), an *UnknownIDError.
func (t *Tagger) UntagIDs(body []byte) ([]byte, string, error) {
	out, owner, _, err := t.UntagBody(body)
	return out, owner, err
}

// UntagBody is UntagIDs that also returns the first tagged id, as the
// caller sent it.
func (t *Tagger) UntagBody(body []byte) (out []byte, owner, first string, err error) {
	var failed error
	out = rewriteStrings(body, func(key, v string) (string, bool) {
		if !ownedKeys[key] || failed != nil {
			return "", false
		}
		b, orig, tagged, err := t.Untag(v)
		switch {
		case err != nil:
			failed = err
			return "", false
		case !tagged:
			if !t.open() && isStateful(v) {
				failed = &UnknownIDError{ID: v}
			}
			return "", false
		case owner == "":
			owner, first = b, v
		case owner != b:
			failed = &OwnerConflictError{First: owner, Second: b}
		}
		return orig, true
	})
	if failed != nil {
		return body, "", "", failed
	}
	return out, owner, first, nil
}

// answer is what the client gets of a JSON answer to a call on stored
// objects: unless Open, a list filtered (filterList) or the owner mark
// taken out of an object's metadata; then ids tagged. A successful
// answer (status 2xx) to a call that makes or deletes an object without
// metadata is noted in the Tagger's Index.
func (t *Tagger) answer(ctx context.Context, body []byte, backend string, status int) []byte {
	if t != nil && !t.Open {
		if t.Index != nil && status/100 == 2 {
			// Noted whether or not the client is still there: the
			// object was made, or deleted.
			ictx := context.WithoutCancel(ctx)
			if t.Made {
				t.record(ictx, body, backend)
			}
			if t.Deletes != "" {
				_ = t.Index.Forget(ictx, backend, t.Deletes) // a stale entry names an object that is gone
			}
		}
		if t.List {
			body = t.filterList(ctx, body, backend)
		} else if bytes.Contains(body, []byte(markKey)) {
			body = unmarked(body)
		}
	}
	return t.TagIDs(body, backend)
}

// The provider's lists name every tenant's objects, and an entry's id
// says nothing of its owner. Objects with metadata (batches, vector
// stores, fine-tuning jobs) carry one: the gateway writes, as it makes
// them, a mark of the tenant into their metadata (Mark), which a list
// entry is kept by and which no answer shows. Entries without a mark
// the caller owns are left out, but for those whose owner the Tagger's
// Index records as the caller (objects without metadata).

// markKey is the metadata member of the owner mark.
const markKey = "switchover_owner"

// mark is the owner mark of tenant under key: a MAC of the tenant.
func markOf(key []byte, tenant string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("switchover list owner v1\x00" + tenant))
	return ownerEncoding.EncodeToString(h.Sum(nil)[:macChars*5/8])
}

// ownsMark reports whether m is the mark of the caller's tenant or of one
// of its readers.
func (t *Tagger) ownsMark(m string) bool {
	if m == "" {
		return false
	}
	ok := false
	for _, k := range t.signer().keys {
		for _, tenant := range append([]string{t.Tenant}, t.Readers...) {
			if hmac.Equal([]byte(m), []byte(markOf(k, tenant))) {
				ok = true
			}
		}
	}
	return ok
}

// Mark returns a JSON object body with the owner mark of the tenant set
// in its metadata (made if absent), so that lists show the object to its
// owner. Open, or a body that is not a JSON object, is returned as it is.
func (t *Tagger) Mark(body []byte) []byte {
	if t.open() {
		return body
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(body, &o) != nil || o == nil {
		return body
	}
	md := map[string]json.RawMessage{}
	if raw, ok := o["metadata"]; ok && json.Unmarshal(raw, &md) != nil {
		return body // not an object: the provider refuses it
	}
	if md == nil {
		md = map[string]json.RawMessage{}
	}
	m, _ := json.Marshal(markOf(t.signer().keys[0], t.Tenant))
	md[markKey] = m
	var err error
	if o["metadata"], err = json.Marshal(md); err != nil {
		return body
	}
	out, err := json.Marshal(o)
	if err != nil {
		return body
	}
	return out
}

// entryMark takes the owner mark out of a JSON object's metadata: the
// object without it, and the mark ("" for none).
func entryMark(entry json.RawMessage) (json.RawMessage, string) {
	var o map[string]json.RawMessage
	if json.Unmarshal(entry, &o) != nil {
		return entry, ""
	}
	var md map[string]json.RawMessage
	if json.Unmarshal(o["metadata"], &md) != nil || md == nil {
		return entry, ""
	}
	raw, ok := md[markKey]
	if !ok {
		return entry, ""
	}
	var m string
	json.Unmarshal(raw, &m)
	delete(md, markKey)
	var err error
	if o["metadata"], err = json.Marshal(md); err != nil {
		return entry, ""
	}
	out, err := json.Marshal(o)
	if err != nil {
		return entry, ""
	}
	return out, m
}

// unmarked is a JSON object answer without its owner mark.
func unmarked(body []byte) []byte {
	out, _ := entryMark(body)
	return out
}

// filterList returns a list answer ({"object": "list", "data": […]}, or
// Anthropic's {"data": […], "has_more": …}) with only the entries whose
// owner mark (in its metadata, or else in the Index) is the caller's,
// unmarked; first_id and last_id are those of
// the entries kept (null for none), and has_more is the provider's while
// some are kept, false when none is (the caller has no cursor to go on
// from). Any other body is returned as it is.
func (t *Tagger) filterList(ctx context.Context, body []byte, backend string) []byte {
	var l map[string]json.RawMessage
	if json.Unmarshal(body, &l) != nil {
		return body
	}
	var object string
	json.Unmarshal(l["object"], &object)
	_, hasMore := l["has_more"]
	var data []json.RawMessage
	if json.Unmarshal(l["data"], &data) != nil || object != "list" && !hasMore { // Anthropic's lists have no "object"
		return body
	}
	kept := make([]json.RawMessage, 0, len(data))
	var ids []string
	indexed := t.indexMarks(ctx, backend, data)
	for _, e := range data {
		out, m := entryMark(e)
		if m == "" && indexed != nil {
			var v struct{ ID string }
			json.Unmarshal(out, &v)
			m = indexed[v.ID]
		}
		if t.ownsMark(m) {
			kept = append(kept, out)
			var v struct{ ID string }
			json.Unmarshal(out, &v)
			ids = append(ids, v.ID)
		}
	}
	l["data"], _ = json.Marshal(kept)
	for i, k := range []string{"first_id", "last_id"} {
		if _, ok := l[k]; !ok {
			continue
		}
		l[k] = json.RawMessage("null")
		if len(ids) > 0 {
			l[k], _ = json.Marshal(ids[i*(len(ids)-1)])
		}
	}
	if hasMore && len(kept) == 0 {
		l["has_more"] = json.RawMessage("false")
	}
	out, err := json.Marshal(l)
	if err != nil {
		return []byte(`{"object":"list","data":[],"has_more":false}`)
	}
	return out
}
