package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path"
	"slices"
	"strconv"
)

// Conversations (openai, azure), kept small: a conversation is an id,
// its creation time, its metadata and its items, made, read, updated
// (metadata) and deleted; items are added (at the create too), listed,
// read and deleted. Items are kept as they were sent, with an id, a
// status and, for a message whose content is a string, that content as
// one text part. A Responses create that names a conversation must name
// one held here (its items are not added to it).

// MaxStoredConversations is how many conversations a deployment keeps.
const MaxStoredConversations = 10000

// maxConversationItems is how many items one call may add, as the real
// API's limit.
const maxConversationItems = 20

// storedConversation is a conversation. The store's lock guards it.
type storedConversation struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Metadata  map[string]string `json:"metadata"`
	items     []conversationItem
}

// conversationItem is an item of a conversation: its id and its JSON.
type conversationItem struct {
	id   string
	json json.RawMessage
}

// conversationBody is the body of a create or an update.
type conversationBody struct {
	Metadata map[string]string `json:"metadata"`
	Items    []json.RawMessage `json:"items"`
}

// itemList is the answer listing items.
type itemList struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	HasMore bool              `json:"has_more"`
}

func newItemList(items []conversationItem, more bool) itemList {
	l := itemList{Object: "list", Data: []json.RawMessage{}, HasMore: more}
	for _, it := range items {
		l.Data = append(l.Data, it.json)
	}
	if len(items) > 0 {
		l.FirstID, l.LastID = &items[0].id, &items[len(items)-1].id
	}
	return l
}

// conversationRef is the id a Responses create's conversation names (a
// string, or an object with an id), "" for none.
func conversationRef(raw json.RawMessage) string {
	var id string
	if json.Unmarshal(raw, &id) == nil {
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &obj)
	return obj.ID
}

// newItems makes the items of raw, each with an id and a status; an
// item that is not a JSON object is an error.
func (d *deployment) newItems(rng *rand.Rand, raw []json.RawMessage) ([]conversationItem, error) {
	if len(raw) > maxConversationItems {
		return nil, fmt.Errorf("items: at most %d items may be added at once", maxConversationItems)
	}
	var out []conversationItem
	for i, r := range raw {
		var m map[string]any
		if err := json.Unmarshal(r, &m); err != nil || m == nil {
			return nil, fmt.Errorf("items[%d]: an item must be an object", i)
		}
		if _, ok := m["type"]; !ok {
			m["type"] = "message"
		}
		if text, ok := m["content"].(string); ok {
			part := "input_text"
			if m["role"] == "assistant" {
				part = "output_text"
			}
			m["content"] = []any{map[string]any{"type": part, "text": text}}
		}
		id, _ := m["id"].(string)
		if id == "" {
			id = d.objectID(rng, "msg_", 40, false)
			m["id"] = id
		}
		if _, ok := m["status"]; !ok {
			m["status"] = "completed"
		}
		b, _ := json.Marshal(m)
		out = append(out, conversationItem{id: id, json: b})
	}
	return out, nil
}

func errConversationNotFound(id string) apiError {
	return openAIErr(http.StatusNotFound, fmt.Sprintf("Conversation with id '%s' not found.", id),
		strp("invalid_request_error"), nil, nil)
}

// createConversation serves POST conversations.
func (d *deployment) createConversation(w http.ResponseWriter, _ *http.Request, c *call, _ Fault, _ string) outcome {
	var b conversationBody
	if len(c.body) > 0 {
		if err := json.Unmarshal(c.body, &b); err != nil {
			d.writeError(w, errInvalidRequest(d.cfg.Flavour, "could not parse the JSON body of your request: "+err.Error()))
			return outcomeRejected
		}
	}
	if b.Metadata == nil {
		b.Metadata = map[string]string{}
	}
	items, err := d.newItems(c.rng, b.Items)
	if err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, err.Error()))
		return outcomeRejected
	}
	conv := &storedConversation{ID: d.objectID(c.rng, "conv_", 40, false), Object: "conversation", CreatedAt: c.now.Unix(),
		Metadata: b.Metadata, items: items}
	d.objects.conversations.put(conv.ID, conv, 0)
	_ = writeJSON(w, http.StatusOK, *conv)
	return outcomeOK
}

// getConversation serves GET conversations/{id}.
func (d *deployment) getConversation(w http.ResponseWriter, _ *http.Request, _ *call, _ Fault, id string) outcome {
	var view storedConversation
	if !d.objects.conversations.update(id, func(s *storedConversation) { view = *s }) {
		d.writeError(w, errConversationNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, view)
	return outcomeOK
}

// updateConversation serves POST conversations/{id}: its metadata is
// replaced.
func (d *deployment) updateConversation(w http.ResponseWriter, _ *http.Request, c *call, _ Fault, id string) outcome {
	var b conversationBody
	if err := json.Unmarshal(c.body, &b); err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, "could not parse the JSON body of your request: "+err.Error()))
		return outcomeRejected
	}
	var view storedConversation
	if !d.objects.conversations.update(id, func(s *storedConversation) { s.Metadata = b.Metadata; view = *s }) {
		d.writeError(w, errConversationNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, view)
	return outcomeOK
}

// deleteConversation serves DELETE conversations/{id}.
func (d *deployment) deleteConversation(w http.ResponseWriter, _ *http.Request, _ *call, _ Fault, id string) outcome {
	if !d.objects.conversations.remove(id) {
		d.writeError(w, errConversationNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, deleted{ID: id, Object: "conversation.deleted", Deleted: true})
	return outcomeOK
}

// addConversationItems serves POST conversations/{id}/items: the items
// are added at the end, and listed in the answer.
func (d *deployment) addConversationItems(w http.ResponseWriter, _ *http.Request, c *call, _ Fault, id string) outcome {
	var b conversationBody
	if err := json.Unmarshal(c.body, &b); err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, "could not parse the JSON body of your request: "+err.Error()))
		return outcomeRejected
	}
	items, err := d.newItems(c.rng, b.Items)
	if err == nil && len(items) == 0 {
		err = fmt.Errorf("items: add at least one item")
	}
	if err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, err.Error()))
		return outcomeRejected
	}
	if !d.objects.conversations.update(id, func(s *storedConversation) { s.items = append(slices.Clip(s.items), items...) }) {
		d.writeError(w, errConversationNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, newItemList(items, false))
	return outcomeOK
}

// listConversationItems serves GET conversations/{id}/items: order (asc,
// or desc by default), after (an item's id) and limit (1 to 100, 20 by
// default) as the real API reads them.
func (d *deployment) listConversationItems(w http.ResponseWriter, r *http.Request, _ *call, _ Fault, id string) outcome {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			d.writeError(w, errInvalidRequest(d.cfg.Flavour, "limit: must be an integer from 1 to 100"))
			return outcomeRejected
		}
		limit = n
	}
	var items []conversationItem
	if !d.objects.conversations.update(id, func(s *storedConversation) { items = slices.Clone(s.items) }) {
		d.writeError(w, errConversationNotFound(id))
		return outcomeRejected
	}
	if q.Get("order") != "asc" {
		slices.Reverse(items)
	}
	if after := q.Get("after"); after != "" {
		if i := slices.IndexFunc(items, func(it conversationItem) bool { return it.id == after }); i >= 0 {
			items = items[i+1:]
		}
	}
	more := len(items) > limit
	_ = writeJSON(w, http.StatusOK, newItemList(items[:min(limit, len(items))], more))
	return outcomeOK
}

// getConversationItem serves GET conversations/{id}/items/{item}.
func (d *deployment) getConversationItem(w http.ResponseWriter, r *http.Request, _ *call, _ Fault, id string) outcome {
	item := path.Base(r.URL.Path)
	var found json.RawMessage
	ok := d.objects.conversations.update(id, func(s *storedConversation) {
		if i := slices.IndexFunc(s.items, func(it conversationItem) bool { return it.id == item }); i >= 0 {
			found = s.items[i].json
		}
	})
	if !ok || found == nil {
		d.writeError(w, errConversationItemNotFound(id, item, ok))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, found)
	return outcomeOK
}

// deleteConversationItem serves DELETE conversations/{id}/items/{item}:
// the answer is the conversation.
func (d *deployment) deleteConversationItem(w http.ResponseWriter, r *http.Request, _ *call, _ Fault, id string) outcome {
	item := path.Base(r.URL.Path)
	var view storedConversation
	removed := false
	ok := d.objects.conversations.update(id, func(s *storedConversation) {
		if i := slices.IndexFunc(s.items, func(it conversationItem) bool { return it.id == item }); i >= 0 {
			s.items = slices.Delete(slices.Clone(s.items), i, i+1)
			removed = true
		}
		view = *s
	})
	if !ok || !removed {
		d.writeError(w, errConversationItemNotFound(id, item, ok))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, view)
	return outcomeOK
}

// errConversationItemNotFound answers an item the conversation id does
// not have (or, convFound false, a conversation not held here).
func errConversationItemNotFound(id, item string, convFound bool) apiError {
	if !convFound {
		return errConversationNotFound(id)
	}
	return openAIErr(http.StatusNotFound, fmt.Sprintf("Item with id '%s' not found.", item), strp("invalid_request_error"), nil, nil)
}
