package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Stored chat completions (openai, azure): a chat made with "store": true
// is kept, with its request's messages and metadata, and served by GET,
// POST (metadata), DELETE chat/completions/{id}, GET …/{id}/messages and
// the list GET chat/completions.

// MaxStoredChats is how many stored chat completions a deployment keeps.
const MaxStoredChats = 10000

// storedChat is a chat completion made with "store": true. The store's
// lock guards it (see store.update).
type storedChat struct {
	completion map[string]json.RawMessage // the answer, as answered
	messages   []json.RawMessage          // the request's messages
	metadata   map[string]string
	model      string
}

// view is the chat completion with its metadata as it stands.
func (s *storedChat) view() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(s.completion)+1)
	for k, v := range s.completion {
		out[k] = v
	}
	md := s.metadata
	if md == nil {
		md = map[string]string{}
	}
	out["metadata"], _ = json.Marshal(md)
	return out
}

// storeChat keeps the chat completion a (answered to body) when body
// asks for "store": true.
func (d *deployment) storeChat(body []byte, a *answer) {
	var b struct {
		Store    bool              `json:"store"`
		Messages []json.RawMessage `json:"messages"`
		Metadata map[string]string `json:"metadata"`
	}
	if json.Unmarshal(body, &b) != nil || !b.Store {
		return
	}
	raw, err := json.Marshal(a.body())
	if err != nil {
		return
	}
	var completion map[string]json.RawMessage
	if json.Unmarshal(raw, &completion) != nil {
		return
	}
	d.objects.chats.put(a.id, &storedChat{completion: completion, messages: b.Messages, metadata: b.Metadata, model: a.model}, 0)
}

// errChatNotFound answers a call on a chat completion this deployment
// does not hold.
func errChatNotFound(id string) apiError {
	return openAIErr(http.StatusNotFound, fmt.Sprintf("Chat completion with id '%s' not found.", id),
		strp("invalid_request_error"), nil, nil)
}

// getChat serves GET chat/completions/{id}.
func (d *deployment) getChat(w http.ResponseWriter, _ *http.Request, _ *call, _ Fault, id string) outcome {
	var view map[string]json.RawMessage
	if !d.objects.chats.update(id, func(s *storedChat) { view = s.view() }) {
		d.writeError(w, errChatNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, view)
	return outcomeOK
}

// updateChat serves POST chat/completions/{id}: its body's metadata
// replaces the stored one.
func (d *deployment) updateChat(w http.ResponseWriter, _ *http.Request, c *call, _ Fault, id string) outcome {
	var b struct {
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(c.body, &b); err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, "could not parse the JSON body of your request: "+err.Error()))
		return outcomeRejected
	}
	var view map[string]json.RawMessage
	if !d.objects.chats.update(id, func(s *storedChat) { s.metadata = b.Metadata; view = s.view() }) {
		d.writeError(w, errChatNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, view)
	return outcomeOK
}

// deleteChat serves DELETE chat/completions/{id}.
func (d *deployment) deleteChat(w http.ResponseWriter, _ *http.Request, _ *call, _ Fault, id string) outcome {
	if !d.objects.chats.remove(id) {
		d.writeError(w, errChatNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, deleted{ID: id, Object: "chat.completion.deleted", Deleted: true})
	return outcomeOK
}

// chatMessages serves GET chat/completions/{id}/messages: the request's
// messages, oldest first unless order=desc, each with the id
// "{id}-{index}".
func (d *deployment) chatMessages(w http.ResponseWriter, r *http.Request, _ *call, _ Fault, id string) outcome {
	limit, asc, after, err := listParams(r, "asc")
	if err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
		return outcomeRejected
	}
	var msgs []json.RawMessage
	if !d.objects.chats.update(id, func(s *storedChat) { msgs = s.messages }) {
		d.writeError(w, errChatNotFound(id))
		return outcomeRejected
	}
	var data []any
	var ids []string
	started, more := after == "", false
	for n := range msgs {
		i := n
		if !asc {
			i = len(msgs) - 1 - n
		}
		mid := fmt.Sprintf("%s-%d", id, i)
		if !started {
			started = mid == after
			continue
		}
		if len(data) == limit {
			more = true
			break
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(msgs[i], &m) != nil {
			m = map[string]json.RawMessage{}
		}
		m["id"], _ = json.Marshal(mid)
		data, ids = append(data, m), append(ids, mid)
	}
	_ = writeJSON(w, http.StatusOK, newListPage(data, ids, more))
	return outcomeOK
}

// listChats serves GET chat/completions: a page of the stored chat
// completions, oldest first unless order=desc, then filtered by the
// query's model and metadata[key]=value (a page may so hold fewer than
// limit while has_more is true: enough for a simulator).
func (d *deployment) listChats(w http.ResponseWriter, r *http.Request, _ *call, _ Fault, _ string) outcome {
	limit, asc, after, err := listParams(r, "asc")
	if err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
		return outcomeRejected
	}
	q := r.URL.Query()
	type entry struct {
		view  map[string]json.RawMessage
		keep  bool
		ident string
	}
	views, more := page(d.objects.chats, after, limit, asc, func(s *storedChat) entry {
		keep := q.Get("model") == "" || q.Get("model") == s.model
		for k, vs := range q {
			if key, ok := strings.CutPrefix(k, "metadata["); ok && strings.HasSuffix(key, "]") {
				keep = keep && s.metadata[strings.TrimSuffix(key, "]")] == vs[0]
			}
		}
		var ident string
		_ = json.Unmarshal(s.completion["id"], &ident)
		return entry{s.view(), keep, ident}
	})
	var data []any
	var ids []string
	for _, v := range views {
		if v.keep {
			data, ids = append(data, v.view), append(ids, v.ident)
		}
	}
	_ = writeJSON(w, http.StatusOK, newListPage(data, ids, more))
	return outcomeOK
}
