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
}
