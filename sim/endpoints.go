package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"
)

// This file routes the endpoints beyond chat (the Responses API, files,
// batches, audio, images, moderations, count_tokens, realtime) and gives
// them the same counting, fault, key and quota machinery as chat.

// Operations beyond chat; azureName names them in Azure's 429 message.
const (
	opResponses    operation = iota + 100 // Responses API create
	opObjects                             // reads, lists, deletes and cancels of stored objects
	opFiles                               // file upload
	opBatches                             // batch create (openai, azure)
	opMessageBatch                        // message batch create (anthropic)
	opTranscribe                          // audio transcriptions and translations
	opSpeech                              // audio speech
	opImages                              // image generations, edits, variations
	opModerations                         // moderations (openai)
	opCountTokens                         // anthropic count_tokens
	opRealtime                            // realtime websocket connect
)

// extraName is azureName for the operations of this file.
func (o operation) extraName() (string, bool) {
	switch o {
	case opResponses:
		return "Responses_Create", true
	case opObjects:
		return "Objects_Get", true
	case opFiles:
		return "Files_Upload", true
	case opBatches:
		return "Batch_Create", true
	case opMessageBatch:
		return "MessageBatches_Create", true
	case opTranscribe:
		return "Transcriptions_Create", true
	case opSpeech:
		return "Speech_Create", true
	case opImages:
		return "ImageGenerations_Create", true
	case opModerations:
		return "Moderations_Create", true
	case opCountTokens:
		return "CountTokens", true
	case opRealtime:
		return "Realtime_Connect", true
	}
	return "", false
}

// endpointFunc answers one gated call of an endpoint beyond chat. id is the
// {id} segment of the path, "" when the pattern has none.
type endpointFunc func(w http.ResponseWriter, r *http.Request, c *call, f Fault, id string) outcome

// extraRoute is one endpoint: a method, a path pattern relative to the
// flavour's base ("responses/{id}/cancel"), the operation it counts as and
// where it is served.
type extraRoute struct {
	method  string
	pattern string
	op      operation
	// azure: where the api-version form lives: "resource" for
	// /openai/{pattern}?api-version=..., "deployment" for
	// /openai/deployments/{dep}/{pattern}?api-version=..., "" for neither
	// (the route is then only on /openai/v1/ and the openai flavour).
	azure string
	// flavours that serve it (openai, azure or anthropic).
	flavours []Flavour
	fn       func(d *deployment) endpointFunc
}

var (
	oaAz = []Flavour{OpenAI, Azure}
	oa   = []Flavour{OpenAI}
	an   = []Flavour{Anthropic}
)

// extraRoutes lists every endpoint beyond chat. Realtime is not here: it
// upgrades to a WebSocket (see realtime.go).
var extraRoutes = []extraRoute{
	{"POST", "responses", opResponses, "resource", oaAz, func(d *deployment) endpointFunc { return d.createResponse }},
	{"POST", "responses/compact", opResponses, "resource", oaAz, func(d *deployment) endpointFunc { return d.compactResponse }},
	{"GET", "responses/{id}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.getResponse }},
	{"DELETE", "responses/{id}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.deleteResponse }},
	{"POST", "responses/{id}/cancel", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.cancelResponse }},
	{"GET", "responses/{id}/input_items", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.listInputItems }},
	{"GET", "chat/completions", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.listChats }},
	{"GET", "chat/completions/{id}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.getChat }},
	{"POST", "chat/completions/{id}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.updateChat }},
	{"DELETE", "chat/completions/{id}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.deleteChat }},
	{"GET", "chat/completions/{id}/messages", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.chatMessages }},
	{"POST", "conversations", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.createConversation }},
	{"GET", "conversations/{id}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.getConversation }},
	{"POST", "conversations/{id}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.updateConversation }},
	{"DELETE", "conversations/{id}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.deleteConversation }},
	{"POST", "conversations/{id}/items", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.addConversationItems }},
	{"GET", "conversations/{id}/items", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.listConversationItems }},
	{"GET", "conversations/{id}/items/{item}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.getConversationItem }},
	{"DELETE", "conversations/{id}/items/{item}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.deleteConversationItem }},
	{"POST", "files", opFiles, "resource", oaAz, func(d *deployment) endpointFunc { return d.uploadFile }},
	{"GET", "files", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.listFiles }},
	{"GET", "files/{id}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.getFile }},
	{"DELETE", "files/{id}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.deleteFile }},
	{"GET", "files/{id}/content", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.fileContent }},
	{"POST", "batches", opBatches, "resource", oaAz, func(d *deployment) endpointFunc { return d.createBatch }},
	{"GET", "batches", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.listBatches }},
	{"GET", "batches/{id}", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.getBatch }},
	{"POST", "batches/{id}/cancel", opObjects, "resource", oaAz, func(d *deployment) endpointFunc { return d.cancelBatch }},
	{"POST", "audio/transcriptions", opTranscribe, "deployment", oaAz, func(d *deployment) endpointFunc { return d.transcribe("transcribe") }},
	{"POST", "audio/translations", opTranscribe, "deployment", oaAz, func(d *deployment) endpointFunc { return d.transcribe("translate") }},
	{"POST", "audio/speech", opSpeech, "deployment", oaAz, func(d *deployment) endpointFunc { return d.speech }},
	{"POST", "images/generations", opImages, "deployment", oaAz, func(d *deployment) endpointFunc { return d.generateImages }},
	{"POST", "images/edits", opImages, "deployment", oaAz, func(d *deployment) endpointFunc { return d.editImages("edit") }},
	{"POST", "images/variations", opImages, "deployment", oaAz, func(d *deployment) endpointFunc { return d.editImages("variation") }},
	{"POST", "moderations", opModerations, "", oa, func(d *deployment) endpointFunc { return d.moderate }},
	{"POST", "messages/count_tokens", opCountTokens, "", an, func(d *deployment) endpointFunc { return d.countTokens }},
	{"POST", "messages/batches", opMessageBatch, "", an, func(d *deployment) endpointFunc { return d.createMessageBatch }},
	{"GET", "messages/batches", opObjects, "", an, func(d *deployment) endpointFunc { return d.listMessageBatches }},
	{"GET", "messages/batches/{id}", opObjects, "", an, func(d *deployment) endpointFunc { return d.getMessageBatch }},
	{"GET", "messages/batches/{id}/results", opObjects, "", an, func(d *deployment) endpointFunc { return d.messageBatchResults }},
	{"POST", "messages/batches/{id}/cancel", opObjects, "", an, func(d *deployment) endpointFunc { return d.cancelMessageBatch }},
	{"DELETE", "messages/batches/{id}", opObjects, "", an, func(d *deployment) endpointFunc { return d.deleteMessageBatch }},
}

// matchPattern matches path against pattern segment by segment; {id}
// matches one non-empty segment, which it returns, {item} one it does
// not (the handler reads it from the path).
func matchPattern(pattern, path string) (id string, ok bool) {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return "", false
	}
	for i, p := range ps {
		switch {
		case p == "{id}" || p == "{item}":
			if xs[i] == "" {
				return "", false
			}
			if p == "{id}" {
				id = xs[i]
			}
		case p != xs[i]:
			return "", false
		}
	}
	return id, true
}

// azureForm is where an azure request came in: "v1" (/openai/v1/...),
// "resource" (/openai/{path}?api-version=...) or "deployment"
// (/openai/deployments/{dep}/{path}?api-version=...).
type azureForm string

// routeExtra serves rest (the path below the flavour's base: /v1/ for
// openai and anthropic, the forms of azureForm for azure) if an endpoint
// beyond chat matches it, and reports whether one did. A known path with
// another method is a 405. form is "" for openai and anthropic.
func (d *deployment) routeExtra(w http.ResponseWriter, r *http.Request, dr draws, rest string, form azureForm, apiVersion string) bool {
	fl := d.cfg.Flavour
	pathKnown := false
	for _, er := range extraRoutes {
		if !servedBy(er.flavours, fl) {
			continue
		}
		if fl == Azure && form != "v1" && string(form) != er.azure {
			continue
		}
		id, ok := matchPattern(er.pattern, rest)
		if !ok {
			continue
		}
		pathKnown = true
		if r.Method != er.method {
			continue
		}
		rt := route{op: er.op, apiVersion: apiVersion, modelInBody: form != "deployment"}
		d.serveEndpoint(w, r, dr, rt, id, er.fn(d))
		return true
	}
	if pathKnown {
		d.writeError(w, errMethodNotAllowed(fl, r))
		return true
	}
	return false
}

// extraPathKnown reports whether rest is the path of an endpoint beyond
// chat for flavour fl in azure form form.
func extraPathKnown(fl Flavour, form azureForm, rest string) bool {
	for _, er := range extraRoutes {
		if servedBy(er.flavours, fl) && (fl != Azure || form == "v1" || string(form) == er.azure) {
			if _, ok := matchPattern(er.pattern, rest); ok {
				return true
			}
		}
	}
	return false
}

func servedBy(fls []Flavour, fl Flavour) bool {
	for _, f := range fls {
		if f == fl {
			return true
		}
	}
	return false
}

// serveEndpoint is serve for the endpoints beyond chat: it counts the call,
// applies the fault in force and the key check (gate), and hands the rest
// to fn, which checks its body and the quota (admit) and answers.
func (d *deployment) serveEndpoint(w http.ResponseWriter, r *http.Request, dr draws, rt route, id string, fn endpointFunc) {
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	now := d.sim.clock.Now()
	d.counters.begin()
	t := &tally{d: d, op: rt.op}
	defer t.settle(outcomeError) // when a fault aborts the connection
	c := &call{route: rt, body: body, readErr: readErr, now: now, draws: dr, tally: t}
	f := d.faultAt(now)
	o, done := d.gate(w, r, *c, f)
	switch {
	case done:
	case readErr != nil:
		d.writeError(w, errInvalidRequest(d.cfg.Flavour, "could not read the request body: "+readErr.Error()))
		o = outcomeRejected
	default:
		o = fn(w, r, c, f, id)
	}
	t.settle(o)
	if o == outcomeAbandoned {
		panic(http.ErrAbortHandler)
	}
}

// admit charges cost estimated tokens (and one request) to the quota under
// fault f, sets the rate-limit headers, and on refusal writes the
// flavour's 429 with its retry headers and returns false. Reads, lists,
// deletes and cancels of stored objects do not call it: only calls that
// make something (answers, uploads, batches) count against RPM and TPM.
func (d *deployment) admit(w http.ResponseWriter, c *call, f Fault, cost int64) bool {
	lim := d.limits(f)
	fl := d.cfg.Flavour
	a := d.quota.admit(c.now, lim, cost)
	setRateHeaders(w.Header(), fl, a, lim, c.now)
	if !a.ok {
		setRetryHeaders(w.Header(), fl, a.untilNext)
		d.writeError(w, errRateLimited(fl, c.op, c.apiVersion, d.cfg.Model, a, lim, d.sim.cfg.Slice))
		return false
	}
	d.counters.charge(cost)
	return true
}

// checkModel checks a model named in the body (or a form field) when the
// route takes the model there: it must name the deployment. It writes the
// error and returns false otherwise.
func (d *deployment) checkModel(w http.ResponseWriter, c *call, model string) bool {
	if !c.modelInBody {
		return true
	}
	if model == "" {
		d.writeError(w, errMissingModel(d.cfg.Flavour))
		return false
	}
	if model != d.cfg.Deployment {
		d.writeError(w, errDeploymentNotFound(d.cfg.Flavour, model))
		return false
	}
	return true
}

// wait holds the answer back for dur on the sim's waiter; false when the
// client went away first.
func (d *deployment) wait(r *http.Request, dur time.Duration) bool {
	return d.sim.waiter.Wait(r.Context(), dur) == nil
}

// plan is the latency of a call under fault f.
func (d *deployment) plan(c *call, f Fault) timing {
	factor := 0.0
	if f.Mode == FaultSlow {
		factor = f.Factor
	}
	return planTiming(d.cfg.Latency, c.z, factor)
}

// errNotMultipart marks a body that is not multipart/form-data.
var errNotMultipart = errors.New("expected a multipart/form-data body")

// parseMultipart parses the call's body as the multipart/form-data the
// request's Content-Type announces.
func parseMultipart(r *http.Request, body []byte) (*multipart.Form, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, errNotMultipart
	}
	form, err := multipart.NewReader(bytes.NewReader(body), params["boundary"]).ReadForm(maxBody)
	if err != nil {
		return nil, fmt.Errorf("could not parse the multipart body: %w", err)
	}
	return form, nil
}

// formFile returns the name and bytes of the form's file field.
func formFile(form *multipart.Form, field string) (name string, data []byte, ok bool) {
	fhs := form.File[field]
	if len(fhs) == 0 {
		return "", nil, false
	}
	f, err := fhs[0].Open()
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	data, err = io.ReadAll(f)
	if err != nil {
		return "", nil, false
	}
	return fhs[0].Filename, data, true
}

// formValue returns the first value of a form field, "" when absent.
func formValue(form *multipart.Form, field string) string {
	if v := form.Value[field]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// idTag is the per-deployment part of the ids of stored objects: 8 hex
// digits from the deployment's name, right after the id's prefix, so ids
// are unique across the deployments of one sim and [Sim.ObjectOwner] can
// tell which deployment made one.
func idTag(name string) string {
	return fmt.Sprintf("%08x", uint32(hash64("objects:"+name)))
}

// objectID is prefix, the deployment's tag and n random characters of
// alphabet hex (or idAlphabet when alnum).
func (d *deployment) objectID(rng *rand.Rand, prefix string, n int, alnum bool) string {
	if alnum {
		return randomID(rng, prefix+d.tag, n)
	}
	return prefix + d.tag + randomHex(rng, n)
}

// objectPrefixes are the prefixes of the ids of stored objects.
var objectPrefixes = []string{"resp_", "msg_", "fc_", "file-", "batch_", "msgbatch_01", "sess_", "conv_"}

// ObjectOwner reports which deployment made a stored object (a response, a
// file, a batch, a message batch, a realtime session): the name of the
// deployment whose tag follows the id's prefix. It is safe for concurrent
// use.
func (s *Sim) ObjectOwner(id string) (name string, ok bool) {
	for _, p := range objectPrefixes {
		rest, found := strings.CutPrefix(id, p)
		if !found {
			continue
		}
		for _, d := range s.deps {
			if strings.HasPrefix(rest, d.tag) {
				return d.cfg.Name, true
			}
		}
	}
	return "", false
}
