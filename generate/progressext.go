package generate

// TokenProgress is an optional extension of Progress: a Progress that
// also implements it is told the tokens a run will prefill and may
// generate, and each sample's tokens and failure as the sample ends, so it
// can count tokens and estimate the time left from them.
type TokenProgress interface {
	Progress
	// Work announces the prompt tokens to prefill (counted where the plan
	// knows the prompt's ids) and the new-token budget of the samples.
	Work(promptTokens, budget int)
	// SampleEnded reports a finished sample: its id (task/id), prompt
	// tokens prefilled, token budget, tokens generated, and its error text
	// ("" when it did not fail).
	SampleEnded(id string, promptTokens, budget, generated int, errText string)
}

// workTokens sums the prompt tokens known and the token budgets of items.
func workTokens(items []*Item) (prompt, budget int) {
	for _, it := range items {
		prompt += len(it.PromptIDs)
		budget += it.NewTokens
	}
	return prompt, budget
}
