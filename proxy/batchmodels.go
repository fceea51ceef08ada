package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/switchover-gw/switchover/route"
	"github.com/switchover-gw/switchover/tenant"
)

// A batch runs the models its requests name on the backend that holds
// it, past the pools that would check them: a key limited to some pools
// or models may make a batch only of models it may use there. OpenAI's
// batches name them in the input file's lines (body.model), read from
// the file's backend before the batch is made; Anthropic's message
// batches in the body (requests[].params.model).

// maxBatchInput bounds how much of a batch's input file is read to find
// its models: OpenAI's own limit on a batch's file. A larger file is
// refused for a limited key.
const maxBatchInput = 200 << 20

// checkBatchModels is the check of a batch made by a key limited to
// pools or models: path and body are the call's, untagged; owner is the
// backend its ids name. A model the key may not use there gets 403
// model_not_allowed.
func checkBatchModels(x *exchange, owner, path string, body []byte) error {
	p := x.lg.who
	if p == nil || !p.Restricted() || x.r.Method != http.MethodPost {
		return nil
	}
	var models []string
	var err error
	switch path {
	case "batches":
		models, err = inputFileModels(x, owner, body)
	case "messages/batches":
		models, err = messageBatchModels(body)
	default:
		return nil
	}
	if err != nil {
		return err
	}
	backends := []string{owner}
	if owner == "" {
		backends = backends[:0]
		for _, m := range x.pool.Members {
			backends = append(backends, m.Backend.Name)
		}
	}
	for _, m := range models {
		if !modelAllowed(x.rt, p, m, backends) {
			return keyRefusal(tenant.NotAllowed(p, "model", m))
		}
	}
	return nil
}

// modelAllowed reports whether p may run model on every one of backends:
// for each, a pool p may use by one of its names has the backend as a
// member, and model is that name or the member's deployment.
func modelAllowed(rt *Routes, p *tenant.Principal, model string, backends []string) bool {
	for _, b := range backends {
		ok := false
		for name, pool := range rt.Pools {
			m := pool.Member(b)
			if m != nil && p.Allows(pool.Name, name) && (model == name || model == m.Deployment) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return len(backends) > 0
}

// messageBatchModels are the models of an Anthropic message batch's
// requests.
func messageBatchModels(body []byte) ([]string, error) {
	var b struct {
		Requests []struct {
			Params struct {
				Model string `json:"model"`
			} `json:"params"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, requestError(http.StatusBadRequest, "invalid_json", "switchover: the message batch is not JSON: "+err.Error())
	}
	models := make([]string, 0, len(b.Requests))
	for _, r := range b.Requests {
		models = append(models, r.Params.Model)
	}
	return models, nil
}

// inputFileModels are the models named by the lines of the input file of
// an OpenAI batch (body, with its input_file_id untagged), read from the
// file's backend owner.
func inputFileModels(x *exchange, owner string, body []byte) ([]string, error) {
	var b struct {
		InputFileID string `json:"input_file_id"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.InputFileID == "" || owner == "" {
		return nil, nil // the backend refuses a batch without an input file
	}
	req := &route.Request{Op: objectsOp, Header: http.Header{}, Owner: owner, Method: http.MethodGet,
		Path: "files/" + url.PathEscape(b.InputFileID) + "/content"}
	resp, _, err := x.pool.Do(x.r.Context(), req)
	if err != nil {
		return nil, x.callError(x.r.Context(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, serverError(http.StatusBadGateway, "batch_input_unreadable",
			fmt.Sprintf("switchover: the batch's input file could not be read to check its models (its backend answered %d)", resp.StatusCode))
	}
	return lineModels(io.LimitReader(resp.Body, maxBatchInput+1))
}

// maxBatchLine bounds one line of a batch's input file as it is checked:
// a line is held whole only up to it, so a hostile file of one huge line
// costs no more.
const maxBatchLine = 16 << 20

// lineModels are the distinct body.model of the JSON lines of r.
func lineModels(r io.Reader) ([]string, error) {
	seen := map[string]bool{}
	var models []string
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxBatchLine {
			return nil, badBatchInput()
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, badBatchInput()
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var l struct {
				Body struct {
					Model string `json:"model"`
				} `json:"body"`
			}
			if json.Unmarshal(line, &l) != nil {
				return nil, badBatchInput()
			}
			if m := l.Body.Model; !seen[m] {
				seen[m] = true
				models = append(models, m)
			}
		}
		if err != nil {
			return models, nil
		}
		line = line[:0]
	}
}

func badBatchInput() error {
	return requestError(http.StatusBadRequest, "invalid_batch_input",
		"switchover: the batch's input file is not JSON lines (at most 16 MiB a line, 200 MiB in all), so its models cannot be checked for this key")
}
