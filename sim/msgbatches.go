package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// This file serves Anthropic's Message Batches API: POST
// v1/messages/batches, GET v1/messages/batches, GET
// v1/messages/batches/{id}, GET v1/messages/batches/{id}/results (JSONL)
// and POST v1/messages/batches/{id}/cancel.
//
// Every request of a batch is answered when the batch is created; on the
// sim's clock the n-th request finishes n batch steps after creation (see
// batches.go), and the batch ends when the last one has. A cancel makes
// the batch canceling for one step, then ended with the requests still
// processing counted as canceled.

// storedMessageBatch is a message batch. Changed only under its store's
// lock.
type storedMessageBatch struct {
	id          string
	created     time.Time
	step        time.Duration
	results     []msgBatchResult
	cancelledAt time.Time
	resultsURL  string
}

type msgBatchResult struct {
	customID string
	ok       bool
	body     any // the message, or the error
}

// messageBatch is the MessageBatch object.
type messageBatch struct {
	ID                string        `json:"id"`
	Type              string        `json:"type"`
	ProcessingStatus  string        `json:"processing_status"`
	RequestCounts     msgBatchCount `json:"request_counts"`
	EndedAt           *string       `json:"ended_at"`
	CreatedAt         string        `json:"created_at"`
	ExpiresAt         string        `json:"expires_at"`
	ArchivedAt        *string       `json:"archived_at"`
	CancelInitiatedAt *string       `json:"cancel_initiated_at"`
	ResultsURL        *string       `json:"results_url"`
}

type msgBatchCount struct {
	Processing int `json:"processing"`
	Succeeded  int `json:"succeeded"`
	Errored    int `json:"errored"`
	Canceled   int `json:"canceled"`
	Expired    int `json:"expired"`
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func rfc3339p(t time.Time) *string {
	s := rfc3339(t)
	return &s
}

// finishAt is when the i-th request finishes, unless cancelled first.
func (b *storedMessageBatch) finishAt(i int) time.Time {
	return b.created.Add(time.Duration(i+1) * b.step)
}

// state reports each request's fate at now: done (answered), canceled, or
// still processing; and whether the batch has ended, and when.
func (b *storedMessageBatch) view(now time.Time) (messageBatch, []string) {
	o := messageBatch{ID: b.id, Type: "message_batch", ProcessingStatus: "in_progress",
		CreatedAt: rfc3339(b.created), ExpiresAt: rfc3339(b.created.Add(24 * time.Hour))}
	cancelled := !b.cancelledAt.IsZero()
	cut := now
	if cancelled && b.cancelledAt.Before(cut) {
		cut = b.cancelledAt
	}
	fates := make([]string, len(b.results))
	for i, r := range b.results {
		switch {
		case !cut.Before(b.finishAt(i)) && r.ok:
			fates[i] = "succeeded"
			o.RequestCounts.Succeeded++
		case !cut.Before(b.finishAt(i)):
			fates[i] = "errored"
			o.RequestCounts.Errored++
		default:
			fates[i] = "processing"
			o.RequestCounts.Processing++
		}
	}
	var ended time.Time
	switch {
	case cancelled:
		o.CancelInitiatedAt = rfc3339p(b.cancelledAt)
		o.ProcessingStatus = "canceling"
		if end := b.cancelledAt.Add(b.step); !now.Before(end) || o.RequestCounts.Processing == 0 {
			ended = end
			if o.RequestCounts.Processing == 0 {
				ended = b.cancelledAt
			}
			for i := range fates {
				if fates[i] == "processing" {
					fates[i] = "canceled"
				}
			}
			o.RequestCounts.Canceled, o.RequestCounts.Processing = o.RequestCounts.Processing, 0
		}
	case o.RequestCounts.Processing == 0:
		ended = b.finishAt(len(b.results) - 1)
	}
	if !ended.IsZero() {
		o.ProcessingStatus = "ended"
		o.EndedAt = rfc3339p(ended)
		o.ResultsURL = &b.resultsURL
	}
	return o, fates
}

// messageBatchBody is a message batch create request.
type messageBatchBody struct {
	Requests []struct {
		CustomID string          `json:"custom_id"`
		Params   json.RawMessage `json:"params"`
	} `json:"requests"`
}

// errMessageBatchNotFound answers an id this deployment holds no message
// batch for.
func errMessageBatchNotFound(id string) apiError {
	return anthropicErr(http.StatusNotFound, "not_found_error", fmt.Sprintf("Message batch %s not found.", id))
}

func (d *deployment) createMessageBatch(w http.ResponseWriter, r *http.Request, c *call, f Fault, _ string) outcome {
	var b messageBatchBody
	if err := json.Unmarshal(c.body, &b); err != nil {
		d.writeError(w, errInvalidRequest(Anthropic, fmt.Sprintf("could not parse the JSON body of your request: %v", err)))
		return outcomeRejected
	}
	if len(b.Requests) == 0 {
		d.writeError(w, errInvalidRequest(Anthropic, "requests: List should have at least 1 item after validation, not 0"))
		return outcomeRejected
	}
	seen := map[string]bool{}
	for i, rq := range b.Requests {
		if rq.CustomID == "" || seen[rq.CustomID] {
			d.writeError(w, errInvalidRequest(Anthropic, fmt.Sprintf("requests.%d.custom_id: must be present and unique within the batch", i)))
			return outcomeRejected
		}
		seen[rq.CustomID] = true
	}
	if !d.admit(w, c, f, 0) {
		return outcomeRefused
	}
	mb := &storedMessageBatch{id: d.objectID(c.rng, "msgbatch_01", 16, true), created: c.now, step: max(d.cfg.Latency.Median, BatchStepMin)}
	base, _, _ := strings.Cut(r.RequestURI, "/v1/messages/batches")
	mb.resultsURL = "http://" + r.Host + base + "/v1/messages/batches/" + mb.id + "/results"
	for _, rq := range b.Requests {
		res := msgBatchResult{customID: rq.CustomID}
		req, err := parseRequest(opMessages, rq.Params)
		switch {
		case err != nil:
			res.body = anthropicErr(http.StatusBadRequest, "invalid_request_error", strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")).body
		case req.model != d.cfg.Deployment:
			res.body = errDeploymentNotFound(Anthropic, req.model).body
		default:
			req.stream = false
			res.ok, res.body = true, d.answer(req, *c, false).body()
		}
		mb.results = append(mb.results, res)
	}
	d.objects.msgBatches.put(mb.id, mb, 0)
	view, _ := mb.view(c.now)
	if err := writeJSON(w, http.StatusOK, view); err != nil {
		return outcomeAbandoned
	}
	return outcomeOK
}

func (d *deployment) getMessageBatch(w http.ResponseWriter, _ *http.Request, c *call, _ Fault, id string) outcome {
	var view messageBatch
	if !d.objects.msgBatches.update(id, func(b *storedMessageBatch) { view, _ = b.view(c.now) }) {
		d.writeError(w, errMessageBatchNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, view)
	return outcomeOK
}

func (d *deployment) cancelMessageBatch(w http.ResponseWriter, _ *http.Request, c *call, _ Fault, id string) outcome {
	var view messageBatch
	if !d.objects.msgBatches.update(id, func(b *storedMessageBatch) {
		view, _ = b.view(c.now)
		if view.ProcessingStatus == "in_progress" {
			b.cancelledAt = c.now
			view, _ = b.view(c.now)
		}
	}) {
		d.writeError(w, errMessageBatchNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, view)
	return outcomeOK
}

func (d *deployment) listMessageBatches(w http.ResponseWriter, r *http.Request, c *call, _ Fault, _ string) outcome {
	limit, _, after, err := listParams(r, "desc")
	if err != nil {
		d.writeError(w, errInvalidRequest(Anthropic, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
		return outcomeRejected
	}
	if a := r.URL.Query().Get("after_id"); a != "" {
		after = a
	}
	views, more := page(d.objects.msgBatches, after, limit, false, func(b *storedMessageBatch) messageBatch {
		v, _ := b.view(c.now)
		return v
	})
	out := struct {
		Data    []messageBatch `json:"data"`
		HasMore bool           `json:"has_more"`
		FirstID *string        `json:"first_id"`
		LastID  *string        `json:"last_id"`
	}{Data: views, HasMore: more}
	if out.Data == nil {
		out.Data = []messageBatch{}
	}
	if len(views) > 0 {
		out.FirstID, out.LastID = &views[0].ID, &views[len(views)-1].ID
	}
	_ = writeJSON(w, http.StatusOK, out)
	return outcomeOK
}

// messageBatchResults answers an ended batch's results as JSONL, one line
// per request in the order they were sent; a batch that has not ended
// has no results yet (404).
func (d *deployment) messageBatchResults(w http.ResponseWriter, _ *http.Request, c *call, _ Fault, id string) outcome {
	var buf bytes.Buffer
	found, ended := false, false
	found = d.objects.msgBatches.update(id, func(b *storedMessageBatch) {
		view, fates := b.view(c.now)
		ended = view.ProcessingStatus == "ended"
		if !ended {
			return
		}
		for i, res := range b.results {
			line := map[string]any{"custom_id": res.customID}
			switch fates[i] {
			case "succeeded":
				line["result"] = map[string]any{"type": "succeeded", "message": res.body}
			case "errored":
				line["result"] = map[string]any{"type": "errored", "error": res.body}
			default:
				line["result"] = map[string]any{"type": "canceled"}
			}
			buf.Write(mustJSON(line))
			buf.WriteByte('\n')
		}
	})
	switch {
	case !found:
		d.writeError(w, errMessageBatchNotFound(id))
		return outcomeRejected
	case !ended:
		d.writeError(w, anthropicErr(http.StatusNotFound, "not_found_error", fmt.Sprintf("Message batch %s has not ended; its results are not available yet.", id)))
		return outcomeRejected
	}
	w.Header().Set("Content-Type", "application/binary")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return outcomeAbandoned
	}
	return outcomeOK
}

// deleteMessageBatch forgets an ended batch; one still processing cannot
// be deleted (400), as with the real API.
func (d *deployment) deleteMessageBatch(w http.ResponseWriter, _ *http.Request, c *call, _ Fault, id string) outcome {
	var view messageBatch
	if !d.objects.msgBatches.update(id, func(b *storedMessageBatch) { view, _ = b.view(c.now) }) {
		d.writeError(w, errMessageBatchNotFound(id))
		return outcomeRejected
	}
	if view.ProcessingStatus != "ended" {
		d.writeError(w, errInvalidRequest(Anthropic, fmt.Sprintf("Message batch %s cannot be deleted while it is processing; cancel it first.", id)))
		return outcomeRejected
	}
	d.objects.msgBatches.remove(id)
	_ = writeJSON(w, http.StatusOK, struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}{id, "message_batch_deleted"})
	return outcomeOK
}
