package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// This file serves the Batch API: POST batches, GET batches, GET
// batches/{id} and POST batches/{id}/cancel.
//
// A batch runs every line of its input file through the sim's responder
// when it is created, but shows the results on the sim's clock: validating
// for one batch step, then in progress for one step per line (its
// request_counts growing as lines finish), then completed with an output
// file (and an error file for failed lines) that appears among the
// deployment's files. A batch step is the deployment's median latency, at
// least a second. Lines are not charged to the live quota (batches have
// their own in the real services); creating a batch counts one request.

// BatchStepMin is the shortest batch step; see batches.go.
const BatchStepMin = time.Second

// batchEndpoints are the endpoints a batch may target, by their path
// without /v1 (azure's dated api-versions name them without it).
var batchEndpoints = map[string]operation{
	"/chat/completions": opChat,
	"/completions":      opCompletions,
	"/embeddings":       opEmbeddings,
}

// storedBatch is a batch. Changed only under its store's lock.
type storedBatch struct {
	obj          batchObject // the fields that do not change
	created      time.Time
	step         time.Duration
	lines        []batchLine
	failed       bool // validation failed: no line to run
	cancelledAt  time.Time
	output       *storedFile // nil when no line succeeded
	errors       *storedFile // nil when no line failed
	materialized bool        // output and error files are in the file store
}

// batchLine is the outcome of one input line.
type batchLine struct {
	ok   bool
	line []byte // the JSONL line of the output or error file
}

// batchObject is the Batch object of the API.
type batchObject struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Endpoint         string            `json:"endpoint"`
	Errors           *batchErrors      `json:"errors"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	OutputFileID     *string           `json:"output_file_id"`
	ErrorFileID      *string           `json:"error_file_id"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     *int64            `json:"in_progress_at"`
	ExpiresAt        int64             `json:"expires_at"`
	FinalizingAt     *int64            `json:"finalizing_at"`
	CompletedAt      *int64            `json:"completed_at"`
	FailedAt         *int64            `json:"failed_at"`
	ExpiredAt        *int64            `json:"expired_at"`
	CancellingAt     *int64            `json:"cancelling_at"`
	CancelledAt      *int64            `json:"cancelled_at"`
	RequestCounts    batchCounts       `json:"request_counts"`
	Metadata         map[string]string `json:"metadata"`
}

type batchErrors struct {
	Object string       `json:"object"`
	Data   []batchError `json:"data"`
}

type batchError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int    `json:"line"`
}

type batchCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

func unixp(t time.Time) *int64 {
	u := t.Unix()
	return &u
}

// view is the batch at now; the first view after completion puts the
// output and error files in files. Requires the batch store's lock.
func (b *storedBatch) view(now time.Time, files *store[*storedFile]) batchObject {
	o := b.obj
	inProgress := b.created.Add(b.step)
	done := inProgress.Add(time.Duration(len(b.lines)) * b.step)
	at := now
	if !b.cancelledAt.IsZero() && b.cancelledAt.Before(at) {
		at = b.cancelledAt
	}
	switch {
	case at.Before(inProgress):
		o.Status = "validating"
		if !b.cancelledAt.IsZero() {
			o.Status = "cancelled"
			o.CancellingAt, o.CancelledAt = unixp(b.cancelledAt), unixp(b.cancelledAt)
		}
		return o
	case b.failed:
		o.Status, o.FailedAt = "failed", unixp(inProgress)
		return o
	}
	o.InProgressAt = unixp(inProgress)
	o.RequestCounts.Total = len(b.lines)
	for i, l := range b.lines {
		if at.Before(inProgress.Add(time.Duration(i+1) * b.step)) {
			break
		}
		if l.ok {
			o.RequestCounts.Completed++
		} else {
			o.RequestCounts.Failed++
		}
	}
	switch {
	case !b.cancelledAt.IsZero():
		o.Status = "cancelled"
		o.CancellingAt, o.CancelledAt = unixp(b.cancelledAt), unixp(b.cancelledAt)
	case at.Before(done):
		o.Status = "in_progress"
	default:
		o.Status = "completed"
		o.FinalizingAt, o.CompletedAt = unixp(done), unixp(done)
		if b.output != nil {
			o.OutputFileID = &b.output.obj.ID
		}
		if b.errors != nil {
			o.ErrorFileID = &b.errors.obj.ID
		}
		if !b.materialized {
			b.materialized = true
			for _, f := range []*storedFile{b.output, b.errors} {
				if f != nil {
					f.obj.CreatedAt = done.Unix()
					files.put(f.obj.ID, f, int64(len(f.data)))
				}
			}
		}
	}
	return o
}

// batchBody is a batch create request.
type batchBody struct {
	InputFileID      string            `json:"input_file_id"`
	Endpoint         string            `json:"endpoint"`
	CompletionWindow string            `json:"completion_window"`
	Metadata         map[string]string `json:"metadata"`
}

// batchInputLine is one line of a batch input file.
type batchInputLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

func invalidParam(param, msg string) apiError {
	return openAIErr(http.StatusBadRequest, msg, strp("invalid_request_error"), strp(param), nil)
}

func (d *deployment) createBatch(w http.ResponseWriter, _ *http.Request, c *call, f Fault, _ string) outcome {
	var b batchBody
	if err := json.Unmarshal(c.body, &b); err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, fmt.Sprintf("could not parse the JSON body of your request: %v", err)))
		return outcomeRejected
	}
	endpoint := strings.TrimPrefix(b.Endpoint, "/v1")
	op, known := batchEndpoints[endpoint]
	switch {
	case b.InputFileID == "":
		d.writeError(w, invalidParam("input_file_id", "Missing required parameter: 'input_file_id'."))
		return outcomeRejected
	case !known:
		d.writeError(w, invalidParam("endpoint", fmt.Sprintf("Invalid value for 'endpoint': %q. Supported values are: '/v1/chat/completions', '/v1/completions' and '/v1/embeddings'.", b.Endpoint)))
		return outcomeRejected
	case b.CompletionWindow != "24h":
		d.writeError(w, invalidParam("completion_window", fmt.Sprintf("Invalid value for 'completion_window': %q. Supported values are: '24h'.", b.CompletionWindow)))
		return outcomeRejected
	}
	in, ok := d.objects.files.get(b.InputFileID)
	if !ok {
		d.writeError(w, openAIErr(http.StatusNotFound, fmt.Sprintf("No such File object: %s", b.InputFileID), strp("invalid_request_error"), strp("input_file_id"), nil))
		return outcomeRejected
	}
	if in.obj.Purpose != "batch" {
		d.writeError(w, invalidParam("input_file_id", fmt.Sprintf("The input file %s must have purpose 'batch', not '%s'.", b.InputFileID, in.obj.Purpose)))
		return outcomeRejected
	}
	if !d.admit(w, c, f, 0) {
		return outcomeRefused
	}
	sb := &storedBatch{created: c.now, step: max(d.cfg.Latency.Median, BatchStepMin)}
	sb.obj = batchObject{
		ID: d.objectID(c.rng, "batch_", 24, false), Object: "batch", Endpoint: b.Endpoint, InputFileID: b.InputFileID,
		CompletionWindow: "24h", CreatedAt: c.now.Unix(), ExpiresAt: c.now.Add(24 * time.Hour).Unix(), Metadata: b.Metadata,
	}
	var outLines, errLines [][]byte
	var lineErrs []batchError
	for i, raw := range bytes.Split(in.data, []byte("\n")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var l batchInputLine
		if err := json.Unmarshal(raw, &l); err != nil || l.CustomID == "" {
			n := i + 1
			lineErrs = append(lineErrs, batchError{Code: "invalid_json_line", Message: "This line is not parseable as valid JSON.", Line: &n})
			continue
		}
		bl := d.runBatchLine(c, op, endpoint, l)
		sb.lines = append(sb.lines, bl)
		if bl.ok {
			outLines = append(outLines, bl.line)
		} else {
			errLines = append(errLines, bl.line)
		}
	}
	switch {
	case len(lineErrs) > 0:
		sb.failed, sb.lines = true, nil
		sb.obj.Errors = &batchErrors{Object: "list", Data: lineErrs}
	case len(sb.lines) == 0:
		sb.failed = true
		sb.obj.Errors = &batchErrors{Object: "list", Data: []batchError{{Code: "empty_file", Message: "The batch input file is empty."}}}
	}
	if len(outLines) > 0 {
		sb.output = d.newFile(c, "batch_output.jsonl", "batch_output", append(bytes.Join(outLines, []byte("\n")), '\n'), 0)
	}
	if len(errLines) > 0 {
		sb.errors = d.newFile(c, "batch_errors.jsonl", "batch_output", append(bytes.Join(errLines, []byte("\n")), '\n'), 0)
	}
	var view batchObject
	d.objects.batches.put(sb.obj.ID, sb, 0)
	d.objects.batches.update(sb.obj.ID, func(b *storedBatch) { view = b.view(c.now, d.objects.files) })
	if err := writeJSON(w, http.StatusOK, view); err != nil {
		return outcomeAbandoned
	}
	return outcomeOK
}

// batchOutputLine is a line of a batch's output or error file.
type batchOutputLine struct {
	ID       string         `json:"id"`
	CustomID string         `json:"custom_id"`
	Response *batchResponse `json:"response"`
	Error    any            `json:"error"`
}

type batchResponse struct {
	StatusCode int    `json:"status_code"`
	RequestID  string `json:"request_id"`
	Body       any    `json:"body"`
}

// runBatchLine answers one input line as the sim's responder would: the
// body parsed for op, its model checked against the deployment, its url
// against the batch's endpoint.
func (d *deployment) runBatchLine(c *call, op operation, endpoint string, l batchInputLine) batchLine {
	out := batchOutputLine{ID: "batch_req_" + randomHex(c.rng, 32), CustomID: l.CustomID}
	resp := &batchResponse{StatusCode: http.StatusOK, RequestID: randomHex(c.rng, 32)}
	out.Response = resp
	fail := func(e apiError) batchLine {
		resp.StatusCode, resp.Body = e.status, e.body
		return batchLine{ok: false, line: mustJSON(out)}
	}
	if strings.TrimPrefix(l.URL, "/v1") != endpoint {
		return fail(invalidParam("url", fmt.Sprintf("The url %q does not match the batch's endpoint.", l.URL)))
	}
	req, err := parseRequest(op, l.Body)
	if err != nil {
		return fail(errInvalidRequest(d.cfg.Flavour, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
	}
	if req.model != d.cfg.Deployment {
		return fail(errDeploymentNotFound(d.cfg.Flavour, req.model))
	}
	req.stream = false
	a := d.answer(req, *c, false)
	resp.Body = a.body()
	return batchLine{ok: true, line: mustJSON(out)}
}

// errBatchNotFound answers an id this deployment holds no batch for.
func errBatchNotFound(id string) apiError {
	return openAIErr(http.StatusNotFound, fmt.Sprintf("No batch found with id '%s'.", id), strp("invalid_request_error"), nil, nil)
}

func (d *deployment) getBatch(w http.ResponseWriter, _ *http.Request, c *call, _ Fault, id string) outcome {
	var view batchObject
	if !d.objects.batches.update(id, func(b *storedBatch) { view = b.view(c.now, d.objects.files) }) {
		d.writeError(w, errBatchNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, view)
	return outcomeOK
}

// cancelBatch cancels a batch that has not finished; its counts stop where
// they are and it gets no output file. A finished batch is answered as it
// is.
func (d *deployment) cancelBatch(w http.ResponseWriter, _ *http.Request, c *call, _ Fault, id string) outcome {
	var view batchObject
	if !d.objects.batches.update(id, func(b *storedBatch) {
		view = b.view(c.now, d.objects.files)
		if view.Status == "validating" || view.Status == "in_progress" {
			b.cancelledAt = c.now
			view = b.view(c.now, d.objects.files)
		}
	}) {
		d.writeError(w, errBatchNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, view)
	return outcomeOK
}

func (d *deployment) listBatches(w http.ResponseWriter, r *http.Request, c *call, _ Fault, _ string) outcome {
	limit, _, after, err := listParams(r, "desc")
	if err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
		return outcomeRejected
	}
	views, more := page(d.objects.batches, after, limit, false, func(b *storedBatch) batchObject { return b.view(c.now, d.objects.files) })
	data := make([]any, len(views))
	ids := make([]string, len(views))
	for i, v := range views {
		data[i], ids[i] = v, v.ID
	}
	_ = writeJSON(w, http.StatusOK, newListPage(data, ids, more))
	return outcomeOK
}
