package config

import (
	"strings"
	"testing"
)

func TestBedrockBadConfigNamesLines(t *testing.T) {
	_, err := Load("testdata/bedrock.bad.yaml")
	if err == nil {
		t.Fatal("bedrock.bad.yaml loaded")
	}
	want := []string{
		`bedrock.bad.yaml:2: backends[0].region: a bedrock backend needs its AWS region (such as us-east-1)`,
		`bedrock.bad.yaml:7: backends[1].aws: give access_key_id and secret_access_key together`,
		`bedrock.bad.yaml:11: backends[2].aws.api: unknown api "chat": use converse or invoke`,
		`bedrock.bad.yaml:15: backends[3].api_key: bedrock backends sign with AWS credentials`,
		`bedrock.bad.yaml:19: backends[4].aws: only for bedrock backends`,
		`bedrock.bad.yaml:23: backends[5].aws.profile: give a profile or static keys, not both`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), "sk-not-aws") {
		t.Error("the error shows a secret")
	}
}

func TestBedrockDefaults(t *testing.T) {

	c, err := Load("testdata/bedrock.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	us, eu, keys := c.Backends[0], c.Backends[1], c.Backends[2]
	if us.URL != "https://bedrock-runtime.us-east-1.amazonaws.com" || us.AWS == nil || us.AWS.API != "converse" {
		t.Errorf("us: url %q, aws %+v; want the regional endpoint and converse", us.URL, us.AWS)
	}
	if eu.URL != "https://bedrock-runtime.eu-central-1.amazonaws.com" || eu.AWS.API != "invoke" || eu.AWS.Profile != "prod" {
		t.Errorf("eu: url %q, aws %+v", eu.URL, eu.AWS)
	}
	if keys.URL != "http://127.0.0.1:9999" || keys.AWS.SecretAccessKey.Value() != "not-a-real-secret" {
		t.Errorf("keys: url %q, secret not read", keys.URL)
	}
	if m := c.Pools[0].Members[0].Model; m != "us.anthropic.claude-sonnet-4-5-20250929-v1:0" {
		t.Errorf("member model %q", m)
	}
}
