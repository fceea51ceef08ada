package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Conversations (openai, azure), kept small: a conversation is an id,
// its creation time and its metadata, made, read, updated (metadata) and
// deleted; its items are not kept.

// MaxStoredConversations is how many conversations a deployment keeps.
const MaxStoredConversations = 10000

// storedConversation is a conversation. The store's lock guards it.
type storedConversation struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Metadata  map[string]string `json:"metadata"`
}

// conversationBody is the body of a create or an update.
type conversationBody struct {
	Metadata map[string]string `json:"metadata"`
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
	conv := &storedConversation{ID: d.objectID(c.rng, "conv_", 40, false), Object: "conversation", CreatedAt: c.now.Unix(), Metadata: b.Metadata}
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
