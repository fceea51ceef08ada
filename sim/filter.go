package sim

import "strings"

// filterVerdict is what the simulated content filter decided for a prompt.
type filterVerdict int

const (
	filterPass     filterVerdict = iota
	filterBlock                  // 400 content_filter before any answer
	filterTruncate               // 200 with finish_reason "content_filter"
)

// check matches the prompt against the phrases, case-insensitively.
func (c ContentFilter) check(prompt string) filterVerdict {
	if c.Disabled || prompt == "" {
		return filterPass
	}
	p := strings.ToLower(prompt)
	if c.Block != "" && strings.Contains(p, strings.ToLower(c.Block)) {
		return filterBlock
	}
	if c.Truncate != "" && strings.Contains(p, strings.ToLower(c.Truncate)) {
		return filterTruncate
	}
	return filterPass
}

// severityResult is one severity-rated category of Azure's content filter.
type severityResult struct {
	Filtered bool   `json:"filtered"`
	Severity string `json:"severity"`
}

// detectedResult is one detection category of Azure's content filter.
type detectedResult struct {
	Filtered bool `json:"filtered"`
	Detected bool `json:"detected"`
}

var safe = severityResult{Severity: "safe"}

// promptFilterResults is Azure's content_filter_results for a prompt.
type promptFilterResults struct {
	Hate      severityResult `json:"hate"`
	Jailbreak detectedResult `json:"jailbreak"`
	SelfHarm  severityResult `json:"self_harm"`
	Sexual    severityResult `json:"sexual"`
	Violence  severityResult `json:"violence"`
}

func safePromptResults() promptFilterResults {
	return promptFilterResults{Hate: safe, SelfHarm: safe, Sexual: safe, Violence: safe}
}

func blockedPromptResults() promptFilterResults {
	r := safePromptResults()
	r.Hate = severityResult{Filtered: true, Severity: "high"}
	return r
}

// promptFilterEntry is one element of Azure's prompt_filter_results.
type promptFilterEntry struct {
	PromptIndex          int                 `json:"prompt_index"`
	ContentFilterResults promptFilterResults `json:"content_filter_results"`
}

func promptFilterList() []promptFilterEntry {
	return []promptFilterEntry{{PromptIndex: 0, ContentFilterResults: safePromptResults()}}
}

// choiceFilterResults is Azure's content_filter_results for a completion.
type choiceFilterResults struct {
	Hate                  severityResult `json:"hate"`
	ProtectedMaterialCode detectedResult `json:"protected_material_code"`
	ProtectedMaterialText detectedResult `json:"protected_material_text"`
	SelfHarm              severityResult `json:"self_harm"`
	Sexual                severityResult `json:"sexual"`
	Violence              severityResult `json:"violence"`
}

// completionResults returns the per-choice results: all safe, or violence
// filtered when the answer was cut by the filter.
func completionResults(filtered bool) choiceFilterResults {
	r := choiceFilterResults{Hate: safe, SelfHarm: safe, Sexual: safe, Violence: safe}
	if filtered {
		r.Violence = severityResult{Filtered: true, Severity: "medium"}
	}
	return r
}
