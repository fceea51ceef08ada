package sim

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// controlHandler serves the control API under /_sim/:
//
//	GET    /_sim/deployments                  endpoints, in config order
//	GET    /_sim/deployments/{name}/fault     FaultState
//	POST   /_sim/deployments/{name}/fault     set a Fault (JSON body), returns FaultState
//	DELETE /_sim/deployments/{name}/fault     clear it, returns FaultState
//	GET    /_sim/deployments/{name}/operations  the operations it serves
//	POST   /_sim/deployments/{name}/operations  set them ({"operations":[…]})
//	GET    /_sim/stats                        map of name to Stats
//	POST   /_sim/reset                        zero the counters
//	GET    /_sim/metrics                      Prometheus metrics
//
// Errors are {"error":"..."} with 400 (bad fault) or 404 (unknown
// deployment, route or method).
func (s *Sim) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_sim/deployments", func(w http.ResponseWriter, _ *http.Request) {
		_ = writeJSON(w, http.StatusOK, s.Deployments())
	})
	mux.HandleFunc("GET /_sim/deployments/{name}/fault", func(w http.ResponseWriter, r *http.Request) {
		s.writeFaultState(w, r.PathValue("name"))
	})
	mux.HandleFunc("POST /_sim/deployments/{name}/fault", func(w http.ResponseWriter, r *http.Request) {
		var f Fault
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			controlError(w, http.StatusBadRequest, "bad fault: "+err.Error())
			return
		}
		s.setFaultHTTP(w, r.PathValue("name"), f)
	})
	mux.HandleFunc("DELETE /_sim/deployments/{name}/fault", func(w http.ResponseWriter, r *http.Request) {
		s.setFaultHTTP(w, r.PathValue("name"), Fault{})
	})
	s.operationRoutes(mux)
	mux.HandleFunc("GET /_sim/stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.HandleFunc("POST /_sim/reset", func(w http.ResponseWriter, _ *http.Request) {
		s.ResetStats()
		_ = writeJSON(w, http.StatusOK, s.Stats())
	})
	mux.Handle("GET /_sim/metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/_sim/", func(w http.ResponseWriter, r *http.Request) {
		controlError(w, http.StatusNotFound, "no control route "+r.Method+" "+r.URL.Path)
	})
	return mux
}

func (s *Sim) setFaultHTTP(w http.ResponseWriter, name string, f Fault) {
	err := s.SetFault(name, f)
	var fe *FieldError
	switch {
	case errors.Is(err, ErrUnknownDeployment):
		controlError(w, http.StatusNotFound, err.Error())
	case errors.As(err, &fe):
		controlError(w, http.StatusBadRequest, "bad fault: "+fe.Error())
	case err != nil:
		controlError(w, http.StatusBadRequest, err.Error())
	default:
		s.writeFaultState(w, name)
	}
}

func (s *Sim) writeFaultState(w http.ResponseWriter, name string) {
	st, err := s.Fault(name)
	if err != nil {
		controlError(w, http.StatusNotFound, err.Error())
		return
	}
	_ = writeJSON(w, http.StatusOK, st)
}

func controlError(w http.ResponseWriter, status int, msg string) {
	_ = writeJSON(w, status, struct {
		Error string `json:"error"`
	}{msg})
}
