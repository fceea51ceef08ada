package sim

import (
	"fmt"
	"net/http"
	"strings"
)

// This file serves the Files API: POST files (multipart: file, purpose),
// GET files, GET files/{id}, GET files/{id}/content and DELETE files/{id},
// kept in memory per deployment within MaxStoredFiles and
// MaxStoredFileBytes (each upload is also bounded by the 8 MiB body
// limit).

// storedFile is an uploaded file or a batch's output. It does not change
// once stored.
type storedFile struct {
	obj  fileObject
	data []byte
}

// fileObject is the File object of the API.
type fileObject struct {
	ID            string  `json:"id"`
	Object        string  `json:"object"`
	Bytes         int     `json:"bytes"`
	CreatedAt     int64   `json:"created_at"`
	ExpiresAt     *int64  `json:"expires_at"`
	Filename      string  `json:"filename"`
	Purpose       string  `json:"purpose"`
	Status        string  `json:"status"`
	StatusDetails *string `json:"status_details"`
}

// filePurposes are the purposes an upload may name.
var filePurposes = map[string]bool{
	"assistants": true, "batch": true, "fine-tune": true, "vision": true, "user_data": true, "evals": true,
}

// errFileNotFound answers an id this deployment holds no file for.
func errFileNotFound(id string) apiError {
	return openAIErr(http.StatusNotFound, fmt.Sprintf("No such File object: %s", id), strp("invalid_request_error"), strp("id"), nil)
}

func (d *deployment) uploadFile(w http.ResponseWriter, r *http.Request, c *call, f Fault, _ string) outcome {
	fl := d.cfg.Flavour
	form, err := parseMultipart(r, c.body)
	if err != nil {
		d.writeError(w, errInvalidRequest(fl, err.Error()))
		return outcomeRejected
	}
	name, data, ok := formFile(form, "file")
	if !ok {
		d.writeError(w, openAIErr(http.StatusBadRequest, "Missing required parameter: 'file'.", strp("invalid_request_error"), strp("file"), nil))
		return outcomeRejected
	}
	purpose := formValue(form, "purpose")
	if !filePurposes[purpose] {
		d.writeError(w, openAIErr(http.StatusBadRequest, fmt.Sprintf("Invalid value for 'purpose': %q. Supported values are: 'assistants', 'batch', 'fine-tune', 'vision', 'user_data' and 'evals'.", purpose),
			strp("invalid_request_error"), strp("purpose"), nil))
		return outcomeRejected
	}
	if !d.admit(w, c, f, 0) {
		return outcomeRefused
	}
	sf := d.newFile(c, name, purpose, data, c.now.Unix())
	if !d.objects.files.put(sf.obj.ID, sf, int64(len(data))) {
		d.writeError(w, errInvalidRequest(fl, "the file is larger than the simulator keeps"))
		return outcomeRejected
	}
	if err := writeJSON(w, http.StatusOK, sf.obj); err != nil {
		return outcomeAbandoned
	}
	return outcomeOK
}

// newFile builds a stored file with a fresh id; it is not stored yet.
func (d *deployment) newFile(c *call, name, purpose string, data []byte, created int64) *storedFile {
	return &storedFile{data: data, obj: fileObject{
		ID: d.objectID(c.rng, "file-", 24, false), Object: "file", Bytes: len(data), CreatedAt: created,
		Filename: name, Purpose: purpose, Status: "processed",
	}}
}

func (d *deployment) listFiles(w http.ResponseWriter, r *http.Request, _ *call, _ Fault, _ string) outcome {
	limit, asc, after, err := listParams(r, "desc")
	if err != nil {
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, strings.TrimPrefix(err.Error(), errBadRequest.Error()+": ")))
		return outcomeRejected
	}
	purpose := r.URL.Query().Get("purpose")
	var ids []string
	var data []any
	more := false
	// Filter by purpose page by page: the store pages by position.
	for cursor := after; ; {
		items, m := page(d.objects.files, cursor, limit, asc, func(f *storedFile) fileObject { return f.obj })
		for _, fo := range items {
			cursor = fo.ID
			if purpose != "" && fo.Purpose != purpose {
				continue
			}
			if len(data) == limit {
				more = true
				break
			}
			data, ids = append(data, fo), append(ids, fo.ID)
		}
		if more || !m || len(items) == 0 {
			break
		}
	}
	_ = writeJSON(w, http.StatusOK, newListPage(data, ids, more))
	return outcomeOK
}

func (d *deployment) getFile(w http.ResponseWriter, _ *http.Request, _ *call, _ Fault, id string) outcome {
	sf, ok := d.objects.files.get(id)
	if !ok {
		d.writeError(w, errFileNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, sf.obj)
	return outcomeOK
}

func (d *deployment) deleteFile(w http.ResponseWriter, _ *http.Request, _ *call, _ Fault, id string) outcome {
	if !d.objects.files.remove(id) {
		d.writeError(w, errFileNotFound(id))
		return outcomeRejected
	}
	_ = writeJSON(w, http.StatusOK, deleted{ID: id, Object: "file", Deleted: true})
	return outcomeOK
}

// fileContent answers a file's bytes as application/octet-stream
// (application/jsonl for batch files).
func (d *deployment) fileContent(w http.ResponseWriter, _ *http.Request, _ *call, _ Fault, id string) outcome {
	sf, ok := d.objects.files.get(id)
	if !ok {
		d.writeError(w, errFileNotFound(id))
		return outcomeRejected
	}
	ct := "application/octet-stream"
	if strings.HasPrefix(sf.obj.Purpose, "batch") {
		ct = "application/jsonl"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(sf.data); err != nil {
		return outcomeAbandoned
	}
	return outcomeOK
}
