package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
)

// This file lets a deployment lack operations, as an Azure deployment of
// a chat model has no embeddings (Deployment.Operations): a call of one
// it does not serve is answered 404 (or 400 OperationNotSupported) after
// the key check, and counted as rejected.

// operationNames are the names of Deployment.Operations and the sim's
// operations each covers. Reads, lists, deletes and cancels of stored
// objects (opObjects) are always served.
var operationNames = map[string][]operation{
	"chat":         {opChat, opMessages, opGenerate},
	"completions":  {opCompletions},
	"embeddings":   {opEmbeddings},
	"responses":    {opResponses},
	"files":        {opFiles},
	"batches":      {opBatches, opMessageBatch},
	"audio":        {opTranscribe, opSpeech},
	"images":       {opImages},
	"moderations":  {opModerations},
	"count_tokens": {opCountTokens},
	"realtime":     {opRealtime},
}

// OperationNames lists the names Deployment.Operations takes, sorted.
func OperationNames() []string {
	names := make([]string, 0, len(operationNames))
	for n := range operationNames {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// servedOps is what a deployment serves: names (sorted; nil for every
// operation) and the operations they cover. Never modified once made.
type servedOps struct {
	names []string
	ops   map[operation]bool
}

// newServedOps makes the served set of names, which must be valid
// (validateOperations); none means every operation.
func newServedOps(names []string) *servedOps {
	if len(names) == 0 {
		return &servedOps{}
	}
	s := &servedOps{names: slices.Sorted(slices.Values(names)), ops: map[operation]bool{}}
	s.names = slices.Compact(s.names)
	for _, n := range names {
		for _, op := range operationNames[n] {
			s.ops[op] = true
		}
	}
	return s
}

// serves reports whether op is served.
func (s *servedOps) serves(op operation) bool {
	return s.ops == nil || op == opObjects || s.ops[op]
}

// validateOperations checks the names of Deployment.Operations and
// UnsupportedStatus, calling bad for each problem; p is the deployment's
// path ("deployments[1]").
func validateOperations(d Deployment, p string, bad func(path, format string, args ...any)) {
	for i, n := range d.Operations {
		if _, ok := operationNames[n]; !ok {
			bad(fmt.Sprintf("%s.operations[%d]", p, i), "unknown operation %q; one of %v", n, OperationNames())
		}
	}
	if s := d.UnsupportedStatus; s != 0 && s != http.StatusNotFound && s != http.StatusBadRequest {
		bad(p+".unsupported_status", "must be 404 or 400, got %d", s)
	}
}

// lacks reports whether the deployment does not serve op now, and if so
// the answer to give.
func (d *deployment) lacks(op operation) (apiError, bool) {
	if d.served.Load().serves(op) {
		return apiError{}, false
	}
	fl := d.cfg.Flavour
	if d.cfg.UnsupportedStatus == http.StatusBadRequest {
		msg := fmt.Sprintf("The %s operation does not work with the specified model, %s. Please choose different model and try again. You can learn more about which models can be used with each operation here: https://go.microsoft.com/fwlink/?linkid=2197993.",
			op.operationWord(), d.cfg.Model)
		if fl == Azure {
			return azureErr(http.StatusBadRequest, "OperationNotSupported", msg), true
		}
		return errInvalidRequest(fl, msg), true
	}
	return errDeploymentNotFound(fl, d.cfg.Deployment), true
}

// operationWord names op as Azure's OperationNotSupported message does.
func (o operation) operationWord() string {
	for n, ops := range operationNames {
		if slices.Contains(ops, o) {
			return n
		}
	}
	return "requested"
}

// SetOperations sets the operations a deployment serves (names as in
// Deployment.Operations; none means every one), from now on. It returns
// ErrUnknownDeployment or a *FieldError for an unknown name.
func (s *Sim) SetOperations(name string, ops []string) error {
	d, err := s.lookup(name)
	if err != nil {
		return err
	}
	var ferr error
	validateOperations(Deployment{Operations: ops}, "operations", func(path, format string, args ...any) {
		if ferr == nil {
			ferr = &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
		}
	})
	if ferr != nil {
		return ferr
	}
	d.served.Store(newServedOps(ops))
	s.log.Info("sim: operations set", "deployment", name, "operations", ops)
	return nil
}

// Operations reports the operations a deployment serves, sorted; nil
// means every one.
func (s *Sim) Operations(name string) ([]string, error) {
	d, err := s.lookup(name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(d.served.Load().names), nil
}

// operationsBody is the control API's body for a deployment's operations.
type operationsBody struct {
	Operations []string `json:"operations"`
}

// operationRoutes adds the control API's routes for the operations a
// deployment serves:
//
//	GET  /_sim/deployments/{name}/operations   {"operations":[…]} (null: every one)
//	POST /_sim/deployments/{name}/operations   set them, same body; answers the new set
func (s *Sim) operationRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /_sim/deployments/{name}/operations", func(w http.ResponseWriter, r *http.Request) {
		s.writeOperations(w, r.PathValue("name"))
	})
	mux.HandleFunc("POST /_sim/deployments/{name}/operations", func(w http.ResponseWriter, r *http.Request) {
		var b operationsBody
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			controlError(w, http.StatusBadRequest, "bad operations: "+err.Error())
			return
		}
		name := r.PathValue("name")
		if err := s.SetOperations(name, b.Operations); err != nil {
			status := http.StatusBadRequest
			if _, lerr := s.lookup(name); lerr != nil {
				status = http.StatusNotFound
			}
			controlError(w, status, err.Error())
			return
		}
		s.writeOperations(w, name)
	})
}

func (s *Sim) writeOperations(w http.ResponseWriter, name string) {
	ops, err := s.Operations(name)
	if err != nil {
		controlError(w, http.StatusNotFound, err.Error())
		return
	}
	_ = writeJSON(w, http.StatusOK, operationsBody{ops})
}
