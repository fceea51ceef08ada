package sim

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Config describes a simulation: its deployments, their quotas and latency,
// and faults on a schedule. It is also the YAML schema read by [LoadConfig]
// (`switchover sim -c sim.yaml`). The zero value of every field has a
// documented default; only Deployments must be set.
type Config struct {
	// Seed seeds every deployment's random source (latency draws, error-rate
	// draws, ids and content). 0, the default, picks a random seed at start;
	// [Sim.Seed] reports the one in use so a run can be replayed.
	Seed int64 `yaml:"seed"`

	// Slice is the window over which quotas are enforced, as Azure does over
	// 1 s or 10 s. A deployment with RPM r admits floor(r*Slice/1m) requests
	// per slice (at least 1), and likewise for TPM. Default 10s; must be
	// at most 1m. Shorter slices make bursts trip the quota sooner.
	Slice time.Duration `yaml:"slice"`

	// Listen, if set, is one address (e.g. "127.0.0.1:8080") that serves every
	// deployment without a Listen of its own, each under the path prefix
	// /{name}. "" (the default) gives each deployment its own loopback port.
	Listen string `yaml:"listen"`

	// Control, if set, is an extra address that serves only the control API
	// (/_sim/...). The control API is served on every deployment listener in
	// any case. Default "" (no extra listener).
	Control string `yaml:"control"`

	// Deployments are the simulated deployments. At least one is required;
	// names must be unique.
	Deployments []Deployment `yaml:"deployments"`

	// Schedule lists faults that switch on and off by themselves, at times
	// relative to the start of the sim. Default none.
	Schedule []ScheduledFault `yaml:"schedule"`
}

// Flavour is the wire dialect a deployment speaks.
type Flavour string

// The supported flavours.
const (
	// Azure speaks Azure OpenAI: /openai/deployments/{dep}/... with an
	// api-version query, or /openai/v1/... with the deployment as model;
	// the key in the api-key header.
	Azure Flavour = "azure"
	// OpenAI speaks the OpenAI API: /v1/... with the model in the body and
	// the key as Authorization: Bearer.
	OpenAI Flavour = "openai"
	// Anthropic speaks the Anthropic Messages API: POST /v1/messages with
	// the model in the body, the key in x-api-key and an anthropic-version
	// header.
	Anthropic Flavour = "anthropic"
	// Gemini speaks the Gemini (Generative Language) API v1beta:
	// POST /v1beta/models/{model}:generateContent and
	// :streamGenerateContent?alt=sse, the key in x-goog-api-key or ?key=.
	Gemini Flavour = "gemini"
	// Vertex speaks Google Cloud Vertex AI (sim/vertex.go): Gemini
	// (POST /v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent
	// and :streamGenerateContent?alt=sse) or, for a claude-* Deployment,
	// Claude (publishers/anthropic/models/{model}:rawPredict and
	// :streamRawPredict, anthropic_version in the body); the Key as an
	// OAuth access token (Authorization: Bearer); Vertex's own errors in
	// Google's shape (429 RESOURCE_EXHAUSTED without Retry-After).
	Vertex Flavour = "vertex"
	// Bedrock speaks Amazon Bedrock's runtime API: POST
	// /model/{modelId}/converse, converse-stream, invoke and
	// invoke-with-response-stream, signed with SigV4 (see bedrock.go).
	Bedrock Flavour = "bedrock"
)

// known reports whether f is one of the supported flavours.
func (f Flavour) known() bool {
	return slices.Contains([]Flavour{Azure, OpenAI, Anthropic, Gemini, Vertex, Bedrock}, f)
}

// Deployment is one simulated deployment (one region of one model).
type Deployment struct {
	// Name identifies the deployment in the control API, stats and metrics,
	// and is the path prefix on a shared listener. Required; letters,
	// digits, '.', '_' and '-', starting with a letter or digit.
	Name string `yaml:"name"`

	// Region is reported in the x-ms-region header (azure) and in stats and
	// metrics labels. Default: Name.
	Region string `yaml:"region"`

	// Flavour is "azure" (the default), "openai", "anthropic", "gemini",
	// "vertex" or "bedrock".
	Flavour Flavour `yaml:"flavour"`

	// Project and Location are a vertex deployment's place in its paths.
	// Default "switchover-sim" and "global".
	Project  string `yaml:"project"`
	Location string `yaml:"location"`

	// Deployment is the Azure deployment name in the path, the model name
	// OpenAI and Anthropic clients put in the body, or the Gemini model in
	// the path (/v1beta/models/{Deployment}:generateContent). Default: Name.
	Deployment string `yaml:"deployment"`

	// Model is the model name reported in response bodies (Gemini's
	// modelVersion). Default: for azure "gpt-4o-mini-2024-07-18", for the
	// other flavours the Deployment.
	Model string `yaml:"model"`

	// Key, if set, is the API key clients must send: the api-key header or
	// Authorization: Bearer for azure, Bearer for openai, x-api-key or
	// Bearer for anthropic, x-goog-api-key or the key query parameter for
	// gemini. A
	// missing or wrong key is refused in the flavour's format (401; gemini
	// answers 403 for a missing key and 400 for a wrong one, as Google
	// does). For bedrock it is ACCESS_KEY_ID:SECRET_ACCESS_KEY, and
	// requests must carry a SigV4 signature by that key for Region
	// (403 otherwise, as AWS answers). Default "" (no check).
	Key string `yaml:"key"`

	// Listen, if set, is a fixed address for this deployment's own listener.
	// Default "": a port on the shared Config.Listen if that is set,
	// otherwise a free port on 127.0.0.1.
	Listen string `yaml:"listen"`

	// Latency shapes how long answers take.
	Latency Latency `yaml:"latency"`

	// Quota limits requests and tokens per minute.
	Quota Quota `yaml:"quota"`

	// ContentFilter sets the phrases that trip the simulated content filter.
	ContentFilter ContentFilter `yaml:"content_filter"`

	// Reply shapes generated answers.
	Reply Reply `yaml:"reply"`

	// Operations, if set, lists the operations the deployment serves, as
	// an Azure deployment of a chat model serves no embeddings: chat (chat
	// completions, Anthropic messages, Gemini generateContent),
	// completions, embeddings, responses, files, batches, audio, images,
	// moderations, count_tokens, realtime. A call of another is answered
	// after the key check as a deployment that lacks it is (see
	// UnsupportedStatus). Reads, lists, deletes and cancels of stored
	// objects are always served. Default: every operation.
	// [Sim.SetOperations] changes it at run time.
	Operations []string `yaml:"operations"`

	// UnsupportedStatus is the answer to an operation not in Operations:
	// 404 (the default), the flavour's deployment not found (Azure's
	// DeploymentNotFound), or 400, Azure's OperationNotSupported ("The
	// embeddings operation does not work with the specified model").
	UnsupportedStatus int `yaml:"unsupported_status"`
}

// Latency is a deployment's latency model. Every draw is lognormal: the
// median times exp(Spread*z) with z standard normal from the deployment's
// seeded source. Faults of mode slow multiply the result.
type Latency struct {
	// Median is the median time to a complete non-streamed answer. Default 0
	// (answer at once).
	Median time.Duration `yaml:"median"`

	// Spread is the standard deviation of the natural log of the latency
	// (the lognormal sigma). 0, the default, always gives the median; 0.25
	// is a tight region, 0.6 a noisy one. Must be in [0, 3].
	Spread float64 `yaml:"spread"`

	// FirstToken is the median time before the first event of a stream,
	// drawn with the same Spread. Default: Median.
	FirstToken time.Duration `yaml:"first_token"`

	// PerToken is the fixed gap between streamed content chunks. Default 0.
	// A stream of n tokens lasts about FirstToken + n*PerToken.
	PerToken time.Duration `yaml:"per_token"`
}

// Quota is a deployment's rate limit. Each limit is per minute but enforced
// per Config.Slice; 0 means unlimited.
type Quota struct {
	// RPM is requests per minute. Default 0 (unlimited).
	RPM int `yaml:"rpm"`

	// TPM is tokens per minute, charged with an estimate made before the
	// call: ceil(prompt characters / 4) plus max_completion_tokens, or
	// max_tokens (Gemini's generationConfig.maxOutputTokens), or
	// DefaultMaxTokens. Default 0 (unlimited).
	TPM int `yaml:"tpm"`

	// DefaultMaxTokens stands in for max_tokens in the estimate when a chat,
	// completions or Gemini request sets no completion cap (Anthropic
	// requires max_tokens). Default 16.
	DefaultMaxTokens int `yaml:"default_max_tokens"`
}

// ContentFilter sets the prompt phrases (matched case-insensitively as
// substrings of any message content or prompt) that trip the simulated
// content filter on chat, completions, Anthropic messages and Gemini
// generateContent requests.
type ContentFilter struct {
	// Block gets the request refused: 400 with Azure's content_filter error
	// (ResponsibleAIPolicyViolation), OpenAI's invalid_prompt error or
	// Anthropic's invalid_request_error; Gemini answers 200 with
	// promptFeedback.blockReason SAFETY and no candidates.
	// Default "trigger-content-filter".
	Block string `yaml:"block"`

	// Truncate gets a 200 answer cut short with finish_reason
	// "content_filter" (Anthropic stop_reason "refusal", Gemini
	// finishReason "SAFETY"). Default "trigger-filtered-reply".
	Truncate string `yaml:"truncate"`

	// Disabled turns the filter off. Default false.
	Disabled bool `yaml:"disabled"`
}

// Reply shapes the generated answers. Content is words from a fixed list,
// one word per token, drawn from the deployment's seeded source. A request
// that offers tools, with a user turn last, is answered with a call of one
// of them instead (see docs/sim.md, "Tool calling").
type Reply struct {
	// Tokens is the length of an answer that max_tokens does not cut.
	// Default 20. A request with a smaller max_tokens (or
	// max_completion_tokens, or Gemini's maxOutputTokens) gets that many
	// words and finish_reason "length" (Anthropic stop_reason
	// "max_tokens", Gemini finishReason "MAX_TOKENS").
	Tokens int `yaml:"tokens"`

	// EmbeddingDimensions is the length of embedding vectors when the
	// request does not ask for "dimensions". Default 1536.
	EmbeddingDimensions int `yaml:"embedding_dimensions"`

	// OmitUsage makes the azure and openai flavours report no usage on
	// chat and completions: no usage chunk in a stream even when
	// stream_options.include_usage asks for one, and "usage": null in a
	// plain answer, as some OpenAI-compatible servers and older Azure API
	// versions do. Default false. Anthropic and Gemini answers always
	// carry theirs.
	OmitUsage bool `yaml:"omit_usage"`
}

// Defaults.
const (
	DefaultSlice               = 10 * time.Second
	DefaultMaxTokens           = 16
	DefaultReplyTokens         = 20
	DefaultEmbeddingDimensions = 1536
	DefaultBlockPhrase         = "trigger-content-filter"
	DefaultTruncatePhrase      = "trigger-filtered-reply"
	defaultAzureModel          = "gpt-4o-mini-2024-07-18"
	maxEmbeddingDimensions     = 8192
	maxReplyTokens             = 100000
)

// FieldError is a problem with one field of a [Config]. Path names the
// field the way it is written in YAML, e.g. "deployments[1].quota.rpm".
type FieldError struct {
	Path string
	Line int // line in the YAML file, 0 when unknown
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Path, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// withDefaults returns a copy of c with every default filled in. It does not
// validate.
func (c Config) withDefaults() Config {
	if c.Slice == 0 {
		c.Slice = DefaultSlice
	}
	deps := make([]Deployment, len(c.Deployments))
	for i, d := range c.Deployments {
		deps[i] = d.withDefaults()
	}
	c.Deployments = deps
	sched := make([]ScheduledFault, len(c.Schedule))
	for i, s := range c.Schedule {
		s.Fault = s.Fault.withDefaults()
		sched[i] = s
	}
	c.Schedule = sched
	return c
}

func (d Deployment) withDefaults() Deployment {
	if d.Region == "" {
		d.Region = d.Name
	}
	if d.Flavour == "" {
		d.Flavour = Azure
	}
	if d.Deployment == "" {
		d.Deployment = d.Name
	}
	if d.Flavour == Vertex {
		if d.Project == "" {
			d.Project = "switchover-sim"
		}
		if d.Location == "" {
			d.Location = "global"
		}
	}
	if d.Model == "" {
		if d.Flavour == Azure {
			d.Model = defaultAzureModel
		} else {
			d.Model = d.Deployment
		}
	}
	if d.Latency.FirstToken == 0 {
		d.Latency.FirstToken = d.Latency.Median
	}
	if d.Quota.DefaultMaxTokens == 0 {
		d.Quota.DefaultMaxTokens = DefaultMaxTokens
	}
	if d.ContentFilter.Block == "" {
		d.ContentFilter.Block = DefaultBlockPhrase
	}
	if d.ContentFilter.Truncate == "" {
		d.ContentFilter.Truncate = DefaultTruncatePhrase
	}
	if d.Reply.Tokens == 0 {
		d.Reply.Tokens = DefaultReplyTokens
	}
	if d.Reply.EmbeddingDimensions == 0 {
		d.Reply.EmbeddingDimensions = DefaultEmbeddingDimensions
	}
	return d
}

// Validate reports every problem in c, joined into one error of
// [*FieldError]s, or nil. Fields left at zero take their defaults and are
// not reported.
func (c Config) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Slice < 0 || c.Slice > time.Minute {
		bad("slice", "must be between 0 and 1m, got %s", c.Slice)
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			bad("listen", "not a host:port address: %v", err)
		}
	}
	if c.Control != "" {
		if _, _, err := net.SplitHostPort(c.Control); err != nil {
			bad("control", "not a host:port address: %v", err)
		}
	}
	if len(c.Deployments) == 0 {
		bad("deployments", "at least one deployment is required")
	}
	names := map[string]int{}
	addrs := map[string]string{}
	for i, d := range c.Deployments {
		p := fmt.Sprintf("deployments[%d]", i)
		switch {
		case d.Name == "":
			bad(p+".name", "required")
		case !nameRE.MatchString(d.Name):
			bad(p+".name", "%q: use letters, digits, '.', '_' and '-', starting with a letter or digit", d.Name)
		default:
			if j, dup := names[d.Name]; dup {
				bad(p+".name", "%q already used by deployments[%d]", d.Name, j)
			}
			names[d.Name] = i
		}
		if d.Flavour != "" && !d.Flavour.known() {
			bad(p+".flavour", "must be %q, %q, %q, %q, %q or %q, got %q", Azure, OpenAI, Anthropic, Gemini, Vertex, Bedrock, d.Flavour)
		}
		if dep := d.Deployment; d.Flavour == Vertex {
			d.Deployment = strings.Replace(dep, "@", "-", 1) // Vertex's Claude versions: claude-sonnet-4-5@20250929
		}
		if d.Deployment != "" && !nameRE.MatchString(bedrockModelName(d.Flavour, d.Deployment)) {
			bad(p+".deployment", "%q: use letters, digits, '.', '_' and '-'", d.Deployment)
		}
		if d.Listen != "" {
			if _, port, err := net.SplitHostPort(d.Listen); err != nil {
				bad(p+".listen", "not a host:port address: %v", err)
			} else if port != "0" && port != "" {
				if other, dup := addrs[d.Listen]; dup {
					bad(p+".listen", "%s already used by %s", d.Listen, other)
				}
				addrs[d.Listen] = p
			}
		}
		l := d.Latency
		if l.Median < 0 {
			bad(p+".latency.median", "must not be negative")
		}
		if l.FirstToken < 0 {
			bad(p+".latency.first_token", "must not be negative")
		}
		if l.PerToken < 0 {
			bad(p+".latency.per_token", "must not be negative")
		}
		if l.Spread < 0 || l.Spread > 3 {
			bad(p+".latency.spread", "must be between 0 and 3, got %g", l.Spread)
		}
		if d.Quota.RPM < 0 {
			bad(p+".quota.rpm", "must not be negative")
		}
		if d.Quota.TPM < 0 {
			bad(p+".quota.tpm", "must not be negative")
		}
		if d.Quota.DefaultMaxTokens < 0 {
			bad(p+".quota.default_max_tokens", "must not be negative")
		}
		if d.Reply.Tokens < 0 || d.Reply.Tokens > maxReplyTokens {
			bad(p+".reply.tokens", "must be between 1 and %d", maxReplyTokens)
		}
		if d.Reply.EmbeddingDimensions < 0 || d.Reply.EmbeddingDimensions > maxEmbeddingDimensions {
			bad(p+".reply.embedding_dimensions", "must be between 1 and %d", maxEmbeddingDimensions)
		}
		validateOperations(d, p, bad)
	}
	for i, s := range c.Schedule {
		p := fmt.Sprintf("schedule[%d]", i)
		if _, ok := names[s.Deployment]; !ok {
			bad(p+".deployment", "no deployment named %q", s.Deployment)
		}
		if s.From < 0 {
			bad(p+".from", "must not be negative")
		}
		if s.To != 0 && s.To <= s.From {
			bad(p+".to", "must be after from (%s), or 0 for no end", s.From)
		}
		if err := s.Fault.validate(); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				bad(p+".fault."+fe.Path, "%s", fe.Msg)
			} else {
				bad(p+".fault", "%v", err)
			}
		}
	}
	return errors.Join(errs...)
}
