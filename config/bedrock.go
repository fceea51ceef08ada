package config

import "strings"

// AWS is a bedrock backend's credentials and API. Its zero value uses
// the AWS SDK's default credential chain (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared config and
// credentials files, web identity/IRSA, the container and instance
// roles) and the Converse API.
type AWS struct {
	// AccessKeyID and SecretAccessKey are static credentials, with
	// SessionToken for temporary ones; give both or neither. Prefer the
	// chain (an instance or pod role): keys in a file do not rotate. The
	// secret and token are never logged.
	AccessKeyID     string `yaml:"access_key_id"`
	SecretAccessKey Secret `yaml:"secret_access_key"`
	SessionToken    Secret `yaml:"session_token"`
	// Profile is the shared config profile the chain reads. Default
	// AWS_PROFILE, else "default".
	Profile string `yaml:"profile"`
	// API is "converse" (default: the Converse and ConverseStream APIs,
	// for any Bedrock chat model) or "invoke" (InvokeModel and
	// InvokeModelWithResponseStream with Anthropic's native body: Claude
	// models only, with every Messages feature Bedrock takes).
	API string `yaml:"api"`
}

// applyBedrockDefaults gives a bedrock backend its regional endpoint and
// the Converse API.
func (b *Backend) applyBedrockDefaults() {
	if b.URL == "" && b.Region != "" && !strings.ContainsAny(b.Region, "/:@?#") {
		b.URL = "https://bedrock-runtime." + b.Region + ".amazonaws.com"
	}
	if b.AWS == nil {
		b.AWS = &AWS{}
	}
	setDefault(&b.AWS.API, "converse")
}

// validateBedrock checks a bedrock backend's region and aws, and that
// no other type has aws.
func (b Backend) validateBedrock(ps *Problems, p string) {
	if b.Type != TypeBedrock {
		if b.AWS != nil {
			ps.add(p+".aws", "only for bedrock backends")
		}
		return
	}
	if b.Region == "" {
		ps.add(p+".region", "a bedrock backend needs its AWS region (such as us-east-1)")
	} else if strings.ContainsAny(b.Region, "/:@?# ") {
		ps.add(p+".region", "%q is not an AWS region", b.Region)
	}
	if b.APIKey != "" {
		ps.add(p+".api_key", "bedrock backends sign with AWS credentials: use aws (or the default credential chain)")
	}
	a := b.AWS
	if a == nil {
		return
	}
	if (a.AccessKeyID == "") != (a.SecretAccessKey == "") {
		ps.add(p+".aws", "give access_key_id and secret_access_key together")
	}
	if a.SessionToken != "" && a.AccessKeyID == "" {
		ps.add(p+".aws.session_token", "a session token goes with access_key_id and secret_access_key")
	}
	if a.Profile != "" && a.AccessKeyID != "" {
		ps.add(p+".aws.profile", "give a profile or static keys, not both")
	}
	switch a.API {
	case "converse", "invoke":
	default:
		ps.add(p+".aws.api", "unknown api %q: use converse or invoke", a.API)
	}
}
