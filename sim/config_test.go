package sim

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDeploymentDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   Deployment
		want Deployment
	}{
		{
			name: "azure zero value",
			in:   Deployment{Name: "a"},
			want: Deployment{Name: "a", Region: "a", Flavour: Azure, Deployment: "a", Model: defaultAzureModel,
				Quota:         Quota{DefaultMaxTokens: DefaultMaxTokens},
				ContentFilter: ContentFilter{Block: DefaultBlockPhrase, Truncate: DefaultTruncatePhrase},
				Reply:         Reply{Tokens: DefaultReplyTokens, EmbeddingDimensions: DefaultEmbeddingDimensions}},
		},
		{
			name: "openai model is the deployment; first token is the median",
			in:   Deployment{Name: "b", Flavour: OpenAI, Deployment: "gpt-4o", Latency: Latency{Median: time.Second}},
			want: Deployment{Name: "b", Region: "b", Flavour: OpenAI, Deployment: "gpt-4o", Model: "gpt-4o",
				Latency:       Latency{Median: time.Second, FirstToken: time.Second},
				Quota:         Quota{DefaultMaxTokens: DefaultMaxTokens},
				ContentFilter: ContentFilter{Block: DefaultBlockPhrase, Truncate: DefaultTruncatePhrase},
				Reply:         Reply{Tokens: DefaultReplyTokens, EmbeddingDimensions: DefaultEmbeddingDimensions}},
		},
		{
			name: "anthropic and gemini models are the deployment",
			in:   Deployment{Name: "c", Flavour: Anthropic, Deployment: "claude-x"},
			want: Deployment{Name: "c", Region: "c", Flavour: Anthropic, Deployment: "claude-x", Model: "claude-x",
				Quota:         Quota{DefaultMaxTokens: DefaultMaxTokens},
				ContentFilter: ContentFilter{Block: DefaultBlockPhrase, Truncate: DefaultTruncatePhrase},
				Reply:         Reply{Tokens: DefaultReplyTokens, EmbeddingDimensions: DefaultEmbeddingDimensions}},
		},
		{
			name: "gemini",
			in:   Deployment{Name: "g", Flavour: Gemini},
			want: Deployment{Name: "g", Region: "g", Flavour: Gemini, Deployment: "g", Model: "g",
				Quota:         Quota{DefaultMaxTokens: DefaultMaxTokens},
				ContentFilter: ContentFilter{Block: DefaultBlockPhrase, Truncate: DefaultTruncatePhrase},
				Reply:         Reply{Tokens: DefaultReplyTokens, EmbeddingDimensions: DefaultEmbeddingDimensions}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.withDefaults(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("withDefaults =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
	if got := (Config{}).withDefaults().Slice; got != DefaultSlice {
		t.Errorf("default slice %s", got)
	}
}

func TestConfigValidate(t *testing.T) {
	valid := func() Config { return Config{Deployments: []Deployment{{Name: "a"}}} }
	tests := []struct {
		name      string
		mod       func(*Config)
		wantPaths []string
	}{
		{"minimal", func(*Config) {}, nil},
		{"anthropic and gemini flavours", func(c *Config) {
			c.Deployments[0].Flavour = Anthropic
			c.Deployments = append(c.Deployments, Deployment{Name: "g", Flavour: Gemini, Deployment: "gemini-2.5-flash"})
		}, nil},
		{"no deployments", func(c *Config) { c.Deployments = nil }, []string{"deployments"}},
		{"slice over a minute", func(c *Config) { c.Slice = 2 * time.Minute }, []string{"slice"}},
		{"negative slice", func(c *Config) { c.Slice = -time.Second }, []string{"slice"}},
		{"bad listen", func(c *Config) { c.Listen = "nope" }, []string{"listen"}},
		{"bad control", func(c *Config) { c.Control = "nope" }, []string{"control"}},
		{"name with slash", func(c *Config) { c.Deployments[0].Name = "a/b" }, []string{"deployments[0].name"}},
		{"name starting with underscore", func(c *Config) { c.Deployments[0].Name = "_sim" }, []string{"deployments[0].name"}},
		{"duplicate names", func(c *Config) { c.Deployments = append(c.Deployments, Deployment{Name: "a"}) }, []string{"deployments[1].name"}},
		{"bad flavour", func(c *Config) { c.Deployments[0].Flavour = "watsonx" }, []string{"deployments[0].flavour"}},
		{"negative quota", func(c *Config) { c.Deployments[0].Quota = Quota{RPM: -1, TPM: -1} }, []string{"deployments[0].quota.rpm", "deployments[0].quota.tpm"}},
		{"spread too wide", func(c *Config) { c.Deployments[0].Latency.Spread = 5 }, []string{"deployments[0].latency.spread"}},
		{"negative latency", func(c *Config) { c.Deployments[0].Latency.Median = -1 }, []string{"deployments[0].latency.median"}},
		{"same fixed address twice", func(c *Config) {
			c.Deployments[0].Listen = "127.0.0.1:9999"
			c.Deployments = append(c.Deployments, Deployment{Name: "b", Listen: "127.0.0.1:9999"})
		}, []string{"deployments[1].listen"}},
		{"schedule for a ghost", func(c *Config) { c.Schedule = []ScheduledFault{{Deployment: "ghost"}} }, []string{"schedule[0].deployment"}},
		{"schedule ends before it starts", func(c *Config) {
			c.Schedule = []ScheduledFault{{Deployment: "a", From: time.Minute, To: time.Second}}
		}, []string{"schedule[0].to"}},
		{"schedule with a bad fault", func(c *Config) {
			c.Schedule = []ScheduledFault{{Deployment: "a", Fault: Fault{Mode: FaultErrorRate, Rate: 2}}}
		}, []string{"schedule[0].fault.rate"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mod(&c)
			err := c.Validate()
			var paths []string
			for _, e := range unjoin(err) {
				var fe *FieldError
				if errors.As(e, &fe) {
					paths = append(paths, fe.Path)
				}
			}
			if err == nil {
				paths = nil
			}
			if strings.Join(paths, ",") != strings.Join(tc.wantPaths, ",") {
				t.Errorf("Validate = %v\nerror paths %v, want %v", err, paths, tc.wantPaths)
			}
		})
	}
}
