// Package datasets defines the benchmark sample that flows through tally;
// its sub-packages load or synthesise samples, one per benchmark family.
package datasets

import "encoding/json"

// Sample is one benchmark item: a prompt and what a prediction is scored
// against.
type Sample struct {
	// Task is the task name the sample belongs to.
	Task string `json:"task"`
	// ID is unique within the task and stable across runs.
	ID string `json:"id"`
	// Prompt is the exact text given to the model.
	Prompt string `json:"prompt"`
	// References is what metrics compare against, in the task's own shape
	// (a list of strings, or DROP's list of answer-span lists).
	References json.RawMessage `json:"references"`
	// Metadata carries task-specific fields (a grid cell, a context size).
	Metadata map[string]any `json:"metadata,omitempty"`
	// ShareKey groups samples that share a prompt prefix (one document,
	// several questions), so a backend can reuse its prefill.
	ShareKey string `json:"share_key,omitempty"`
	// Doc is the data row the sample was rendered from (nil when the
	// loader builds prompts itself), Target the task's target template
	// rendered for it, and Index its position in the task's data
	// (counted from 0; nil: unknown). Reports write them (lm-eval's "doc",
	// "target" and "doc_id"); an lm-eval task's scoring may read Doc (a
	// filter or metric of lm-eval's that takes the document).
	Doc    json.RawMessage `json:"-"`
	Target *string         `json:"-"`
	Index  *int            `json:"-"`
	// Notes are what reports show of the sample beside its data row
	// (DROP's gold answer type): like Doc, they take no part in scoring,
	// so a note added or changed leaves every stored score current.
	Notes map[string]string `json:"-"`
}
